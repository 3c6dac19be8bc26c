/**
 * Progress snapshots of a parted transfer, throttled, with the part events since the last one.
 *
 * @module
 */

/**
 * The stage a transfer is in; the end of a transfer is a phase, not a byte count.
 *
 * @example Reporting phase changes only
 * ```ts
 * import type { ProgressPhase, ProgressSnapshot } from "@ocipart/ocipart";
 * let last: ProgressPhase | undefined;
 * const onProgress = (s: ProgressSnapshot) => {
 *   if (s.phase !== last) console.log((last = s.phase));
 * };
 * onProgress({ phase: "hashing", completedBytes: 0, wireBytes: 0, totalBytes: 10 });
 * ```
 */
export type ProgressPhase =
  | "resolving"
  | "hashing"
  | "uploading"
  | "config"
  | "manifest"
  | "verifying"
  | "downloading"
  | "committing"
  | "done";

/**
 * What happened to one part: on push it was already in the registry (`"exists"`) or was
 * uploaded (`"uploaded"`); on pull it was already in the partial file of an earlier pull
 * (`"resumed"`) or was fetched and matched its digest (`"verified"`).
 *
 * @example One log line per part
 * ```ts
 * import type { PartEvent } from "@ocipart/ocipart";
 * const line = (e: PartEvent) => `part ${e.index + 1}: ${e.kind} (${e.size} bytes)`;
 * console.log(line({ kind: "uploaded", index: 0, size: 10 })); // "part 1: uploaded (10 bytes)"
 * ```
 */
export interface PartEvent {
  /** What happened to the part. */
  kind: "exists" | "uploaded" | "resumed" | "verified";
  /** The part's index in file order, from 0. */
  index: number;
  /** The part's size in bytes. */
  size: number;
}

/**
 * What a progress callback receives. `completedBytes`, `wireBytes`, `totalBytes` and `phase`
 * are always there; the part counters and `transferredBytes` are filled by the clients of this
 * package (optional in the type so older hand-built snapshots still type-check).
 *
 * @example A percentage, parts done and the bytes redone
 * ```ts
 * import type { ProgressSnapshot } from "@ocipart/ocipart";
 * const describe = (s: ProgressSnapshot) =>
 *   `${s.phase} ${Math.floor((100 * (s.transferredBytes ?? s.completedBytes)) / Math.max(s.totalBytes, 1))}%` +
 *   ` ${s.partsDone ?? 0}/${s.partsTotal ?? 0} parts` +
 *   ` (${Math.max(0, s.wireBytes - s.totalBytes)} bytes resent)`;
 * console.log(describe({
 *   phase: "uploading", completedBytes: 4, transferredBytes: 5, wireBytes: 5, totalBytes: 10,
 *   partsDone: 1, partsSkipped: 0, partsTotal: 3, events: [],
 * }));
 * // "uploading 50% 1/3 parts (0 bytes resent)"
 * ```
 */
export interface ProgressSnapshot {
  /** Bytes of the file provably in final place; only grows, in whole-part steps. */
  completedBytes: number;
  /**
   * Part bytes that crossed the registry boundary (sent or received). Exceeds the file size
   * exactly when work was redone: a retried upload, a range the registry ignored, a restarted
   * part. Manifest and config bytes are not counted.
   */
  wireBytes: number;
  /** The file size. */
  totalBytes: number;
  /** The stage the transfer is in. */
  phase: ProgressPhase;
  /**
   * `completedBytes` plus the bytes of parts in flight that landed in their current attempt
   * (sent, or received and written): moves smoothly, never decreases, never exceeds
   * `totalBytes`. A restarted attempt holds it still until the part catches up again.
   */
  transferredBytes?: number;
  /** Parts in final place, those already present included. */
  partsDone?: number;
  /** Parts that needed no transfer: already in the registry (push) or on disk (pull). */
  partsSkipped?: number;
  /** The artifact's part count. */
  partsTotal?: number;
  /** Part events since the previous snapshot, in the order they happened. */
  events?: readonly PartEvent[];
}

/**
 * A progress callback. Called synchronously on the transfer's own path, at most about ten
 * times a second, plus once per phase change (the last call has the phase `"done"`); no call
 * happens after the transfer settled.
 *
 * @example Passing a callback to a transfer
 * ```ts
 * import type { ProgressCallback } from "@ocipart/ocipart";
 * const onProgress: ProgressCallback = (s) => console.log(s.phase, s.completedBytes, s.totalBytes);
 * // await client.push(ref, fromFile(path), { onProgress });
 * onProgress({ phase: "done", completedBytes: 10, wireBytes: 10, totalBytes: 10 });
 * ```
 */
export type ProgressCallback = (snapshot: ProgressSnapshot) => void;

/** At most one snapshot per this many milliseconds, besides phase changes. */
const MIN_INTERVAL_MS = 100;

/**
 * Keeps a transfer's counters and delivers snapshots to the callback: at once on a phase
 * change, otherwise at most every 100 ms (a change held back is delivered when the interval
 * ends, so a stalled transfer still reports its latest state). A callback that throws fails
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
  #events: PartEvent[] = [];
  #phase: ProgressPhase;
  readonly #total: number;
  readonly #partsTotal: number;
  readonly #callback: ProgressCallback | undefined;
  readonly #now: () => number;
  #lastEmitAt = -Infinity;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** The first error the callback threw, if any. */
  failure: unknown = undefined;
  /** Called once with the callback's first error. */
  onFailure: ((err: unknown) => void) | undefined = undefined;

  /** Creates a tracker for a file of `totalBytes` in `partsTotal` parts, starting in `phase`. */
  constructor(
    totalBytes: number,
    partsTotal: number,
    phase: ProgressPhase,
    callback?: ProgressCallback,
    now: () => number = () => performance.now(),
  ) {
    this.#total = totalBytes;
    this.#partsTotal = partsTotal;
    this.#phase = phase;
    this.#callback = callback;
    this.#now = now;
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
      events: [...this.#events],
    };
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

  /** Starts a new attempt of part `index` from its byte 0. */
  restartPart(index: number): void {
    this.#inFlightBytes -= this.#inFlight.get(index) ?? 0;
    this.#inFlight.delete(index);
  }

  /** Counts part `index` of `size` bytes as in final place, for the reason `kind`. */
  completePart(index: number, size: number, kind: PartEvent["kind"]): void {
    this.restartPart(index);
    this.#completed += size;
    this.#partsDone++;
    if (kind === "exists" || kind === "resumed") this.#partsSkipped++;
    this.#events.push({ kind, index, size });
    this.#raiseTransferred();
    this.#changed();
  }

  /** Ends all callbacks (a held-back snapshot is dropped: the transfer has settled). */
  close(): void {
    this.#closed = true;
    this.#cancelTimer();
  }

  #raiseTransferred(): void {
    const now = Math.min(this.#total, this.#completed + this.#inFlightBytes);
    if (now > this.#transferred) this.#transferred = now;
  }

  /** A counter moved: report now if the interval passed, else once it has. */
  #changed(): void {
    if (this.#callback === undefined || this.#closed || this.#timer !== undefined) return;
    const wait = MIN_INTERVAL_MS - (this.#now() - this.#lastEmitAt);
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
