/**
 * The verified parts a random-access reader keeps for later reads, and where each waits: in
 * memory while the parts held there fit the memory window, else in a file of a temporary
 * directory (a part may be larger than memory allows: 512 MiB by default, several GiB by
 * choice), or in the user's cache directory when one is given.
 *
 * A part is let go (its memory counted back, its temporary file deleted, its cache file's
 * handle closed) only once it has left the cache and no read uses it: a read that began before
 * it left reads to its end, and a paused read holds its part's bytes within the window.
 *
 * @module
 */
import { type PartFile, SpillDirectory } from "./fs_spill.ts";

/**
 * One kept part: its bytes in memory, or an open file (temporary, or in the cache directory,
 * read through the handle opened when it was kept, so another reader's trim cannot take it
 * away mid-read).
 *
 * @example A part in memory, used by one read while it leaves the cache
 * ```ts
 * import { KeptPart } from "./reader_cache.ts";
 * let letGo = false;
 * const part = new KeptPart({ bytes: new Uint8Array(4) }, () => letGo = true);
 * part.use();
 * part.evict();
 * console.log(letGo); // false: a read uses it
 * part.done();
 * console.log(letGo); // true
 * ```
 */
export class KeptPart {
  readonly held: { readonly bytes: Uint8Array } | { readonly file: PartFile };
  readonly #letGo: () => void;
  #reads = 0;
  #evicted = false;

  /** A part held as `held`; `letGo` runs once, when it has left the cache and is unread. */
  constructor(held: KeptPart["held"], letGo: () => void) {
    this.held = held;
    this.#letGo = letGo;
  }

  /** A read of the part begins (while the part is in the cache). */
  use(): void {
    if (this.#evicted) throw new TypeError("a part that left the cache cannot be read");
    this.#reads++;
  }

  /** A read that {@linkcode KeptPart.use}d the part ended. */
  done(): void {
    this.#reads--;
    if (this.#reads === 0 && this.#evicted) this.#letGo();
  }

  /** The part left the cache: it is let go now, or when its last read ends. */
  evict(): void {
    if (this.#evicted) return;
    this.#evicted = true;
    if (this.#reads === 0) this.#letGo();
  }
}

/**
 * The most recently used `limit` parts of one reader, by part index. Parts in memory (kept,
 * being fetched, or still read after they left) hold at most `memoryWindowBytes` together; a
 * part that does not fit goes to a temporary directory, made at the first such part and
 * removed on close (or at the process's exit).
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
  readonly #parts = new Map<number, KeptPart>();
  /** Bytes of the parts in memory, kept, being fetched, or still read. */
  #inMemory = 0;
  #spill: Promise<SpillDirectory> | undefined;
  /** Temporary files made, for names never used twice (a read may still have an older one). */
  #spilled = 0;
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
  get(index: number): KeptPart | undefined {
    const part = this.#parts.get(index);
    if (part !== undefined) {
      this.#parts.delete(index);
      this.#parts.set(index, part);
    }
    return part;
  }

  /**
   * Whether a part of `size` bytes may be fetched into memory; if so, its bytes count against
   * the window until it is let go (or {@linkcode ReaderCache.releaseMemory}).
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

  /** A part fetched into memory (after {@linkcode ReaderCache.reserveMemory}), to keep. */
  inMemory(bytes: Uint8Array): KeptPart {
    return new KeptPart({ bytes }, () => this.releaseMemory(bytes.byteLength));
  }

  /** A part fetched into a temporary file ({@linkcode ReaderCache.spillFile}), to keep. */
  inTemporaryFile(file: PartFile): KeptPart {
    return new KeptPart({ file }, () => void file.remove());
  }

  /** A part in the user's cache directory, open as `file`, to keep (the file stays). */
  inCacheDirectory(file: PartFile): KeptPart {
    return new KeptPart({ file }, () => void file.close());
  }

  /** A new temporary file for the part at `index` (a name not used before by this reader). */
  async spillFile(index: number): Promise<PartFile> {
    if (this.#closed) throw new TypeError("ArtifactReader: the reader is closed");
    this.#spill ??= SpillDirectory.create(this.#spillParent);
    return await (await this.#spill).file(`part-${index}-${this.#spilled++}`);
  }

  /** Keeps `part` as the most recently used; the least recently used beyond the limit go. */
  add(index: number, part: KeptPart): void {
    if (this.#closed) return part.evict();
    this.#parts.get(index)?.evict();
    this.#parts.delete(index);
    this.#parts.set(index, part);
    for (const [oldest, kept] of this.#parts) {
      if (this.#parts.size <= this.#limit) break;
      this.#parts.delete(oldest);
      kept.evict();
    }
  }

  /** Takes `part` out of the cache if it is still the one kept at `index` (it went bad). */
  drop(index: number, part: KeptPart): void {
    if (this.#parts.get(index) !== part) return;
    this.#parts.delete(index);
    part.evict();
  }

  /** Lets every part go (once its reads end) and removes the temporary directory. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const part of this.#parts.values()) part.evict();
    this.#parts.clear();
    await (await this.#spill?.catch(() => undefined))?.remove();
  }
}
