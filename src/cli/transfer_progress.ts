/**
 * The progress display of a transfer command, wired to the terminal.
 *
 * @module
 */
import type { ProgressSnapshot } from "../parted/progress.ts";
import type { ProgressMode } from "./args.ts";
import { EXIT_CODES } from "./exit_code.ts";
import { noticeWrite, terminalColumns } from "./io.ts";
import { createProgressRenderer } from "./progress.ts";
import { ProgressBar } from "./progress_bar.ts";
import { interruptedLine, type StoppedTransfer } from "./progress_interrupted.ts";
import type { TransferSnapshot } from "./progress_types.ts";

/** The progress hooks of one transfer. */
export interface TransferProgress {
  /** The library's progress callback (kept even without a display: a stop names the counts). */
  readonly onProgress: (snapshot: ProgressSnapshot) => void;
  /**
   * Ends the display with the command's exit code; after a stop by SIGINT or SIGTERM (130,
   * 143), adds the line that says what was kept and that the same command resumes.
   */
  readonly finish: (code: number) => void;
  /** Ends the display's line at once when `signal` aborts (Ctrl-C, SIGTERM, the time limit). */
  readonly watch: (signal: AbortSignal) => void;
}

/**
 * The display `mode` asks for, on standard error, for the transfer `transfer` names.
 *
 * @example
 * ```ts
 * import { transferProgress } from "./transfer_progress.ts";
 * const progress = transferProgress("none", { kind: "push" });
 * progress.onProgress({ phase: "done", completedBytes: 1, wireBytes: 1, totalBytes: 1 });
 * progress.finish(0);
 * ```
 */
export function transferProgress(mode: ProgressMode, transfer: StoppedTransfer): TransferProgress {
  const terminal = Deno.stderr.isTerminal();
  const renderer = createProgressRenderer(
    mode,
    { write: noticeWrite, columns: terminalColumns },
    terminal,
  );
  let last: TransferSnapshot | undefined;
  let finished = false;
  const interrupt = () => {
    if (finished) return;
    renderer?.interrupt();
    // The terminal echoed `^C` where the cursor was: start the next line clean.
    if (terminal && !(renderer instanceof ProgressBar)) noticeWrite("\r\x1b[K");
  };
  return {
    onProgress: (snapshot) => {
      last = snapshot;
      renderer?.update(snapshot);
    },
    finish: (code) => {
      if (finished) return;
      finished = true;
      renderer?.finish(code);
      if (code !== EXIT_CODES.sigint && code !== EXIT_CODES.sigterm) return;
      const line = interruptedLine(transfer, last);
      if (line !== undefined) noticeWrite(`${line}\n`);
    },
    watch: (signal) => {
      if (signal.aborted) interrupt();
      else signal.addEventListener("abort", interrupt, { once: true });
    },
  };
}
