/**
 * Progress of a parted transfer: counters, throttled snapshots, and the part events since the
 * last one. The snapshot type is shared with the blob client.
 *
 * @module
 */

import type {
  PartEvent,
  ProgressCallback,
  ProgressPhase,
  ProgressSnapshot,
} from "../remote/progress_snapshot.ts";
import { PROGRESS_INTERVAL_MS } from "../remote/session.ts";

export type { PartEvent, ProgressCallback, ProgressPhase, ProgressSnapshot };

/**
 * Keeps a transfer's counters and delivers snapshots to the callback: at once on a phase
 * change and when a pull's check of its partial file ends, otherwise at most every
 * `PROGRESS_INTERVAL_MS` (100 ms, the session's one throttle; a change held back is delivered
 * when the interval ends, so a stalled transfer still reports its latest state). A callback that
 * throws fails
 * the transfer: the first such error is kept in `failure` and `onFailure` is called (the
 * transfer aborts its work with it). `close` ends all calls.
 *
 * @example
 * ```ts
 * import { ProgressTracker } from "./progress.ts";
 * const seen: number[] = [];
 * const tracker = new ProgressTracker(10, 1, "hashing", (s) => seen.push(s.completedBytes));
 * tracker.completePart(0, 10, "uploaded");
 * tracker.setPhase("done");
 * tracker.close();
 * console.log(seen); // [10]
 * ```
 */
export class ProgressTracker {
  #completed = 0;
  #wire = 0;
  #transferred = 0;
  #inFlight = new Map<number, number>();
  #inFlightBytes = 0;
  #partsDone = 0;
  #partsSkipped = 0;
  #resumed = 0;
  /** Parts in flight continued from bytes on disk, and how many bytes each kept. */
  #prefixes = new Map<number, number>();
  readonly #countsResumed: boolean;
  readonly #path: string | undefined;
  #resumeChecked = false;
  #events: PartEvent[] = [];
  #phase: ProgressPhase;
  #total: number;
  #partsTotal: number;
  readonly #callback: ProgressCallback | undefined;
  readonly #now: () => number;
  #lastEmitAt = -Infinity;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** The first error the callback threw, if any. */
  failure: unknown = undefined;
  /** Called once with the callback's first error. */
  onFailure: ((err: unknown) => void) | undefined = undefined;

  /**
   * Creates a tracker for a file of `totalBytes` in `partsTotal` parts, starting in `phase`.
   * `options.resume`: the transfer is a pull, whose snapshots all carry `resumedBytes`;
   * `options.path`: the file a pull writes, carried by every snapshot.
   */
  constructor(
    totalBytes: number,
    partsTotal: number,
    phase: ProgressPhase,
    callback?: ProgressCallback,
    options: { now?: () => number; resume?: boolean; path?: string } = {},
  ) {
    this.#total = totalBytes;
    this.#partsTotal = partsTotal;
    this.#phase = phase;
    this.#callback = callback;
    this.#now = options.now ?? (() => performance.now());
    this.#countsResumed = options.resume ?? false;
    this.#path = options.path;
  }

  /**
   * A transfer whose size is learnt as it goes (a push from a stream): `bytes` more in
   * `parts` more parts.
   */
  extend(bytes: number, parts: number): void {
    this.#total += bytes;
    this.#partsTotal += parts;
  }

