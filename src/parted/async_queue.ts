/**
 * A tiny work queue for cooperating async workers.
 *
 * @module
 */

/**
 * A FIFO queue that workers `take()` from; `take()` waits while the queue is empty and open, and
 * resolves `undefined` once it is closed and drained.
 *
 * @example
 * ```ts
 * import { AsyncQueue } from "./async_queue.ts";
 * const queue = new AsyncQueue<number>();
 * queue.push(1);
 * queue.close();
 * console.log(await queue.take(), await queue.take()); // 1 undefined
 * ```
 */
export class AsyncQueue<T> {
  readonly #items: T[] = [];
  readonly #waiters: ((item: T | undefined) => void)[] = [];
  #closed = false;

  /** Adds an item (ignored once closed). */
  push(item: T): void {
    if (this.#closed) return;
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(item);
    else this.#items.push(item);
  }

  /** No more items will come; waiting takers resolve `undefined`. */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter(undefined);
  }

  /** How many items wait for a `take()` now. */
  get length(): number {
    return this.#items.length;
  }

  /** How many `take()` calls wait for an item now. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** The next item, or `undefined` when closed and empty. */
  take(): Promise<T | undefined> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift());
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}
