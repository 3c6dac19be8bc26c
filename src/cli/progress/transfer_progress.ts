/**
 * The progress display of a transfer command, wired to the terminal.
 *
 * @module
 */
import type { ProgressSnapshot } from "../../parted/mod.ts";
import type { ProgressMode } from "../arguments/args.ts";
import { noticeWrite, terminalColumns } from "../session/io.ts";
import { createProgressRenderer } from "./progress.ts";
import { ProgressBar } from "./progress_bar.ts";
import { interruptedLine, type StoppedTransfer } from "./progress_interrupted.ts";
import type { TransferSnapshot } from "./progress_types.ts";

/** The progress hooks of one transfer. */
export interface TransferProgress {
  /** The library's progress callback (kept even without a display: a stop names the counts). */
  readonly onProgress: (snapshot: ProgressSnapshot) => void;
  /** Ends the display with the command's exit code. */
  readonly finish: (code: number) => void;
  /** Ends the display's line at once when `signal` aborts (Ctrl-C, SIGTERM, the time limit). */
  readonly watch: (signal: AbortSignal) => void;
  /** After a stop signal: what was kept and how to go on, from the last snapshot. */
  readonly stoppedLine: () => string;
  /** The file a pull writes, once its snapshots name it (inside a directory, the artifact's). */
  readonly pulledFile: () => string | undefined;
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
    },
    watch: (signal) => {
      if (signal.aborted) interrupt();
      else signal.addEventListener("abort", interrupt, { once: true });
    },
    stoppedLine: () => interruptedLine(transfer, last),
    pulledFile: () => last?.path,
  };
}
