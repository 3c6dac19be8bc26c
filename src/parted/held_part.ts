/**
 * A part held apart from any file of the user's: in memory or in a temporary file, written by a
 * part download (positional writes at the part's offset in the artifact's file) and read back
 * once the part has verified.
 *
 * @module
 */
import type { PartSink } from "./part_download.ts";
import type { PartFile } from "./fs_spill.ts";

/**
 * One part's bytes, held while they are fetched and verified, then read out.
 *
 * @example A part held in memory
 * ```ts
 * import { MemoryPart } from "./held_part.ts";
 * const held = new MemoryPart(10, 3);
 * await held.writeAt(new TextEncoder().encode("abc"), 10);
 * for await (const chunk of held.chunks(1, 2)) console.log(new TextDecoder().decode(chunk)); // "bc"
 * ```
 */
export interface HeldPart extends PartSink {
  /**
   * The bytes `[from, from + length)` of the part (offsets within the part), in order. With
   * `buffers`, a part read back from disk comes in views of them (each valid until the next
   * chunk is asked for) instead of new arrays.
   */
  chunks(
    from: number,
    length: number,
    buffers?: readonly [Uint8Array, Uint8Array],
  ): AsyncIterable<Uint8Array>;
  /** Lets the bytes go (a file is deleted). */
  release(): Promise<void>;
}

/**
 * A part in memory: one array of the part's size.
 *
 * @example
 * ```ts
 * import { MemoryPart } from "./held_part.ts";
 * console.log(new MemoryPart(0, 4).bytes.byteLength); // 4
 * ```
 */
export class MemoryPart implements HeldPart {
  readonly bytes: Uint8Array;
  readonly #offset: number;
  #onRelease: (() => void) | undefined;

  /**
   * A part of `size` bytes at `offset` in the file, in a new array or in `memory` (a buffer of
   * that size lent for the part); `onRelease` is called once, on release.
   */
  constructor(offset: number, size: number, memory?: ArrayBuffer, onRelease?: () => void) {
    this.#offset = offset;
    this.bytes = new Uint8Array(memory ?? new ArrayBuffer(size), 0, size);
    this.#onRelease = onRelease;
  }

  /** Copies `bytes` to `position` (a position in the file). */
  writeAt(bytes: Uint8Array, position: number): Promise<void> {
    this.bytes.set(bytes, position - this.#offset);
    return Promise.resolve();
  }

  /**
   * The bytes asked for, as a view of the part's array (no copy): a verified part is not written
   * again, so the caller may keep it unless the array was lent and goes back on release.
   */
  async *chunks(from: number, length: number): AsyncGenerator<Uint8Array> {
    if (length > 0) yield this.bytes.subarray(from, from + length);
  }

  /** Nothing to release but the array, which the collector takes. */
  release(): Promise<void> {
    const onRelease = this.#onRelease;
    this.#onRelease = undefined;
    onRelease?.();
    return Promise.resolve();
  }
}

/**
 * A part in a temporary file.
 *
 * @example
 * ```ts ignore
 * const held = new FilePart(part.offset, await spill.file(`part-${part.index}`));
 * ```
 */
export class FilePart implements HeldPart {
  readonly file: PartFile;
  readonly #offset: number;

  /** The part at `offset` in the artifact's file, held in `file`. */
  constructor(offset: number, file: PartFile) {
    this.#offset = offset;
    this.file = file;
  }

  /** Writes `bytes` at `position` (a position in the artifact's file). */
  writeAt(bytes: Uint8Array, position: number): Promise<void> {
    return this.file.writeAt(bytes, position - this.#offset);
  }

  /** Reads the bytes asked for into `buffers` by turns, or else in new 1 MiB arrays. */
  chunks(
    from: number,
    length: number,
    buffers?: readonly [Uint8Array, Uint8Array],
  ): AsyncIterable<Uint8Array> {
    return buffers === undefined
      ? this.file.chunks(from, length)
      : this.file.chunksInto(from, length, buffers);
  }

  /** Deletes the file. */
  release(): Promise<void> {
    return this.file.remove();
  }
}
