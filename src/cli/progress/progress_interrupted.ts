/**
 * The sentence a stopped transfer's failure report has in place of the library's line: what it
 * kept and how to go on.
 *
 * @module
 */
import { terminalText } from "../../parted/mod.ts";
import { formatBytes } from "../words/format.ts";
import type { TransferSnapshot } from "./progress_types.ts";

/** Which transfer was stopped, with what its sentence names. */
export type StoppedTransfer =
  | {
    readonly kind: "pull";
    /** The destination as the user typed it. */
    readonly destination: string;
    /** The destination is a directory: the partial file is named by the artifact. */
    readonly intoDirectory: boolean;
    /** The partial file's suffix (default `.parted-partial`; a blob pull's `.blob-partial`). */
    readonly partialSuffix?: string;
    /** The pull writes to standard output: nothing is kept to resume from. */
    readonly toStdout?: boolean;
  }
  | {
    readonly kind: "push";
    /** The push reads standard input: its size is known only at its end. */
    readonly fromStdin?: boolean;
  }
  | { readonly kind: "copy" | "verify" };

const RESUME = "run the same command to resume";

/** `3 of 6 parts`, or `1 of 1 part`. */
function partCount(done: number, total: number | undefined): string {
  return `${done} of ${total ?? "?"} ${total === 1 ? "part" : "parts"}`;
}

/**
 * The pull's partial file: `<file>.parted-partial`, the file as the pull's snapshots name it
 * (inside a directory, the artifact's title, escaped like any registry text), else as typed.
 */
function partialOf(transfer: StoppedTransfer & { kind: "pull" }, last?: TransferSnapshot) {
  const suffix = transfer.partialSuffix ?? ".parted-partial";
  if (last?.path !== undefined) return `${terminalText(last.path)}${suffix}`;
  const typed = terminalText(transfer.destination);
  return transfer.intoDirectory ? `the ${suffix} file in ${typed}` : `${typed}${suffix}`;
}

function pullLine(
  transfer: StoppedTransfer & { kind: "pull" },
  last: TransferSnapshot | undefined,
): string {
  if (transfer.toStdout === true) {
    const parts = last?.partsDone ?? 0;
    const written = parts > 0 ? `${partCount(parts, last?.partsTotal)} written; ` : "";
    return `${written}a pull to standard output keeps nothing to resume from; ` +
      "run the same command to start again";
  }
  const partial = partialOf(transfer, last);
  // The check of an earlier pull's partial was still running: what it counted is not all.
  if (last?.resumeChecked === false) {
    return `the check of ${partial} was not finished; the file is kept; ${RESUME}`;
  }
  // Parts land in order and a rerun continues a part from what it wrote: the bytes of parts
  // still in flight are kept too, as are those a resume found on disk.
  const bytes = Math.max(
    last?.completedBytes ?? 0,
    last?.resumedBytes ?? 0,
    last?.transferredBytes ?? 0,
  );
  if (last === undefined || bytes === 0) return `no part was complete yet; ${RESUME}`;
  const parts = partCount(last.partsDone ?? 0, last.partsTotal);
  return `${formatBytes(bytes)} of ${formatBytes(last.totalBytes)} kept (${parts} complete) in ` +
    `${partial}; ${RESUME}`;
}

/**
 * A push from standard input stopped: the parts cut so far are all it knows (the input had not
 * ended, so "of N" would read as a push that was nearly done).
 */
function stdinPushLine(last: TransferSnapshot | undefined): string {
  const parts = last?.partsDone ?? 0;
  const bytes = last?.completedBytes ?? 0;
  if (parts === 0) return "no part was uploaded yet and no manifest written; run it again";
  return `${parts} ${parts === 1 ? "part" : "parts"} (${formatBytes(bytes)}) of the input ` +
    "uploaded and kept by the registry, no manifest written; the same command with the same " +
    "input skips them";
}

/**
 * The line a transfer stopped by a signal reports, from its last snapshot: what is kept and how
 * to go on. A pull keeps its verified parts, the written beginnings of the parts in flight and
 * what a resume found on disk, in its partial file, named by its path; a push or a copy leaves
 * its parts in the registry, which the rerun finds and skips; a verification says how far it
 * got.
 *
 * @example
 * ```ts
 * import { interruptedLine } from "./progress_interrupted.ts";
 * const last = {
 *   phase: "downloading", completedBytes: 0, transferredBytes: 172 * 2 ** 20, wireBytes: 0,
 *   totalBytes: 300 * 2 ** 20, partsDone: 0, partsTotal: 5, path: "downloads/weights.bin",
 * };
 * const pull = { kind: "pull", destination: "downloads", intoDirectory: true } as const;
 * console.log(interruptedLine(pull, last));
 * // "172 MiB of 300 MiB kept (0 of 5 parts complete) in downloads/weights.bin.parted-partial;
 * //  run the same command to resume" (one line)
 * ```
 */
export function interruptedLine(
  transfer: StoppedTransfer,
  last: TransferSnapshot | undefined,
): string {
  if (transfer.kind === "pull") return pullLine(transfer, last);
  if (transfer.kind === "push" && transfer.fromStdin === true) return stdinPushLine(last);
  const parts = last?.partsDone ?? 0;
  const count = partCount(parts, last?.partsTotal);
  switch (transfer.kind) {
    case "verify":
      return parts === 0
        ? "no part was compared yet; run the same command to compare the file"
        : `${count} compared; run the same command to compare every part`;
    case "push":
    case "copy": {
      const bytes = last?.completedBytes ?? 0;
      const what = transfer.kind === "push" ? "uploaded" : "copied";
      if (last === undefined || (parts === 0 && bytes === 0)) {
        return `no part was ${what} yet; run the same command to start again`;
      }
      const where = transfer.kind === "push" ? "the registry" : "the target registry";
      return `${count} (${formatBytes(bytes)} of ${formatBytes(last.totalBytes)}) ${what} ` +
        `and kept by ${where}; ${RESUME}`;
    }
  }
}
