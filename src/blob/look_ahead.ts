/**
 * How many chunks a parallel pull may fetch ahead of the one being emitted. It starts at two
 * (one being hashed, one arriving) and grows each time the consumer, having emitted part of a
 * chunk, waits for the rest of it (the network, not the hash, is the bound), so
 * where one stream already outruns the hash (loopback) the pull stays one stream plus one chunk
 * ahead, and where each connection is capped it opens up to the full worker set. When whole
 * chunks pile up unread, hashing is the bound: the window shrinks again.
 *
 * @module
 */

/**
 * The adaptive look-ahead window of a parallel pull.
 *
 * @example Opening up while the network is the bound
 * ```ts
 * import { LookAhead } from "./look_ahead.ts";
 * const lookAhead = new LookAhead(4);
 * lookAhead.starved();
 * lookAhead.starved();
 * console.log(lookAhead.window); // 4
 * lookAhead.piledUp(2);
 * console.log(lookAhead.window); // 3
 * ```
 */
export class LookAhead {
  readonly #max: number;
  #window: number;

  /** `max` is the worker count: the window never exceeds it. */
  constructor(max: number) {
    this.#max = max;
    this.#window = Math.min(2, max);
  }

  /** Chunks from the emitted one that may be fetched or held. */
  get window(): number {
    return this.#window;
  }

  /**
   * The consumer emitted part of the current chunk and waits for more of it: fetch one more
   * chunk ahead. Returns whether it grew.
   */
  starved(): boolean {
    if (this.#window >= this.#max) return false;
    this.#window++;
    return true;
  }

  /** `ready` complete chunks wait behind the emitted one: fetch one fewer ahead. */
  piledUp(ready: number): void {
    if (ready >= 2 && this.#window > Math.min(2, this.#max)) this.#window--;
  }
}
