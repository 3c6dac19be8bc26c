/**
 * The one retry engine of both libraries: the attempt budget of an operation (shared by all its
 * concurrent and nested requests), exponential full-jitter backoff, Retry-After as a floor, a
 * cap on every wait, waits cut short by an AbortSignal. The defaults are in `policy.ts`.
 *
 * @module
 */
import { RetriesExhaustedError } from "../errors/kinds.ts";
import { retryable } from "../errors/retryable.ts";
import { type Clock, systemClock } from "../transport/clock.ts";

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
    throw new RangeError(
      `retry policy: maxAttempts must be a positive integer, not ${policy.maxAttempts}`,
    );
  }
  for (const field of ["baseDelayMs", "maxDelayMs"] as const) {
    if (!Number.isFinite(policy[field]) || policy[field] < 0) {
      throw new RangeError(
        `retry policy: ${field} must be a non-negative number, not ${policy[field]}`,
      );
    }
  }
}

/**
 * Resolves the policy a client was given, the same way for both clients: omitted → a copy of
 * the client's `defaults`; an object → `maxAttempts` 1 when it is missing (so `{}` means
 * exactly one attempt: a caller who configures retries states how many) and the client's
 * default delays for missing delay fields. The result is validated.
 *
 * @throws {TypeError} `given` is neither undefined nor an object.
 * @throws {RangeError} A field is out of range.
 *
 * @example A partial policy means one attempt unless it says more
 * ```ts
 * import { resolveRetryPolicy } from "./retry.ts";
 * import { BLOB_SPEC_POLICY } from "./policy.ts";
 * console.log(resolveRetryPolicy({}, BLOB_SPEC_POLICY.retry, "BlobClient").maxAttempts); // 1
 * console.log(resolveRetryPolicy(undefined, BLOB_SPEC_POLICY.retry, "BlobClient").maxAttempts); // 4
 * ```
 */
export function resolveRetryPolicy(
  given: Partial<RetryPolicy> | undefined,
  defaults: Readonly<RetryPolicy>,
  owner: string,
): RetryPolicy {
  if (given === undefined) return { ...defaults };
  if (typeof given !== "object" || given === null) {
    throw new TypeError(`${owner}: retryPolicy must be an object`);
  }
  const resolved = {
    maxAttempts: given.maxAttempts ?? 1,
    baseDelayMs: given.baseDelayMs ?? defaults.baseDelayMs,
    maxDelayMs: given.maxDelayMs ?? defaults.maxDelayMs,
  };
  validateRetryPolicy(resolved);
  return resolved;
}

/**
 * The wait before retry number `retryIndex + 1`: full jitter over
 * `min(cap, base * 2^retryIndex)`, raised to the Retry-After floor (itself capped), never more
 * than the cap.
 *
 * @example
 * ```ts
 * import { retryDelay } from "./retry.ts";
 * import { DEFAULT_POLICY } from "./policy.ts";
 * console.log(retryDelay(0, DEFAULT_POLICY.retry, 0.5)); // 500
 * console.log(retryDelay(0, DEFAULT_POLICY.retry, 0.5, 120_000)); // 30000
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

/** Called before each backoff wait with the failure, the attempt that failed and the wait. */
export type RetryListener = (err: unknown, attempt: number, delayMs: number) => void;

/**
 * Counts the attempts of one operation against `policy.maxAttempts` and waits between them
 * with {@linkcode retryDelay}, honouring Retry-After floors. The operation's first attempt
 * (which may itself send several requests, e.g. one per parallel chunk) is attempt 1; every
 * retry of any of its requests takes one more, so nested and concurrent retries never multiply
 * the configured attempts.
 *
 * @example Running a request under the budget
 * ```ts
 * import { AttemptBudget } from "./retry.ts";
 * import { BLOB_SPEC_POLICY } from "./policy.ts";
 * import { systemClock } from "../transport/clock.ts";
 * const budget = new AttemptBudget(BLOB_SPEC_POLICY.retry, systemClock);
 * const value = await budget.run("HEAD blob", () => Promise.resolve(7));
 * console.log(value, budget.used); // 7 1
 * ```
 */
export class AttemptBudget {
  /** The policy whose `maxAttempts` bounds the whole operation. */
  readonly policy: RetryPolicy;
  #clock: Clock;
  #signal: AbortSignal | undefined;
  #onRetry: RetryListener | undefined;
  #used = 1;

  /**
   * Creates a budget whose first attempt has begun; `signal` cuts every wait short.
   *
   * @throws {RangeError} The policy is invalid (an unchecked one could loop forever).
   */
  constructor(
    policy: RetryPolicy,
    clock: Clock = systemClock,
    signal?: AbortSignal,
    onRetry?: RetryListener,
  ) {
    validateRetryPolicy(policy);
    this.policy = policy;
    this.#clock = clock;
    this.#signal = signal;
    this.#onRetry = onRetry;
  }

  /** How many attempts were begun so far (the first one included). */
  get used(): number {
    return this.#used;
  }

  /**
   * Decides about a failure: rethrows a terminal failure (or the abort reason), throws
   * `RetriesExhaustedError` ("… failed after N attempts", the failure as `cause`) when the
   * budget is spent, otherwise takes the next attempt and waits the backoff, so the caller may
   * repeat the failed request. The attempt is taken before the wait, so concurrent failures
   * never overdraw the budget.
   */
  async failed(operation: string, err: unknown): Promise<void> {
    if (this.#signal?.aborted) throw this.#signal.reason;
    const verdict = retryable(err);
    if (!verdict.retryable) throw err;
    if (this.#used >= this.policy.maxAttempts) {
      throw new RetriesExhaustedError(operation, this.#used, { cause: err });
    }
    const retryIndex = this.#used - 1;
    this.#used++;
    const delay = retryDelay(retryIndex, this.policy, this.#clock.random(), verdict.retryAfterMs);
    this.#onRetry?.(err, retryIndex + 1, delay);
    await this.#clock.sleep(delay, this.#signal);
  }

  /** Runs `fn` (given the attempt number) until it succeeds or `failed` gives up. */
  async run<T>(operation: string, fn: (attempt: number) => Promise<T>): Promise<T> {
    for (;;) {
      this.#signal?.throwIfAborted();
      try {
        return await fn(this.#used);
      } catch (err) {
        await this.failed(operation, err);
      }
    }
  }
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
  onRetry?: RetryListener;
}

/**
 * Runs `fn` under a fresh {@linkcode AttemptBudget} until it succeeds, a failure is terminal
 * (see {@linkcode retryable}), or the budget is spent. A terminal failure is rethrown
 * unchanged; a retryable failure on the last attempt is wrapped in `RetriesExhaustedError`
 * ("… failed after N attempts") with the failure as `cause`. An invalid policy rejects with
 * `RangeError` before the first attempt.
 *
 * @example Retrying an operation under a fresh budget
 * ```ts
 * import { retry } from "./retry.ts";
 * import { BLOB_SPEC_POLICY } from "./policy.ts";
 * const value = await retry("HEAD blob", (attempt) => Promise.resolve(attempt), {
 *   policy: BLOB_SPEC_POLICY.retry,
 * });
 * console.log(value); // 1
 * ```
 */
export function retry<T>(
  operation: string,
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  try {
    const budget = new AttemptBudget(
      options.policy,
      options.clock ?? systemClock,
      options.signal,
      options.onRetry,
    );
    return budget.run(operation, fn);
  } catch (err) {
    return Promise.reject(err);
  }
}
