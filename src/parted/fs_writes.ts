/**
 * Positional writes to one open file, each written whole.
 *
 * On Deno a `node:fs` handle's writes run on the JavaScript thread, so while the kernel copies a
 * megabyte into the page cache that thread neither reads the network nor hashes. A runtime file
 * handle (`Deno.FsFile`) for the same file writes on the runtime's blocking threads instead; its
 * writes follow a seek, which is why they are one at a time. Elsewhere (Node) the `node:fs`
 * handle's writes already run on libuv's threads and are positional.
 *
 * Each such write costs a hand-over to another thread: it pays for the 1 MiB writes of a part
 * written in place while the next bytes arrive, not for the temporary part files, whose writes
 * (256 KiB for a pull into a stream) their writer awaits one by one.
 *
 * @module
 */
import type { FileHandle } from "node:fs/promises";

/** The calls of a runtime file handle these writes use (`Deno.FsFile` has them). */
export interface SeekableFile {
  /** Moves the file's offset to `offset` bytes from its start (`whence` 0). */
  seekSync(offset: number, whence: 0): number;
  /** Writes from the offset; resolves with the bytes written. */
  write(bytes: Uint8Array): Promise<number>;
}

/**
 * Writes at positions of one file: through `seekable` when given (a runtime handle of the same
 * open file, see the module note), else through `handle`. A failed write rejects with the
 * runtime's own error (its `code` names the reason); the writes after it still run.
 *
 * @example Two writes at their positions
 * ```ts
 * import { open } from "node:fs/promises";
 * import { FileWrites } from "./fs_writes.ts";
 * const path = await Deno.makeTempFile();
 * const handle = await open(path, "r+");
 * const seekable = await Deno.open(path, { read: true, write: true });
 * const writes = new FileWrites(handle, seekable);
 * await Promise.all([
 *   writes.writeAt(new TextEncoder().encode("world"), 6),
 *   writes.writeAt(new TextEncoder().encode("hello "), 0),
 * ]);
 * seekable.close();
 * await handle.close();
 * console.log(await Deno.readTextFile(path)); // "hello world"
 * await Deno.remove(path);
 * ```
 */
export class FileWrites {
  readonly #handle: FileHandle;
  readonly #seekable: SeekableFile | undefined;
  /** The last write through `seekable`; it never rejects (its caller sees its failure). */
  #last: Promise<void> = Promise.resolve();
  /** Every write still running; none rejects. */
  readonly #running = new Set<Promise<void>>();

  constructor(handle: FileHandle, seekable?: SeekableFile) {
    this.#handle = handle;
    this.#seekable = seekable;
  }

  /**
   * Writes all of `bytes` at `position`; through `seekable`, after every write asked for before
   * it (positional `node:fs` writes need no turn).
   */
  writeAt(bytes: Uint8Array, position: number): Promise<void> {
    const seekable = this.#seekable;
    const run = seekable === undefined
      ? writeAllAt(this.#handle, bytes, position)
      : this.#last.then(() => seekAndWriteAll(seekable, bytes, position));
    const settled = run.catch(() => {});
    if (seekable !== undefined) this.#last = settled;
    this.#running.add(settled);
    settled.then(() => this.#running.delete(settled));
    return run;
  }

  /** Resolves once no write asked for so far is still running. */
  async settled(): Promise<void> {
    await Promise.all(this.#running);
  }
}

async function seekAndWriteAll(file: SeekableFile, bytes: Uint8Array, position: number) {
  file.seekSync(position, 0);
  for (let done = 0; done < bytes.byteLength;) {
    const written = await file.write(bytes.subarray(done));
    if (written <= 0) throw new Error("write made no progress");
    done += written;
  }
}

/**
 * Writes all of `bytes` at `position` through a `node:fs` handle (a positional write may take
 * fewer bytes than asked).
 *
 * @example Filling a file's second half
 * ```ts
 * import { open } from "node:fs/promises";
 * import { writeAllAt } from "./fs_writes.ts";
 * const path = await Deno.makeTempFile();
 * const handle = await open(path, "r+");
 * await writeAllAt(handle, new TextEncoder().encode("cd"), 2);
 * await handle.close();
 * console.log((await Deno.readFile(path)).length); // 4
 * await Deno.remove(path);
 * ```
 */
export async function writeAllAt(
  handle: FileHandle,
  bytes: Uint8Array,
  position: number,
): Promise<void> {
  for (let done = 0; done < bytes.byteLength;) {
    const { bytesWritten } = await handle.write(
      bytes,
      done,
      bytes.byteLength - done,
      position + done,
    );
    if (bytesWritten <= 0) throw new Error("write made no progress");
    done += bytesWritten;
  }
}