  /** The current snapshot (a fresh object; `events` are those not yet delivered). */
  get snapshot(): ProgressSnapshot {
    return {
      completedBytes: this.#completed,
      wireBytes: this.#wire,
      totalBytes: this.#total,
      phase: this.#phase,
      transferredBytes: this.#transferred,
      partsDone: this.#partsDone,
      partsSkipped: this.#partsSkipped,
      partsTotal: this.#partsTotal,
      partsActive: this.#inFlight.size,
      events: [...this.#events],
      ...(this.#countsResumed
        ? { resumedBytes: this.#resumed, resumeChecked: this.#resumeChecked }
        : {}),
      ...(this.#path === undefined ? {} : { path: this.#path }),
    };
  }

  /**
   * The check of the partial file is over (or there was none to check): from now on
   * `resumedBytes` holds all it found, less what later turns out not to match. Reported at once,
   * as a phase change is: a display says what the check found as soon as it is known.
   */
  resumeCheckDone(): void {
    if (this.#resumeChecked) return;
    this.#resumeChecked = true;
    this.#emit();
  }

  /** Bytes found on disk that will not be fetched again (see `ProgressSnapshot`). */
  get resumedBytes(): number {
    return this.#resumed;
  }

  /** The current phase. */
  get phase(): ProgressPhase {
    return this.#phase;
  }

  /** Enters `phase` and reports at once (nothing when it is the current one). */
  setPhase(phase: ProgressPhase): void {
    if (phase === this.#phase) return;
    this.#phase = phase;
    this.#emit();
  }

  /** Counts `bytes` more part bytes on the wire. */
  addWire(bytes: number): void {
    if (bytes <= 0) return;
    this.#wire += bytes;
    this.#changed();
  }

  /** Counts `bytes` of part `index` landed in its current attempt. */
  landed(index: number, bytes: number): void {
    if (bytes <= 0) return;
    this.#inFlight.set(index, (this.#inFlight.get(index) ?? 0) + bytes);
    this.#inFlightBytes += bytes;
    this.#raiseTransferred();
    this.#changed();
  }

  /**
   * Part `index` continues from the first `bytes` of it found on disk: they count as resumed
   * and as landed in its attempt.
   */
  resumePrefix(index: number, bytes: number): void {
    if (bytes <= 0) return;
    this.#prefixes.set(index, bytes);
    this.#resumed += bytes;
    this.landed(index, bytes);
  }

  /**
   * Starts a new attempt of part `index` from its byte 0; bytes it had kept from the disk are
   * fetched again, so they no longer count as resumed.
   */
  restartPart(index: number): void {
    this.#dropInFlight(index);
    const prefix = this.#prefixes.get(index);
    if (prefix === undefined) return;
    this.#prefixes.delete(index);
    this.#resumed -= prefix;
    this.#changed();
  }

  /**
   * Counts part `index` of `size` bytes as in final place, for the reason `kind` (without one,
   * as done with no part event: a verification checks parts, it places none).
   */
  completePart(index: number, size: number, kind?: PartEvent["kind"]): void {
    this.#dropInFlight(index);
    this.#prefixes.delete(index);
    if (kind === "resumed") this.#resumed += size;
    this.#completed += size;
    this.#partsDone++;
    if (kind === "exists" || kind === "resumed") this.#partsSkipped++;
    if (kind !== undefined) this.#events.push({ kind, index, size });
    this.#raiseTransferred();
    this.#changed();
  }

  /** Ends all callbacks (a held-back snapshot is dropped: the transfer has settled). */
  close(): void {
    this.#closed = true;
    this.#cancelTimer();
  }

  #dropInFlight(index: number): void {
    this.#inFlightBytes -= this.#inFlight.get(index) ?? 0;
    this.#inFlight.delete(index);
  }

  #raiseTransferred(): void {
    const now = Math.min(this.#total, this.#completed + this.#inFlightBytes);
    if (now > this.#transferred) this.#transferred = now;
  }

  /** A counter moved: report now if the interval passed, else once it has. */
  #changed(): void {
    if (this.#callback === undefined || this.#closed || this.#timer !== undefined) return;
    const wait = PROGRESS_INTERVAL_MS - (this.#now() - this.#lastEmitAt);
    if (wait <= 0) {
      this.#emit();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#emit();
    }, wait);
  }

  #cancelTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #emit(): void {
    this.#cancelTimer();
    if (this.#callback === undefined || this.#closed || this.failure !== undefined) return;
    this.#lastEmitAt = this.#now();
    const snapshot = this.snapshot;
    this.#events = [];
    try {
      this.#callback(snapshot);
    } catch (err) {
      this.failure = err;
      this.onFailure?.(err);
    }
  }
}
