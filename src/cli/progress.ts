/**
 * Chooses the progress renderer for a `--progress` mode.
 *
 * @module
 */
import type { ProgressMode } from "./args.ts";
import { JsonProgress } from "./progress_json.ts";
import { PlainProgress } from "./progress_plain.ts";
import { ProgressBar } from "./progress_bar.ts";
import type { ProgressRenderer, RendererOptions } from "./progress_types.ts";

/**
 * Returns the renderer of `mode`, or undefined for `none`. `auto` is the bar when standard error
 * is a terminal (`isTerminal`), and nothing otherwise, so logs and pipes stay clean.
 *
 * @example
 * ```ts
 * import { createProgressRenderer } from "./progress.ts";
 * const r = createProgressRenderer("auto", { write: () => {} }, false);
 * console.log(r); // undefined
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
      return isTerminal ? new ProgressBar(options) : undefined;
    case "none":
      return undefined;
  }
}
