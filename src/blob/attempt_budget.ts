/**
 * One attempt budget shared by every request of a blob operation, so nested and concurrent
 * retries (a resumed pull, parallel chunk workers) never multiply the configured attempts.
 *
 * @module
 */
import { RetriesExhaustedError } from "../errors/kinds.ts";
import { retryable } from "../errors/retryable.ts";
import type { Clock } from "../transport/clock.ts";
import { retryDelay, type RetryPolicy } from "../transport/retry.ts";

/**
 * Counts the attempts of one operation against `policy.maxAttempts` and waits between them
 * with the shared full-jitter backoff ({@linkcode retryDelay}), honouring Retry-After floors.
 * The operation's first attempt (which may itself send several requests, e.g. one per parallel
 * chunk) is attempt 1; every retry of any of its requests takes one more.
 *
 * @example Running a request under the budget
 * ```ts
 * import { AttemptBudget } from "./attempt_budget.ts";
 * import { BLOB_RETRY_POLICY } from "../transport/retry.ts";
 * import { systemClock } from "../transport/clock.ts";
 * const budget = new AttemptBudget(BLOB_RETRY_POLICY, systemClock);
 * const value = await budget.run("HEAD blob", () => Promise.resolve(7));
 * console.log(value, budget.used); // 7 1
 * ```
 */
export class AttemptBudget {
  /** The policy whose `maxAttempts` bounds the whole operation. */
  readonly policy: RetryPolicy;
  #clock: Clock;
  #signal: AbortSignal | undefined;
  #used = 1;

  /** Creates a budget whose first attempt has begun; `signal` cuts every wait short. */
  constructor(policy: RetryPolicy, clock: Clock, signal?: AbortSignal) {
    this.policy = policy;
    this.#clock = clock;
    this.#signal = signal;
  }

  /** How many attempts were begun so far (the first one included). */
  get used(): number {
    return this.#used;
  }

  /**
   * Decides about a failure: rethrows a terminal failure (or the abort reason), throws
   * `RetriesExhaustedError` when the budget is spent, otherwise takes the next attempt and waits
   * the backoff, so the caller may repeat the failed request. The attempt is taken before the
   * wait, so concurrent failures never overdraw the budget.
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
    await this.#clock.sleep(delay, this.#signal);
  }

  /** Runs `fn` until it succeeds or `failed` gives up. */
  async run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    for (;;) {
      this.#signal?.throwIfAborted();
      try {
        return await fn();
      } catch (err) {
        await this.failed(operation, err);
      }
    }
  }
}
