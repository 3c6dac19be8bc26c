/**
 * The whole-file digest check of a pull: one sequential hash of the partial file read back from
 * disk, in file order, as parts are marked placed (a pull marks them once all are on disk).
 *
 * @module
 */
import { open } from "node:fs/promises";
import { LocalFileError } from "../errors/kinds.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { BufferPool } from "../hashing/buffer_pool.ts";
import { HASH_READ_BYTES } from "../hashing/hash_range.ts";
import type { RunningHash, Sha256Threads } from "../hashing/sha256_threads.ts";
import type { PartDescriptor } from "./manifest.ts";

/** Reads hashed ahead of the hash at most (bounds memory to a few MiB). */
const BUFFERS = 4;

/**
 * Hashes the partial file from byte 0 as its contiguous verified prefix grows: `partPlaced`
 * tells that a part is complete on disk; whenever the next part in file order is, its bytes are
 * read back and hashed (on a hashing thread when the pool has one). `finish` waits for the last
 * part and compares with the manifest's file digest.
 *
 * @example
 * ```ts ignore
 * const check = new FileDigestCheck(partial.path, manifest.parts, manifest.fileDigest, threads);
 * check.partPlaced(0);
 * await check.finish(); // throws DigestMismatchError on a mismatch
 * ```
 */
export class FileDigestCheck {
  readonly #path: string;
  readonly #parts: readonly PartDescriptor[];
  readonly #expected: string;
  readonly #pool = new BufferPool(BUFFERS, HASH_READ_BYTES);
  readonly #hash: RunningHash;
  readonly #placed = new Set<number>();
  #next = 0;
  #running: Promise<void> = Promise.resolve();
  #failure: unknown;
  /** Called once with the first failure of the hash (the pull stops on it). */
  onFailure: ((err: unknown) => void) | undefined;

  /** Prepares the check of `path` (the partial file) against `expected`. */
  constructor(
    path: string,
    parts: readonly PartDescriptor[],
    expected: string,
    threads: Sha256Threads,
  ) {
    this.#path = path;
    this.#parts = parts;
    this.#expected = expected;
    this.#hash = threads.open((buffer) => this.#pool.release(buffer));
  }

  /** How many parts, from the first, the hash has covered so far. */
  get hashedParts(): number {
    return this.#next;
  }

  /** Part `index` is complete and verified on disk. */
  partPlaced(index: number): void {
    this.#placed.add(index);
    if (index !== this.#next) return;
    this.#running = this.#running.then(() => this.#advance()).catch((err) => {
      if (this.#failure !== undefined) return;
      this.#failure = err;
      this.onFailure?.(err);
    });
  }

  /** Waits for the hash to cover every part and compares; rejects with the mismatch. */
  async finish(): Promise<void> {
    await this.#running;
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#next < this.#parts.length) throw new Error("file digest: parts missing");
    if ((await this.#hash.digest()) !== this.#expected) {
      throw new DigestMismatchError("file digest");
    }
  }

  /** Releases the hash. */
  close(): void {
    this.#hash.close();
  }

  /** Hashes every part from the next one on that is placed. */
  async #advance(): Promise<void> {
    if (this.#failure !== undefined || !this.#placed.has(this.#next)) return;
    let handle;
    try {
      handle = await open(this.#path, "r");
    } catch (err) {
      throw new LocalFileError("pull destination: read-back failed", { cause: err });
    }
    try {
      while (this.#next < this.#parts.length && this.#placed.has(this.#next)) {
        const part = this.#parts[this.#next];
        await this.#hashRange(handle, part.offset, part.size);
        this.#placed.delete(this.#next);
        this.#next++;
      }
    } finally {
      await handle.close();
    }
  }

  async #hashRange(
    handle: Awaited<ReturnType<typeof open>>,
    offset: number,
    size: number,
  ): Promise<void> {
    let done = 0;
    while (done < size) {
      const buffer = await this.#pool.acquire();
      const want = Math.min(HASH_READ_BYTES, size - done);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(new Uint8Array(buffer), 0, want, offset + done));
      } catch (err) {
        this.#pool.release(buffer);
        throw new LocalFileError("pull destination: read-back failed", { cause: err });
      }
      if (bytesRead === 0) {
        this.#pool.release(buffer);
        throw new LocalFileError("pull destination: file ended before its size");
      }
      this.#hash.update(buffer, bytesRead);
      done += bytesRead;
    }
  }
}
