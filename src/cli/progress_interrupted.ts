/**
 * The sentence a stopped transfer ends with: what it kept and how to resume.
 *
 * @module
 */
import { terminalText } from "../registry/untrusted_text.ts";
import { formatBytes } from "./format.ts";
import type { TransferSnapshot } from "./progress_types.ts";

/** Which transfer was stopped, with what its sentence names. */
export type StoppedTransfer =
  | {
    readonly kind: "pull";
    /** The destination as the user typed it. */
    readonly destination: string;
    /** The destination is a directory: the partial file is named by the artifact. */
    readonly intoDirectory: boolean;
  }
  | { readonly kind: "push" | "copy" | "verify" };

const RESUME = "run the same command to resume";

/**
 * The line a transfer stopped by a signal ends with, from its last snapshot: what is kept, and
 * that running the same command resumes. A pull keeps its verified parts, the written
 * beginnings of the parts in flight and what a resume found on disk in `<dest>.parted-partial`; a push or a copy leaves its parts in the registry,
 * which the rerun finds and skips. A verification changes nothing and says nothing more.
 *
 * @example
 * ```ts
 * import { interruptedLine } from "./progress_interrupted.ts";
 * const last = {
 *   phase: "downloading", completedBytes: 3 * 2 ** 29, wireBytes: 0, totalBytes: 3 * 2 ** 30,
 *   partsDone: 3, partsTotal: 6,
 * };
 * console.log(interruptedLine({ kind: "pull", destination: "w.bin", intoDirectory: false }, last));
 * // "interrupted: 3 of 6 parts (1.50 GiB of 3.00 GiB) kept in w.bin.parted-partial; run the same command to resume"
 * ```
 */
export function interruptedLine(
  transfer: StoppedTransfer,
  last: TransferSnapshot | undefined,
): string | undefined {
  if (transfer.kind === "verify") return undefined;
  const parts = last?.partsDone ?? 0;
  // A pull writes each part in order, and a rerun continues a part from what it wrote: the
  // bytes that landed in parts still in flight are kept too.
  const landed = transfer.kind === "pull" ? last?.transferredBytes ?? 0 : 0;
  const bytes = Math.max(last?.completedBytes ?? 0, last?.resumedBytes ?? 0, landed);
  if (last === undefined || (parts === 0 && bytes === 0)) {
    // A pull's partial file may hold part prefixes a rerun continues from: it resumes.
    if (transfer.kind === "pull") return `interrupted before any part was complete; ${RESUME}`;
    const what = transfer.kind === "push" ? "uploaded" : "copied";
    return `interrupted before any part was ${what}; run the same command to start again`;
  }
  const count = `${parts} of ${last.partsTotal ?? "?"} ${last.partsTotal === 1 ? "part" : "parts"}`;
  const amount = `(${formatBytes(bytes)} of ${formatBytes(last.totalBytes)})`;
  switch (transfer.kind) {
    case "pull": {
      const where = transfer.intoDirectory
        ? `the .parted-partial file in ${terminalText(transfer.destination)}`
        : `${terminalText(transfer.destination)}.parted-partial`;
      return `interrupted: ${count} ${amount} kept in ${where}; ${RESUME}`;
    }
    case "push":
      return `interrupted: ${count} ${amount} uploaded; ` +
        `parts already uploaded are kept by the registry; ${RESUME}`;
    case "copy":
      return `interrupted: ${count} ${amount} copied; ` +
        `parts already copied are kept by the target registry; ${RESUME}`;
  }
}
