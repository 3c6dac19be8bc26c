/**
 * Progress reporting of one transfer: committed progress that only grows, wire deltas, and a
 * gate that stops every call once the transfer has returned.
 *
 * @module
 */
import type { ProgressSnapshot } from "../remote/progress_snapshot.ts";
import { PROGRESS_INTERVAL_MS } from "../remote/session.ts";

/**
 * Cumulative committed progress: `done` bytes of `total` (−1 when the total is unknown), as the
 * blob specification has it (docs/protocol.md#blob-operations), and the same as a
 * `ProgressSnapshot`, the one shape `PartedClient` reports too: a `ProgressCallback` serves both
 * clients as `(_done, _total, s) => render(s)`.
 * A pull calls it at most about ten times a second plus the call that reaches the total; a
 * push once per acknowledged upload step.
 *
 * @example A percentage, when the total is known
 * ```ts
 * import type { BlobProgressCallback } from "@ocipart/ocipart";
 * const onProgress: BlobProgressCallback = (done, total, snapshot) =>
 *   console.log(total < 0 ? `${done} bytes` : `${snapshot.phase} ${Math.floor((100 * done) / total)}%`);
 * onProgress(50, 200, {
 *   completedBytes: 50, transferredBytes: 50, wireBytes: 50, totalBytes: 200, phase: "downloading",
 * }); // "downloading 25%"
 * ```
 *
 * @example One snapshot handler for both clients
 * ```ts
 * import type { BlobProgressCallback, ProgressCallback } from "@ocipart/ocipart";
 * const render: ProgressCallback = (s) => console.log(s.phase, s.completedBytes, s.totalBytes);
 * const onProgress: BlobProgressCallback = (_done, _total, snapshot) => render(snapshot);
 * // new PartedClient().pull(ref, to, { onProgress: render });
 * // new BlobClient().pull(repository, digest, { onProgress });
 * onProgress(5, 10, { completedBytes: 5, wireBytes: 5, totalBytes: 10, phase: "downloading" });
 * // "downloading 5 10"
 * ```
 */
export type BlobProgressCallback = (
  done: number,
  total: number,
  snapshot: ProgressSnapshot,
) => void;

/**
 * A positive number of upload bytes the transport consumed since the previous call.
 *
 * @example Counting upload bytes, retries included
 * ```ts
 * import type { WireProgressCallback } from "@ocipart/ocipart";
 * let sent = 0;
 * const onWireProgress: WireProgressCallback = (delta) => (sent += delta);
 * onWireProgress(1024);
 * console.log(sent); // 1024
 * ```
 */
export type WireProgressCallback = (delta: number) => void;

/**
 * Calls the progress callbacks of one transfer. Calls run synchronously on the transfer path
 * (or from the throttle's timer), so they never overlap; committed progress never goes
 * backwards; with `throttle`, a call that neither starts nor reaches the total waits until
 * 100 ms passed since the previous one (the latest value is delivered then); after
 * {@linkcode close} no callback runs any more, whatever a late body read does.
 *
 * @example
 * ```ts
 * import { ProgressReporter } from "./progress.ts";
 * const seen: number[] = [];
 * const progress = new ProgressReporter((done) => seen.push(done), undefined, "downloading");
 * progress.committed(5, 10);
 * progress.committed(3, 10); // ignored: never backwards
 * progress.close();
 * progress.committed(10, 10); // ignored: closed
 * console.log(seen); // [5]
 * ```
 */
export class ProgressReporter {
  #onProgress: BlobProgressCallback | undefined;
  #onWire: WireProgressCallback | undefined;
  readonly #phase: "uploading" | "downloading";
  readonly #throttle: boolean;
  #done = -1;
  #total = -1;
  #wire = 0;
  #pending: { done: number; total: number } | undefined;
  #lastCallAt = -Infinity;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** Creates a reporter for the given optional callbacks of a transfer in `phase`. */
  constructor(
    onProgress?: BlobProgressCallback,
    onWireProgress?: WireProgressCallback,
    phase: "uploading" | "downloading" = "uploading",
    throttle = false,
  ) {
    this.#onProgress = onProgress;
    this.#onWire = onWireProgress;
    this.#phase = phase;
    this.#throttle = throttle;
  }

  /** Reports cumulative committed progress if it grew (or the total became known). */
  committed(done: number, total: number): void {
    if (this.#closed || this.#onProgress === undefined || done < this.#done) return;
    if (done === this.#done && total === this.#total) return;
    const wait = PROGRESS_INTERVAL_MS - (performance.now() - this.#lastCallAt);
    if (!this.#throttle || this.#done < 0 || done === total || wait <= 0) {
      this.#call(done, total);
      return;
    }
    this.#pending = { done, total };
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      const pending = this.#pending;
      if (pending !== undefined && !this.#closed) this.#call(pending.done, pending.total);
    }, wait);
  }

  /** Reports a positive wire delta. */
  wire(delta: number): void {
    if (this.#closed || delta <= 0) return;
    this.#wire += delta;
    this.#onWire?.(delta);
  }

  /** Stops all further calls. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #call(done: number, total: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending = undefined;
    this.#done = done;
    this.#total = total;
    this.#lastCallAt = performance.now();
    // A pull's wire bytes are the bytes it delivered; a push counts what the transport sent.
    const wire = this.#phase === "uploading" ? this.#wire : done;
    this.#onProgress!(done, total, {
      completedBytes: done,
      transferredBytes: done,
      wireBytes: wire,
      totalBytes: total,
      phase: this.#phase,
    });
  }
}
