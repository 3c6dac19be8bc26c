/**
 * The attempts of one part upload, timed: recognises a registry (or a proxy in front of it)
 * that cuts every request after the same time, or that refuses a fresh token once a whole part
 * has arrived, and measures the speed the part went at.
 *
 * @module
 */
import { AuthRetryError } from "../auth/auth_retry_error.ts";
import { findError } from "../errors/find_error.ts";
import { HttpStatusError, NetworkError } from "../errors/kinds.ts";
import { retryable } from "../errors/retryable.ts";

/** A cut sooner than this is a dropped connection, not a time limit anyone would set. */
export const MIN_TIME_LIMIT_MS = 1000;

/** Cuts at times that differ by at most this share of the longest are "the same time". */
const SAME_TIME_SPREAD = 0.25;

/** Speed samples kept per attempt; older ones are thinned out beyond this. */
const MAX_SAMPLES = 256;

/** What the attempts of a part show when a time limit cut every one of them. */
export interface TimeLimitSeen {
  /** The median time from the start of a PUT to its cut, in ms. */
  readonly cutAfterMs: number;
  /** The median of the attempts' speeds, in bytes per second. */
  readonly bytesPerSecond: number;
  /** How many attempts were cut. */
  readonly attempts: number;
}

interface Put {
  readonly startedAt: number;
  bytes: number;
  /** `[time, bytes sent by then]`, at most {@linkcode MAX_SAMPLES}. */
  samples: [number, number][];
}

/** What the attempts show when the token was refused after whole parts, twice in a row. */
export interface TokenOutlivedSeen {
  /** The shorter of the two refused uploads, in ms. */
  readonly uploadMs: number;
  /** The part's size over that time, in bytes per second. */
  readonly bytesPerSecond: number;
  /** Attempts refused that way in a row. */
  readonly attempts: number;
}

type Ended =
  | { cut: false; refusedAfterMs?: number }
  | { cut: true; elapsedMs: number; bytesPerSecond: number };

/**
 * Records each attempt of one part upload: when its PUT started, the body bytes sent and how
 * it ended.
 *
 * @example
 * ```ts ignore
 * const attempts = new UploadAttempts(() => clock.now());
 * attempts.startPut(); attempts.sent(1 << 20); attempts.failed(err);
 * const limit = attempts.timeLimit();
 * ```
 */
export class UploadAttempts {
  readonly #now: () => number;
  readonly #size: number;
  #put: Put | undefined;
  readonly #ended: Ended[] = [];

  /** Times the attempts of a part of `size` bytes with `now` (milliseconds, monotonic). */
  constructor(now: () => number, size: number) {
    this.#now = now;
    this.#size = size;
  }

  /** The attempt's PUT begins to send its body. */
  startPut(): void {
    this.#put = { startedAt: this.#now(), bytes: 0, samples: [] };
  }

  /** `bytes` more of the body were handed to the network. */
  sent(bytes: number): void {
    const put = this.#put;
    if (put === undefined) return;
    put.bytes += bytes;
    put.samples.push([this.#now(), put.bytes]);
    // Keep every other sample: the spread over the attempt stays, the memory does not grow.
    if (put.samples.length > MAX_SAMPLES) put.samples = put.samples.filter((_, i) => i % 2 === 1);
  }

  /** The attempt failed with `err` (before or during its PUT). */
  failed(err: unknown): void {
    const put = this.#put;
    this.#put = undefined;
    const elapsedMs = put === undefined ? 0 : this.#now() - put.startedAt;
    if (put !== undefined && put.bytes >= this.#size && isTokenRefusal(err)) {
      this.#ended.push({ cut: false, refusedAfterMs: elapsedMs });
      return;
    }
    if (put === undefined || !isCut(err) || elapsedMs < MIN_TIME_LIMIT_MS) {
      this.#ended.push({ cut: false });
      return;
    }
    this.#ended.push({ cut: true, elapsedMs, bytesPerSecond: steadySpeed(put, elapsedMs) });
  }

  /**
   * The time limit shown when at least two attempts failed and every one was cut after about
   * the same time (at least {@linkcode MIN_TIME_LIMIT_MS}); else `undefined`.
   */
  timeLimit(): TimeLimitSeen | undefined {
    const cuts = this.#ended.flatMap((e) => e.cut ? [e] : []);
    if (cuts.length < 2 || cuts.length !== this.#ended.length) return undefined;
    const times = cuts.map((c) => c.elapsedMs);
    const longest = Math.max(...times);
    if (longest - Math.min(...times) > longest * SAME_TIME_SPREAD) return undefined;
    return {
      cutAfterMs: median(times),
      bytesPerSecond: median(cuts.map((c) => c.bytesPerSecond)),
      attempts: cuts.length,
    };
  }

  /**
   * The refusal shown when the last two attempts each sent the whole part and then had their
   * token refused: the second one started with the token renewed by the first refusal, so a
   * fresh token does not outlive a part. `undefined` otherwise.
   */
  tokenOutlived(): TokenOutlivedSeen | undefined {
    const last = this.#ended.slice(-2).flatMap((e) =>
      !e.cut && e.refusedAfterMs !== undefined ? [e.refusedAfterMs] : []
    );
    if (last.length < 2 || this.#size === 0) return undefined;
    const uploadMs = Math.max(1, Math.min(...last));
    return { uploadMs, bytesPerSecond: (this.#size / uploadMs) * 1000, attempts: 2 };
  }
}

/** A request with a body refused for its credential, which has been renewed since. */
function isTokenRefusal(err: unknown): boolean {
  return findError(err, AuthRetryError) !== undefined;
}

/**
 * A connection lost, or a 5xx an edge answers when its timer fires, mid-exchange: the failures
 * a request time limit produces. Stalls, refusals and auth retries are not cuts.
 */
function isCut(err: unknown): boolean {
  if (!retryable(err).retryable) return false;
  if (findError(err, NetworkError) !== undefined) return true;
  const status = findError(err, HttpStatusError)?.status ?? 0;
  return status >= 500 && status <= 599;
}

/**
 * The speed from the middle of an attempt to its end: the first moments fill socket buffers
 * faster than the link drains them, so the whole attempt's average overstates what reaches
 * the far end. Measured from the last sample at or before the middle, so the window spans at
 * least half the attempt. When nothing left in that window (buffers larger than what the link
 * drains in half the attempt), half the whole attempt's average stands in for it.
 */
function steadySpeed(put: Put, elapsedMs: number): number {
  const half = put.startedAt + elapsedMs / 2;
  let from: [number, number] = [put.startedAt, 0];
  for (const sample of put.samples) {
    if (sample[0] > half) break;
    from = sample;
  }
  const moved = put.bytes - from[1];
  if (moved <= 0) return (put.bytes / elapsedMs) * 1000 / 2;
  return (moved / (put.startedAt + elapsedMs - from[0])) * 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
