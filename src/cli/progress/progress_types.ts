/**
 * The shapes shared by the progress renderers.
 *
 * @module
 */

import type { PartEvent } from "../../parted/mod.ts";

/** One progress snapshot of a parted transfer, as the library reports it. */
export interface TransferSnapshot {
  /** Bytes of the file provably in final place; only grows, in whole-part steps. */
  completedBytes: number;
  /** Bytes that crossed the registry boundary; exceeds the file size when work is redone. */
  wireBytes: number;
  /** The file size. */
  totalBytes: number;
  /** The transfer's phase; `"done"` once the transfer finished. */
  phase: string;
  /** Placed bytes plus those landed by parts in flight; never decreases. */
  transferredBytes?: number;
  /** Parts in final place. */
  partsDone?: number;
  /** Parts that needed no transfer. */
  partsSkipped?: number;
  /** The part count. */
  partsTotal?: number;
  /** Parts whose bytes are moving now. */
  partsActive?: number;
  /** Bytes a resumed pull found on disk and will not fetch again. */
  resumedBytes?: number;
  /** The check of the partial file is over (`false` while it runs; absent outside a pull). */
  resumeChecked?: boolean;
  /** The file a pull writes (registry-named inside a directory); absent outside a pull. */
  path?: string;
  /** Part events since the previous snapshot. */
  events?: readonly PartEvent[];
}

/** Shows progress on standard error. */
export interface ProgressRenderer {
  /** Takes a snapshot; may or may not draw it (renderers throttle). */
  update(snapshot: TransferSnapshot): void;
  /** Draws the final state unconditionally and ends the output; `exitCode` is the CLI's exit. */
  finish(exitCode: number): void;
  /**
   * The transfer is being stopped (a signal or the time limit): a renderer that redraws a line
   * in place ends it now, cleanly, and draws no more; `finish` still follows.
   */
  interrupt(): void;
}

/** Where and how renderers draw. */
export interface RendererOptions {
  /** Writes text to standard error (or a test buffer). */
  write: (text: string) => void;
  /** Monotonic milliseconds; defaults to `performance.now`. */
  now?: () => number;
  /** The terminal width in columns; asked before every draw. Defaults to 80. */
  columns?: () => number;
  /**
   * Runs `callback` after `delayMs` and returns a cancel function; defaults to `setTimeout`.
   * Throttled renderers use it to draw a held-back snapshot when no further one arrives (a
   * stalled transfer must still show its latest state).
   */
  schedule?: (callback: () => void, delayMs: number) => () => void;
}

/**
 * The default {@linkcode RendererOptions.schedule}: `setTimeout` with `clearTimeout` as cancel;
 * the timer does not keep the process alive.
 *
 * @example
 * ```ts
 * import { defaultSchedule } from "./progress_types.ts";
 * const cancel = defaultSchedule(() => console.log("never"), 1000);
 * cancel();
 * ```
 */
export function defaultSchedule(callback: () => void, delayMs: number): () => void {
  const id = setTimeout(callback, delayMs);
  // A redraw is never a reason to keep the process running.
  Deno.unrefTimer(id);
  return () => clearTimeout(id);
}
