/**
 * Progress reporting of one transfer: committed progress that only grows, wire deltas, and a
 * gate that stops every call once the transfer has returned.
 *
 * @module
 */

/**
 * Cumulative committed progress: `done` bytes of `total` (−1 when the total is unknown).
 *
 * @example A percentage, when the total is known
 * ```ts
 * import type { BlobProgressCallback } from "@ocipart/ocipart";
 * const onProgress: BlobProgressCallback = (done, total) =>
 *   console.log(total < 0 ? `${done} bytes` : `${Math.floor((100 * done) / total)}%`);
 * onProgress(50, 200); // "25%"
 * ```
 */
export type BlobProgressCallback = (done: number, total: number) => void;

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
 * Calls the progress callbacks of one transfer. Calls run synchronously on the transfer path,
 * so they never overlap; committed progress never goes backwards; after {@linkcode close} no
 * callback runs any more, whatever a late body read does.
 *
 * @example
 * ```ts
 * import { ProgressReporter } from "./progress.ts";
 * const seen: number[] = [];
 * const progress = new ProgressReporter((done) => seen.push(done));
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
  #done = -1;
  #total = -1;
  #closed = false;

  /** Creates a reporter for the given optional callbacks. */
  constructor(onProgress?: BlobProgressCallback, onWireProgress?: WireProgressCallback) {
    this.#onProgress = onProgress;
    this.#onWire = onWireProgress;
  }

  /** Reports cumulative committed progress if it grew (or the total became known). */
  committed(done: number, total: number): void {
    if (this.#closed || this.#onProgress === undefined || done < this.#done) return;
    if (done === this.#done && total === this.#total) return;
    this.#done = done;
    this.#total = total;
    this.#onProgress(done, total);
  }

  /** Reports a positive wire delta. */
  wire(delta: number): void {
    if (this.#closed || this.#onWire === undefined || delta <= 0) return;
    this.#onWire(delta);
  }

  /** Stops all further calls. */
  close(): void {
    this.#closed = true;
  }
}
