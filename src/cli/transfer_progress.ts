/**
 * The progress display of a transfer command, wired to the terminal.
 *
 * @module
 */
import type { ProgressSnapshot } from "../parted/progress.ts";
import type { ProgressMode } from "./args.ts";
import { noticeWrite, terminalColumns } from "./io.ts";
import { createProgressRenderer } from "./progress.ts";

/** The progress hooks of one transfer. */
export interface TransferProgress {
  /** The library's progress callback, or undefined when nothing is shown. */
  readonly onProgress: ((snapshot: ProgressSnapshot) => void) | undefined;
  /** Ends the display with the command's exit code. */
  readonly finish: (code: number) => void;
}

/**
 * The display `mode` asks for, on standard error.
 *
 * @example
 * ```ts
 * import { transferProgress } from "./transfer_progress.ts";
 * const progress = transferProgress("none");
 * console.log(progress.onProgress); // undefined
 * ```
 */
export function transferProgress(mode: ProgressMode): TransferProgress {
  const renderer = createProgressRenderer(
    mode,
    { write: noticeWrite, columns: terminalColumns },
    Deno.stderr.isTerminal(),
  );
  return {
    onProgress: renderer ? (snapshot) => renderer.update(snapshot) : undefined,
    finish: (code) => renderer?.finish(code),
  };
}
