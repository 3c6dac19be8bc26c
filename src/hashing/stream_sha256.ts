/**
 * The running sha256 of a verified download: inline for small bodies, on a hashing thread for
 * large ones so receiving and hashing overlap.
 *
 * @module
 */
import { BufferFill, BufferPool } from "./buffer_pool.ts";
import { Sha256 } from "./sha256.ts";
import type { RunningHash, Sha256Threads } from "./sha256_threads.ts";

/** Bodies at least this large are hashed on a thread; below it a thread costs more than it saves. */
export const THREADED_HASH_MIN_BYTES: number = 16 << 20;

/** Staging buffers in flight to the hashing thread: bounds the memory a threaded hash holds. */
const STAGING_BUFFERS = 4;
const STAGING_SIZE = 1 << 20;

/** A running sha256 that copies what it is given, so the caller may pass chunks on at once. */
export interface StreamHash {
  /** Bytes given so far. */
  readonly bytes: number;
  /**
   * Adds `chunk`; once the returned promise settles the chunk was copied and may be reused. Waits
   * while the hashing thread is behind by its staging buffers.
   */
  update(chunk: Uint8Array): Promise<void>;
  /** `sha256:<hex>` of everything given so far. */
  digest(): Promise<string>;
  /** Releases the hash (its thread stays with its owner). */
  close(): void;
}

/**
 * A stream hash for a body of `expectedBytes` (undefined when unknown): on one of `threads` from
 * {@linkcode THREADED_HASH_MIN_BYTES} up, inline otherwise.
 *
 * @example Hashing a body
 * ```ts
 * import { openStreamHash } from "./stream_sha256.ts";
 * const hash = openStreamHash(3);
 * await hash.update(new TextEncoder().encode("abc"));
 * console.log(await hash.digest());
 * // "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 * hash.close();
 * ```
 */
export function openStreamHash(
  expectedBytes: number | undefined,
  threads?: Sha256Threads,
): StreamHash {
  if (
    threads === undefined || !threads.threadedRunning || expectedBytes === undefined ||
    expectedBytes < THREADED_HASH_MIN_BYTES
  ) {
    return inlineStreamHash();
  }
  return new ThreadedStreamHash(threads);
}

function inlineStreamHash(): StreamHash {
  const hash = new Sha256();
  return {
    get bytes() {
      return hash.bytes;
    },
    update(chunk) {
      hash.update(chunk);
      return Promise.resolve();
    },
    digest: () => Promise.resolve(hash.digest()),
    close() {},
  };
}

class ThreadedStreamHash implements StreamHash {
  readonly #pool = new BufferPool(STAGING_BUFFERS, STAGING_SIZE);
  readonly #fill = new BufferFill(this.#pool);
  readonly #hash: RunningHash;
  #bytes = 0;

  constructor(threads: Sha256Threads) {
    this.#hash = threads.open((buffer) => this.#pool.release(buffer));
  }

  get bytes(): number {
    return this.#bytes;
  }

  async update(chunk: Uint8Array): Promise<void> {
    await this.#fill.add(chunk, (buffer, length) => this.#hash.update(buffer, length));
    this.#bytes += chunk.byteLength;
  }

  digest(): Promise<string> {
    const rest = this.#fill.take();
    if (rest !== undefined) this.#hash.update(rest.buffer, rest.length);
    return this.#hash.digest();
  }

  close(): void {
    this.#hash.close();
  }
}
