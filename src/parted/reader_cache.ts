/**
 * The verified parts a random-access reader keeps for later reads, and where each waits: in
 * memory while the parts held there fit the memory window, else in a file of a temporary
 * directory (a part may be larger than memory allows: 512 MiB by default, several GiB by
 * choice), or in the user's cache directory when one is given.
 *
 * @module
 */
import { type PartFile, SpillDirectory } from "./fs_spill.ts";

/**
 * A part fetched into a temporary file. Its file goes once it has left the cache and no read
 * is using it (a read that began before it left finishes). A read takes the part while it is
 * in the cache.
 *
 * @example
 * ```ts
 * import { SpillDirectory } from "./fs_spill.ts";
 * import { SpilledPart } from "./reader_cache.ts";
 * const dir = await SpillDirectory.create();
 * const part = new SpilledPart(await dir.file("part-0"));
 * part.use();
 * part.evict(); // the file stays: a read is using it
 * part.done(); // the file goes
 * await dir.remove();
 * ```
 */
export class SpilledPart {
  readonly file: PartFile;
  #reads = 0;
  #evicted = false;

  constructor(file: PartFile) {
    this.file = file;
  }

  /** A read of the part begins (while the part is in the cache). */
  use(): void {
    if (this.#evicted) throw new TypeError("a part that left the cache has no file to read");
    this.#reads++;
  }

  /** A read that {@linkcode SpilledPart.use}d the part ended. */
  done(): void {
    this.#reads--;
    if (this.#reads === 0 && this.#evicted) void this.file.remove();
  }

  /** The part left the cache: its file goes now, or when its last read ends. */
  evict(): void {
    this.#evicted = true;
    if (this.#reads === 0) void this.file.remove();
  }
}

/** A verified part: in memory, in the user's cache directory, or in a temporary file. */
export type CachedPart = { bytes: Uint8Array } | { path: string } | { spilled: SpilledPart };

/**
 * The most recently used `limit` parts of one reader, by part index. Parts in memory (kept, or
 * being fetched) hold at most `memoryWindowBytes` together; a part that does not fit goes to a
 * temporary directory, made at the first such part and removed on close (or at the process's
 * exit).
 *
 * @example A part too large for the memory window waits in a file
 * ```ts
 * import { ReaderCache } from "./reader_cache.ts";
 * const cache = new ReaderCache(2, 8);
 * console.log(cache.reserveMemory(4), cache.reserveMemory(6)); // true false
 * await cache.close();
 * ```
 */
export class ReaderCache {
  readonly #limit: number;
  readonly #memoryWindow: number;
  readonly #spillParent: string | undefined;
  /** Least recently used first. */
  readonly #parts = new Map<number, CachedPart>();
  /** Bytes of the parts in memory, kept or being fetched. */
  #inMemory = 0;
  #spill: Promise<SpillDirectory> | undefined;
  #closed = false;

  /**
   * Keeps at most `limit` parts, with at most `memoryWindowBytes` of them in memory; the
   * temporary directory is made in `spillParent` (default: the system's temporary directory).
   */
  constructor(limit: number, memoryWindowBytes: number, spillParent?: string) {
    this.#limit = limit;
    this.#memoryWindow = memoryWindowBytes;
    this.#spillParent = spillParent;
  }

  /** The part at `index`, now the most recently used; undefined when not kept. */
  get(index: number): CachedPart | undefined {
    const part = this.#parts.get(index);
    if (part !== undefined) {
      this.#parts.delete(index);
      this.#parts.set(index, part);
    }
    return part;
  }

  /**
   * Whether a part of `size` bytes may be fetched into memory; if so, its bytes count against
   * the window until it leaves the cache (or {@linkcode ReaderCache.releaseMemory}).
   */
  reserveMemory(size: number): boolean {
    if (this.#inMemory + size > this.#memoryWindow) return false;
    this.#inMemory += size;
    return true;
  }

  /** A part fetched into memory failed: its bytes no longer count. */
  releaseMemory(size: number): void {
    this.#inMemory -= size;
  }

  /** A new temporary file for the part at `index`. */
  async spillFile(index: number): Promise<PartFile> {
    if (this.#closed) throw new TypeError("ArtifactReader: the reader is closed");
    this.#spill ??= SpillDirectory.create(this.#spillParent);
    return await (await this.#spill).file(`part-${index}`);
  }

  /** Keeps `part` as the most recently used; the least recently used beyond the limit go. */
  add(index: number, part: CachedPart): void {
    if (this.#closed) return this.#let(part);
    this.#parts.set(index, part);
    for (const [oldest, kept] of this.#parts) {
      if (this.#parts.size <= this.#limit) break;
      this.#parts.delete(oldest);
      this.#let(kept);
    }
  }

  /** Lets every part go and removes the temporary directory. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const part of this.#parts.values()) this.#let(part);
    this.#parts.clear();
    await (await this.#spill?.catch(() => undefined))?.remove();
  }

  /** A part leaves the cache. */
  #let(part: CachedPart): void {
    if ("bytes" in part) this.#inMemory -= part.bytes.byteLength;
    if ("spilled" in part) part.spilled.evict();
  }
}
