/**
 * The numbers a person reads from a progress snapshot.
 *
 * @module
 */
import { formatBytes } from "../words/format.ts";
import type { TransferSnapshot } from "./progress_types.ts";

/** What the progress displays show. */
export interface ProgressStatus {
  /** 0..1; exactly 1 only once the transfer is done. */
  fraction: number;
  /** Bytes to show as done: the larger of placed and transferred bytes, at most the total. */
  shownBytes: number;
  /** Seconds left at `rate`, or undefined when the rate is unknown or zero. */
  etaSeconds: number | undefined;
}

/**
 * Derives the displayed fraction and ETA. Placed bytes (`completedBytes`) move in whole-part
 * steps, so while parts are in flight the bytes landed (`transferredBytes`; from a reporter
 * without it, `wireBytes`), capped at the total, give a smooth estimate. The fraction stays below 100% until the phase is `"done"`, because
 * the last part can be in place while the manifest write still retries.
 *
 * @example
 * ```ts
 * import { progressStatus } from "./progress_status.ts";
 * const s = { completedBytes: 0, wireBytes: 50, totalBytes: 100, phase: "uploading" };
 * console.log(progressStatus(s, 10)); // { fraction: 0.5, shownBytes: 50, etaSeconds: 5 }
 * ```
 */
export function progressStatus(
  snapshot: TransferSnapshot,
  rate: number | undefined,
): ProgressStatus {
  const total = Math.max(0, snapshot.totalBytes);
  if (snapshot.phase === "done") return { fraction: 1, shownBytes: total, etaSeconds: 0 };
  const moving = snapshot.transferredBytes ?? snapshot.wireBytes;
  const shownBytes = Math.min(total, Math.max(snapshot.completedBytes, moving, 0));
  const fraction = total === 0 ? 0 : Math.min(0.999, shownBytes / total);
  const etaSeconds = rate !== undefined && rate > 0 ? (total - shownBytes) / rate : undefined;
  return { fraction, shownBytes, etaSeconds };
}

/**
 * The sentence about parts that needed no transfer (`7 of 8 parts already present`), or
 * undefined when every part was transferred or the reporter does not count parts.
 *
 * @example
 * ```ts
 * import { skippedPartsLine } from "./progress_status.ts";
 * const s = { completedBytes: 8, wireBytes: 1, totalBytes: 8, phase: "done", partsSkipped: 7, partsTotal: 8 };
 * console.log(skippedPartsLine(s)); // "7 of 8 parts already present"
 * ```
 */
export function skippedPartsLine(snapshot: TransferSnapshot): string | undefined {
  const skipped = snapshot.partsSkipped ?? 0;
  if (skipped === 0 || snapshot.partsTotal === undefined) return undefined;
  const noun = snapshot.partsTotal === 1 ? "part" : "parts";
  return `${skipped} of ${snapshot.partsTotal} ${noun} already present`;
}

/**
 * What a resumed pull found on disk (`resuming: 2.10 GiB of 3.00 GiB on disk`), or undefined
 * when the snapshot does not say or nothing was found.
 *
 * @example
 * ```ts
 * import { resumingLine } from "./progress_status.ts";
 * const s = { completedBytes: 0, wireBytes: 0, totalBytes: 3 * 1024 ** 3, phase: "downloading", resumedBytes: 2.1 * 1024 ** 3 };
 * console.log(resumingLine(s)); // "resuming: 2.10 GiB of 3.00 GiB on disk"
 * ```
 */
export function resumingLine(snapshot: TransferSnapshot): string | undefined {
  // Said once the check of the partial file is over: before, the count is still growing.
  const found = snapshot.resumedBytes ?? 0;
  if (!(found > 0) || snapshot.resumeChecked === false) return undefined;
  return `resuming: ${formatBytes(found)} of ${formatBytes(snapshot.totalBytes)} on disk`;
}
