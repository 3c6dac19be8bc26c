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
  // Kept at least SPACING_MS apart, so the window holds a few dozen samples even when the
  // counter moves thousands of times a second.
  readonly #samples: Array<{ at: number; bytes: number }> = [];
  #first: { at: number; bytes: number } | undefined;
  #latest: { at: number; bytes: number } | undefined;

  /** Creates a meter averaging over `windowMs` milliseconds. */
  constructor(windowMs = 5000) {
    this.#windowMs = windowMs;
  }

  /** Records the counter's value `bytes` at monotonic time `at` (milliseconds). */
  sample(at: number, bytes: number): void {
    const point = { at, bytes };
    this.#first ??= point;
    this.#latest = point;
    const newest = this.#samples[this.#samples.length - 1];
    if (newest !== undefined && at - newest.at < SPACING_MS) return;
    this.#samples.push(point);
    // Keep one sample older than the window so the window is always fully covered.
    while (this.#samples.length > 2 && this.#samples[1].at <= at - this.#windowMs) {
      this.#samples.shift();
    }
  }

  /** Bytes per second over the window, or undefined before 250 ms of samples exist. */
  rate(): number | undefined {
    return perSecond(this.#samples[0], this.#latest);
  }

  /** Bytes per second since the first sample, or undefined before 250 ms of samples exist. */
  average(): number | undefined {
    return perSecond(this.#first, this.#latest);
  }

  /** Milliseconds since the first sample (0 before any). */
  elapsed(): number {
    return this.#first === undefined || this.#latest === undefined
      ? 0
      : this.#latest.at - this.#first.at;
  }
}

const SPACING_MS = 50;

function perSecond(
  from: { at: number; bytes: number } | undefined,
  to: { at: number; bytes: number } | undefined,
): number | undefined {
  if (from === undefined || to === undefined || to.at - from.at < 250) return undefined;
  return ((to.bytes - from.bytes) * 1000) / (to.at - from.at);
}
