/**
 * Measures a transfer rate over a sliding window.
 *
 * @module
 */

/**
 * Turns a growing byte counter into a rate averaged over the last few seconds, and the overall
 * average since the first sample.
 *
 * @example
 * ```ts
 * import { RateMeter } from "./rate_meter.ts";
 * const meter = new RateMeter(5000);
 * meter.sample(0, 0);
 * meter.sample(1000, 2048);
 * console.log(meter.rate()); // 2048
 * ```
 */
export class RateMeter {
  readonly #windowMs: number;
  readonly #samples: Array<{ at: number; bytes: number }> = [];
  #first: { at: number; bytes: number } | undefined;

  /** Creates a meter averaging over `windowMs` milliseconds. */
  constructor(windowMs = 5000) {
    this.#windowMs = windowMs;
  }

  /** Records the counter's value `bytes` at monotonic time `at` (milliseconds). */
  sample(at: number, bytes: number): void {
    this.#first ??= { at, bytes };
    this.#samples.push({ at, bytes });
    // Keep one sample older than the window so the window is always fully covered.
    while (this.#samples.length > 2 && this.#samples[1].at <= at - this.#windowMs) {
      this.#samples.shift();
    }
  }

  /** Bytes per second over the window, or undefined before 250 ms of samples exist. */
  rate(): number | undefined {
    const oldest = this.#samples[0];
    const newest = this.#samples[this.#samples.length - 1];
    if (oldest === undefined || newest.at - oldest.at < 250) return undefined;
    return ((newest.bytes - oldest.bytes) * 1000) / (newest.at - oldest.at);
  }

  /** Bytes per second since the first sample, or undefined before 250 ms of samples exist. */
  average(): number | undefined {
    const newest = this.#samples[this.#samples.length - 1];
    if (this.#first === undefined || newest.at - this.#first.at < 250) return undefined;
    return ((newest.bytes - this.#first.bytes) * 1000) / (newest.at - this.#first.at);
  }

  /** Milliseconds since the first sample (0 before any). */
  elapsed(): number {
    const newest = this.#samples[this.#samples.length - 1];
    return this.#first === undefined ? 0 : newest.at - this.#first.at;
  }
}
