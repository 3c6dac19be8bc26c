/**
 * The retry loop shared by both libraries: attempt budget, exponential full-jitter backoff,
 * Retry-After as a floor, a 30 s cap on every wait, and waits cut short by an AbortSignal.
 *
 * @module
 */
import { RetriesExhaustedError } from "../errors/kinds.ts";
import { retryable } from "../errors/retryable.ts";
import { type Clock, systemClock } from "./clock.ts";

/**
 * How often and how patiently work is repeated.
 *
 * @example More patience than the default
 * ```ts
 * import { PartedClient, type RetryPolicy } from "@ocipart/ocipart";
 * const patient: RetryPolicy = { maxAttempts: 8, baseDelayMs: 2_000, maxDelayMs: 60_000 };
 * using client = new PartedClient({ retryPolicy: patient });
 * ```
 */
export interface RetryPolicy {
  /** Total attempts including the first; 1 means no retry. Must be a positive integer. */
  maxAttempts: number;
  /** Backoff base in milliseconds: the first wait is drawn from [0, base). */
  baseDelayMs: number;
  /** Cap of every wait in milliseconds, including one a server requested. */
  maxDelayMs: number;
}

/**
 * The parted library's policy: 4 attempts, 1 s base, 30 s cap.
 *
 * @example
 * ```ts
 * import { PARTED_RETRY_POLICY } from "./retry.ts";
 * console.log(PARTED_RETRY_POLICY.maxAttempts); // 4
 * ```
 */
export const PARTED_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
});

/**
 * The blob library's default policy: 4 attempts, 250 ms base, 30 s cap.
 *
 * @example
 * ```ts
 * import { BLOB_RETRY_POLICY } from "./retry.ts";
 * console.log(BLOB_RETRY_POLICY.baseDelayMs); // 250
 * ```
 */
export const BLOB_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 30_000,
});

/**
 * Checks a policy and throws `RangeError` when a field is out of range.
 *
 * @example
 * ```ts
 * import { validateRetryPolicy } from "./retry.ts";
 * validateRetryPolicy({ maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0 });
 * ```
 */
export function validateRetryPolicy(policy: RetryPolicy): void {
  if (!Number.isSafeInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError("retry policy: maxAttempts must be a positive integer");
  }
  for (const field of ["baseDelayMs", "maxDelayMs"] as const) {
    if (!Number.isFinite(policy[field]) || policy[field] < 0) {
      throw new RangeError(`retry policy: ${field} must be a non-negative number`);
    }
  }
}

/**
 * The wait before retry number `retryIndex + 1`: full jitter over
 * `min(cap, base * 2^retryIndex)`, raised to the Retry-After floor (itself capped), never more
 * than the cap.
 *
 * @example
 * ```ts
 * import { retryDelay, PARTED_RETRY_POLICY } from "./retry.ts";
 * console.log(retryDelay(0, PARTED_RETRY_POLICY, 0.5)); // 500
 * console.log(retryDelay(0, PARTED_RETRY_POLICY, 0.5, 120_000)); // 30000
 * ```
 */
export function retryDelay(
  retryIndex: number,
  policy: RetryPolicy,
  random: number,
  retryAfterMs?: number,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(retryIndex, 52));
  const jittered = random * ceiling;
  const floor = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, policy.maxDelayMs);
  return Math.min(policy.maxDelayMs, Math.max(jittered, floor));
}

/** Options of {@linkcode retry}. */
export interface RetryOptions {
  /** The budget and backoff. */
  policy: RetryPolicy;
  /** Stops the loop: checked before each attempt and cuts short every wait. */
  signal?: AbortSignal;
  /** Time source; tests pass a fake one. */
  clock?: Clock;
  /** Called before each wait with the failure, the attempt number that failed and the wait. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/**
 * Runs `fn` until it succeeds, a failure is terminal (see {@linkcode retryable}), or the budget
 * is spent. A terminal failure is rethrown unchanged; a retryable failure on the last attempt is
 * wrapped in `RetriesExhaustedError` ("… failed after N attempts") with the failure as `cause`.
 * An invalid policy rejects with `RangeError` before the first attempt.
 *
 * @example
 * ```ts
 * import { retry, BLOB_RETRY_POLICY } from "./retry.ts";
 * const value = await retry("HEAD blob", (attempt) => Promise.resolve(attempt), {
 *   policy: BLOB_RETRY_POLICY,
 * });
 * console.log(value); // 1
 * ```
 */
export async function retry<T>(
  operation: string,
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const { policy, signal } = options;
  // An unchecked policy could loop forever (a missing or NaN maxAttempts never runs out).
  validateRetryPolicy(policy);
  const clock = options.clock ?? systemClock;
  for (let attempt = 1;; attempt++) {
    signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const verdict = retryable(err);
      if (!verdict.retryable) throw err;
      if (attempt >= policy.maxAttempts) {
        throw new RetriesExhaustedError(operation, attempt, { cause: err });
      }
      const delay = retryDelay(attempt - 1, policy, clock.random(), verdict.retryAfterMs);
      options.onRetry?.(err, attempt, delay);
      await clock.sleep(delay, signal);
    }
  }
}
