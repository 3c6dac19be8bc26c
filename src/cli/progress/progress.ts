/**
 * Chooses the progress renderer for a `--progress` mode.
 *
 * @module
 */
import type { ProgressMode } from "../arguments/args.ts";
import { JsonProgress } from "./progress_json.ts";
import { PlainProgress } from "./progress_plain.ts";
import { ProgressBar } from "./progress_bar.ts";
import type { ProgressRenderer, RendererOptions } from "./progress_types.ts";

/**
 * How often `--progress auto` writes a line when standard error is not a terminal (a CI log):
 * often enough that a log shows a long transfer is alive, rarely enough that an hour-long one
 * stays short to read.
 */
export const AUTO_LOG_INTERVAL_MS = 30_000;

/**
 * Returns the renderer of `mode`, or undefined for `none`. `auto` is the bar when standard error
 * is a terminal (`isTerminal`); otherwise, once the transfer has run 30 seconds, plain lines at
 * each phase change and at least every 30 seconds, ending with the final line, without the
 * per-part lines: a CI log shows a long transfer is alive, and a short one adds nothing to it.
 *
 * @example
 * ```ts
 * import { createProgressRenderer } from "./progress.ts";
 * import { ProgressBar } from "./progress_bar.ts";
 * const r = createProgressRenderer("auto", { write: () => {} }, true);
 * console.log(r instanceof ProgressBar); // true
 * ```
 */
export function createProgressRenderer(
  mode: ProgressMode,
  options: RendererOptions,
  isTerminal: boolean,
): ProgressRenderer | undefined {
  switch (mode) {
    case "bar":
      return new ProgressBar(options);
    case "plain":
      return new PlainProgress(options);
    case "json":
      return new JsonProgress(options);
    case "auto":
      return isTerminal ? new ProgressBar(options) : new PlainProgress(options, {
        intervalMs: AUTO_LOG_INTERVAL_MS,
        quietStartMs: AUTO_LOG_INTERVAL_MS,
        partLines: false,
      });
    case "none":
      return undefined;
  }
}
