/**
 * A bounded set of fixed-size buffers, so a transfer's memory stays constant however long it runs.
 *
 * @module
 */

/**
 * Fixed-size buffers handed out and given back; `acquire()` waits when all are in use.
 *
 * @example Reusing buffers
 * ```ts
 * import { BufferPool } from "./buffer_pool.ts";
 * const pool = new BufferPool(2, 1024);
 * const a = await pool.acquire();
 * pool.release(a);
 * console.log((await pool.acquire()) === a); // true
 * ```
 */
export class BufferPool {
  readonly #free: ArrayBuffer[] = [];
  readonly #waiters: ((buffer: ArrayBuffer) => void)[] = [];
  readonly #limit: number;
  readonly #size: number;
  #created = 0;
  /** The pool a lease draws from, and what the lease holds of it. */
  readonly #lender: BufferPool | undefined;
  #held = 0;
  #closed = false;

  /** At most `limit` buffers of `size` bytes, created on demand. */
  constructor(limit: number, size: number, lender?: BufferPool) {
    this.#limit = limit;
    this.#size = size;
    this.#lender = lender;
  }

  /** The size of every buffer. */
  get size(): number {
    return this.#size;
  }

  /** A free buffer, once one is. */
  acquire(): Promise<ArrayBuffer> {
    if (this.#lender !== undefined) {
      this.#held++;
      return this.#lender.acquire();
    }
    const buffer = this.#free.pop();
    if (buffer !== undefined) return Promise.resolve(buffer);
    if (this.#created < this.#limit) {
      this.#created++;
      return Promise.resolve(new ArrayBuffer(this.#size));
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Gives a buffer back (to the longest waiter first). */
  release(buffer: ArrayBuffer): void {
    if (this.#lender !== undefined) {
      // A buffer that comes back after its lease closed was written off: it is dropped.
      if (this.#closed) return;
      this.#held--;
      this.#lender.release(buffer);
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(buffer);
    else this.#free.push(buffer);
  }

  /**
   * A share of this pool for one user (a part download): it acquires and releases this pool's
   * buffers, so the buffers outlive the user and serve the next one instead of becoming garbage.
   * {@linkcode BufferPool.close} on the lease writes off what it still holds.
   *
   * @example Two leases, one buffer
   * ```ts
   * import { BufferPool } from "./buffer_pool.ts";
   * const pool = new BufferPool(1, 1024);
   * const first = pool.lease();
   * const buffer = await first.acquire();
   * first.close(); // the buffer is lost with its user: the pool may make another
   * console.log((await pool.lease().acquire()) !== buffer); // true
   * ```
   */
  lease(): BufferPool {
    return new BufferPool(0, this.#size, this);
  }

  /**
   * Ends a lease: the buffers it holds (lost with a failed user, or still with a closed hash)
   * are written off, and its pool may create as many new ones. Does nothing on a pool.
   */
  close(): void {
    if (this.#lender === undefined || this.#closed) return;
    this.#closed = true;
    this.#lender.#writeOff(this.#held);
    this.#held = 0;
  }

  #writeOff(count: number): void {
    this.#created -= count;
    while (this.#waiters.length > 0 && this.#created < this.#limit) {
      this.#created++;
      this.#waiters.shift()!(new ArrayBuffer(this.#size));
    }
  }
}

/**
 * Copies chunks of any size into the pool's buffers, handing each buffer on as it fills, so a
 * consumer of whole buffers (a positional write, a hashing thread) sees few, large pieces.
 *
 * @example Filling 4-byte buffers
 * ```ts
 * import { BufferFill, BufferPool } from "./buffer_pool.ts";
 * const pool = new BufferPool(2, 4);
 * const fill = new BufferFill(pool);
 * const full: number[] = [];
 * await fill.add(new Uint8Array(6), (buffer, length) => {
 *   full.push(length);
 *   pool.release(buffer);
 * });
 * console.log(full, fill.take()?.length); // [ 4 ] 2
 * ```
 */
export class BufferFill {
  readonly #pool: BufferPool;
  #buffer: ArrayBuffer | undefined;
  #length = 0;

  /** Fills buffers of `pool`. */
  constructor(pool: BufferPool) {
    this.#pool = pool;
  }

  /** Bytes in the buffer being filled. */
  get length(): number {
    return this.#length;
  }

  /**
   * Copies all of `chunk`; each time a buffer fills it goes to `full` (awaited) and copying goes
   * on in the next one. Once the promise settles `chunk` may be reused.
   */
  async add(
    chunk: Uint8Array,
    full: (buffer: ArrayBuffer, length: number) => void | Promise<void>,
  ): Promise<void> {
    const size = this.#pool.size;
    let offset = 0;
    while (offset < chunk.byteLength) {
      this.#buffer ??= await this.#pool.acquire();
      const take = Math.min(chunk.byteLength - offset, size - this.#length);
      new Uint8Array(this.#buffer, this.#length, take).set(chunk.subarray(offset, offset + take));
      this.#length += take;
      offset += take;
      if (this.#length === size) await full(this.take()!.buffer, size);
    }
  }

  /** Hands over the buffer being filled and its length, if it holds anything. */
  take(): { buffer: ArrayBuffer; length: number } | undefined {
    const buffer = this.#buffer;
    const length = this.#length;
    this.#buffer = undefined;
    this.#length = 0;
    if (buffer === undefined) return undefined;
    if (length > 0) return { buffer, length };
    this.#pool.release(buffer);
    return undefined;
  }
}

/**
 * Buffers of one size kept from one use to the next, at most `keep` of them. Made fresh per
 * use, buffers that live as long as a request or a file range outlive the young generation and
 * wait for a full collection, which a long transfer may not run. A buffer is given back only
 * once nothing reads into it or sends it any more.
 *
 * @example Keeping a buffer for the next use
 * ```ts
 * import { KeptBuffers } from "./buffer_pool.ts";
 * const kept = new KeptBuffers(1024, 2);
 * const buffer = kept.take();
 * kept.give(buffer);
 * console.log(kept.take() === buffer, kept.take(10).byteLength); // true 10
 * ```
 */
export class KeptBuffers {
  readonly #size: number;
  readonly #keep: number;
  readonly #spare: Uint8Array[] = [];

  /** Keeps at most `keep` buffers of `size` bytes. */
  constructor(size: number, keep: number) {
    this.#size = size;
    this.#keep = keep;
  }

  /** A buffer of `size` bytes (default the kept size): a kept one when there is one, else new. */
  take(size: number = this.#size): Uint8Array {
    return (size === this.#size ? this.#spare.pop() : undefined) ?? new Uint8Array(size);
  }

  /** Keeps `buffer` for a later use, when it has the kept size and there is room. */
  give(buffer: Uint8Array): void {
    if (buffer.byteLength === this.#size && this.#spare.length < this.#keep) {
      this.#spare.push(buffer);
    }
  }
}
