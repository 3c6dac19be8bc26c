/**
 * A signal that aborts after a duration of any length the CLI accepts. One `setTimeout` cannot
 * wait 2^31 ms or more (it fires at once), so a long wait is a chain of shorter ones.
 *
 * @module
 */

/** The longest single timer: setTimeout's delay is a signed 32-bit number of milliseconds. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A deadline: its signal aborts with a `TimeoutError` when the time is up. */
export interface Deadline extends Disposable {
  /** Aborts with a `DOMException` named `TimeoutError` once the duration has passed. */
  readonly signal: AbortSignal;
}

/**
 * Starts a deadline `ms` milliseconds from now (any non-negative safe integer). Dispose it to
 * stop its timer.
 *
 * @example A deadline that has not passed yet
 * ```ts
 * import { startDeadline } from "./deadline.ts";
 * using deadline = startDeadline(30 * 24 * 3_600_000);
 * console.log(deadline.signal.aborted); // false
 * ```
 */
export function startDeadline(ms: number, now: () => number = Date.now): Deadline {
  const controller = new AbortController();
  const end = now() + ms;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    const left = end - now();
    if (left <= 0) {
      timer = undefined;
      controller.abort(new DOMException("The operation timed out.", "TimeoutError"));
      return;
    }
    timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
  };
  arm();
  return {
    signal: controller.signal,
    [Symbol.dispose]: () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
