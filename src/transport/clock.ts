/**
 * The time source of retries and token lifetimes, injectable so tests never sleep for real.
 *
 * @module
 */

/**
 * Monotonic time, abortable sleep and randomness, as used by retries and caches.
 *
 * @example A clock that never waits, for tests of retry behaviour
 * ```ts
 * import { BlobClient, type Clock } from "@ocipart/ocipart";
 * let now = 0;
 * const waits: number[] = [];
 * const instant: Clock = {
 *   now: () => now,
 *   sleep: (ms) => {
 *     waits.push(ms);
 *     now += ms;
 *     return Promise.resolve();
 *   },
 *   random: () => 0.5,
 * };
 * using client = new BlobClient({ clock: instant, retryPolicy: { maxAttempts: 4 } });
 * ```
 */
export interface Clock {
  /** Monotonic milliseconds; only differences are meaningful. */
  now(): number;
  /** Resolves after `ms`, or rejects with `signal.reason` as soon as `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A number in [0, 1). */
  random(): number;
}

/**
 * The real clock: `performance.now()`, timers and `Math.random()`.
 *
 * @example
 * ```ts
 * import { systemClock } from "./clock.ts";
 * const start = systemClock.now();
 * await systemClock.sleep(1);
 * console.log(systemClock.now() >= start); // true
 * ```
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  random: () => Math.random(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};
