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

  /** At most `limit` buffers of `size` bytes, created on demand. */
  constructor(limit: number, size: number) {
    this.#limit = limit;
    this.#size = size;
  }

  /** The size of every buffer. */
  get size(): number {
    return this.#size;
  }

  /** A free buffer, once one is. */
  acquire(): Promise<ArrayBuffer> {
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
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(buffer);
    else this.#free.push(buffer);
  }
}
