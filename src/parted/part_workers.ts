/**
 * The worker pool shape both parted directions share: a fixed set of workers draining a part
 * queue, and a latch that keeps the first failure (with its part index) and stops the rest.
 *
 * @module
 */
import type { AsyncQueue } from "./async_queue.ts";
import type { PartDescriptor } from "./manifest.ts";
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { PartTooLargeError } from "../errors/sentinels.ts";

/**
 * The stop of a transfer: its signal (the caller's, and its own abort) and the first failure,
 * kept with its part index. Every failure stops the transfer; a failure after the caller's own
 * abort is not kept: the caller's reason wins.
 *
 * @example
 * ```ts ignore
 * const latch = new FirstFailure(job.signal);
 * await work(latch.signal).catch((err) => latch.fail(err, 3));
 * ```
 */
export class FirstFailure {
  /** Aborted by the caller's signal or by the first failure (or `stop`). */
  readonly signal: AbortSignal;
  #first: { err: unknown; part: number | undefined } | undefined;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #controller = new AbortController();

  /** The stop of a transfer the caller may abort with `callerSignal`. */
  constructor(callerSignal: AbortSignal | undefined) {
    this.#callerSignal = callerSignal;
    this.signal = callerSignal === undefined
      ? this.#controller.signal
      : AbortSignal.any([callerSignal, this.#controller.signal]);
  }

  /** Stops the transfer with `reason` without keeping it as its failure (a callback's throw). */
  stop(reason: unknown): void {
    this.#controller.abort(reason);
  }

  /** Records `err` (if it is the first) and stops the transfer. */
  fail(err: unknown, part?: number): void {
    if (this.#first === undefined && !this.#callerSignal?.aborted) {
      this.#first = { err, part };
    }
    this.#controller.abort(err);
  }

  /** Throws the first failure, if there was one. */
  throwIfFailed(): void {
    if (this.#first !== undefined) throw this.#first.err;
  }

  /**
   * Waits for the feeder and the workers of a transfer, then throws what ended it: the
   * caller's abort reason, else the first failure, else a failure of the progress callback.
   */
  async settle(running: Promise<unknown>[], progress: { failure: unknown }): Promise<void> {
    await Promise.all(running);
    if (this.#callerSignal?.aborted) throw this.#callerSignal.reason;
    this.throwIfFailed();
    if (progress.failure !== undefined) throw progress.failure;
  }

  /**
   * The error a transfer returns for `err`: the caller's abort reason when it aborted, else `err`
   * with its sentinel attached, naming the part when `err` is the latched part failure.
   */
  publicError(err: unknown): unknown {
    if (this.#callerSignal?.aborted) return this.#callerSignal.reason;
    const first = this.#first;
    const partIndex = first !== undefined && first.err === err ? first.part : undefined;
    return attachSentinel(err, { partIndex, tooLarge: PartTooLargeError });
  }
}

/**
 * The next part a worker takes from `queue`, or undefined when the worker should stop: the queue
 * is over, or the transfer stopped (a failure latched by `FirstFailure.fail` stops it too). Each
 * transfer runs its workers as a loop over this, so a part's work is called by the transfer
 * itself.
 *
 * @example Eight workers
 * ```ts ignore
 * const workers = Array.from({ length: 8 }, async () => {
 *   for (let part; (part = await nextPart(queue, signal)) !== undefined;) {
 *     await upload(part).catch((err) => latch.fail(err, part!.index));
 *   }
 * });
 * ```
 */
export async function nextPart<T extends PartDescriptor>(
  queue: AsyncQueue<T>,
  signal: AbortSignal,
): Promise<T | undefined> {
  const part = await queue.take();
  return signal.aborted ? undefined : part;
}
