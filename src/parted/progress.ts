/**
 * Progress snapshots of a parted transfer.
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
 * What a progress callback receives.
 *
 * @example A percentage and the bytes redone
 * ```ts
 * import type { ProgressSnapshot } from "@ocipart/ocipart";
 * const describe = (s: ProgressSnapshot) =>
 *   `${s.phase} ${Math.floor((100 * s.completedBytes) / Math.max(s.totalBytes, 1))}%` +
 *   ` (${Math.max(0, s.wireBytes - s.totalBytes)} bytes resent)`;
 * console.log(describe({ phase: "uploading", completedBytes: 5, wireBytes: 5, totalBytes: 10 }));
 * // "uploading 50% (0 bytes resent)"
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
}

/**
 * A progress callback; called synchronously on the transfer's own path.
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

/**
 * Keeps a transfer's counters and delivers a fresh snapshot to the callback on every change.
 * A callback that throws fails the transfer: the first such error is kept in `failure` and
 * `onFailure` is called (the transfer aborts its work with it).
 *
 * @example
 * ```ts
 * import { ProgressTracker } from "./progress.ts";
 * const seen: number[] = [];
 * const tracker = new ProgressTracker(10, "hashing", (s) => seen.push(s.completedBytes));
 * tracker.completePart(10);
 * console.log(seen); // [10]
 * ```
 */
export class ProgressTracker {
  #completed = 0;
  #wire = 0;
  #phase: ProgressPhase;
  readonly #total: number;
  readonly #callback: ProgressCallback | undefined;
  /** The first error the callback threw, if any. */
  failure: unknown = undefined;
  /** Called once with the callback's first error. */
  onFailure: ((err: unknown) => void) | undefined = undefined;

  /** Creates a tracker for a file of `totalBytes` starting in `phase`. */
  constructor(totalBytes: number, phase: ProgressPhase, callback?: ProgressCallback) {
    this.#total = totalBytes;
    this.#phase = phase;
    this.#callback = callback;
  }

  /** The current snapshot (a fresh object). */
  get snapshot(): ProgressSnapshot {
    return {
      completedBytes: this.#completed,
      wireBytes: this.#wire,
      totalBytes: this.#total,
      phase: this.#phase,
    };
  }

  /** The current phase. */
  get phase(): ProgressPhase {
    return this.#phase;
  }

  /** Enters `phase` (no snapshot when it is the current one). */
  setPhase(phase: ProgressPhase): void {
    if (phase === this.#phase) return;
    this.#phase = phase;
    this.#emit();
  }

  /** Counts `bytes` more part bytes on the wire. */
  addWire(bytes: number): void {
    if (bytes <= 0) return;
    this.#wire += bytes;
    this.#emit();
  }

  /** Counts a part of `size` bytes as in final place. */
  completePart(size: number): void {
    this.#completed += size;
    this.#emit();
  }

  /** Emits a snapshot without changing anything (e.g. a zero-byte part completed). */
  #emit(): void {
    if (this.#callback === undefined || this.failure !== undefined) return;
    try {
      this.#callback(this.snapshot);
    } catch (err) {
      this.failure = err;
      this.onFailure?.(err);
    }
  }
}
