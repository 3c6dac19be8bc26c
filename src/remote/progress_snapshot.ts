/**
 * The progress snapshot both clients report.
 *
 * @module
 */

/**
 * The stage a transfer is in; the end of a parted transfer is a phase, not a byte count.
 * `BlobClient` reports `uploading` or `downloading`: its transfer ends when its promise
 * resolves or its stream closes.
 *
 * @example Reporting phase changes only
 * ```ts
 * import type { ProgressPhase, ProgressSnapshot } from "@ocipart/ocipart";
 * let last: ProgressPhase | undefined;
 * const onProgress = (s: ProgressSnapshot) => {
 *   if (s.phase !== last) console.log((last = s.phase));
 * };
 * onProgress({ phase: "hashing", completedBytes: 0, wireBytes: 0, totalBytes: 10 });
 * ```
 */
export type ProgressPhase =
  | "resolving"
  | "hashing"
  | "uploading"
  | "config"
  | "manifest"
  | "verifying"
  | "downloading"
  | "committing"
  | "done";

/**
 * What happened to one part: on push it was already in the registry (`"exists"`) or was
 * uploaded (`"uploaded"`); on pull it was already in the partial file of an earlier pull
 * (`"resumed"`) or was fetched and matched its digest (`"verified"`).
 *
 * @example One log line per part
 * ```ts
 * import type { PartEvent } from "@ocipart/ocipart";
 * const line = (e: PartEvent) => `part ${e.index + 1}: ${e.kind} (${e.size} bytes)`;
 * console.log(line({ kind: "uploaded", index: 0, size: 10 })); // "part 1: uploaded (10 bytes)"
 * ```
 */
export interface PartEvent {
  /** What happened to the part. */
  kind: "exists" | "uploaded" | "mounted" | "resumed" | "verified";
  /** The part's index in file order, from 0. */
  index: number;
  /** The part's size in bytes. */
  size: number;
}

/**
 * What the progress callbacks of both clients receive (`PartedClient` as its argument,
 * `BlobClient` as the third argument after `done` and `total`). `completedBytes`, `wireBytes`,
 * `totalBytes` and `phase` are always there, and `transferredBytes` from both clients; the
 * part fields come from `PartedClient` only. They are optional in the type so hand-built
 * snapshots of the older shape still type-check.
 *
 * @example A percentage, parts done and the bytes redone
 * ```ts
 * import type { ProgressSnapshot } from "@ocipart/ocipart";
 * const describe = (s: ProgressSnapshot) =>
 *   `${s.phase} ${Math.floor((100 * (s.transferredBytes ?? s.completedBytes)) / Math.max(s.totalBytes, 1))}%` +
 *   ` ${s.partsDone ?? 0}/${s.partsTotal ?? 0} parts` +
 *   ` (${Math.max(0, s.wireBytes - s.totalBytes)} bytes resent)`;
 * console.log(describe({
 *   phase: "uploading", completedBytes: 4, transferredBytes: 5, wireBytes: 5, totalBytes: 10,
 *   partsDone: 1, partsSkipped: 0, partsTotal: 3, events: [],
 * }));
 * // "uploading 50% 1/3 parts (0 bytes resent)"
 * ```
 */
export interface ProgressSnapshot {
  /** Bytes of the file provably in final place; only grows, in whole-part steps. */
  completedBytes: number;
  /**
   * Part bytes that crossed the registry boundary (sent or received). Exceeds the file size
   * exactly when work was redone: a retried upload, a range the registry ignored, a restarted
   * part. Manifest and config bytes are not counted.
   */
  wireBytes: number;
  /** The file size (blob: the blob's size, or −1 while a pull does not know it). */
  totalBytes: number;
  /** The stage the transfer is in. */
  phase: ProgressPhase;
  /**
   * `completedBytes` plus the bytes of parts in flight that landed in their current attempt
   * (sent, or received and written): moves smoothly, never decreases, never exceeds
   * `totalBytes`. A restarted attempt holds it still until the part catches up again.
   */
  transferredBytes?: number;
  /** Parts in final place, those already present included. */
  partsDone?: number;
  /** Parts that needed no transfer: already in the registry (push) or on disk (pull). */
  partsSkipped?: number;
  /** The artifact's part count. */
  partsTotal?: number;
  /**
   * Parts whose bytes are moving now: sent, received or hashed in their current attempt and not
   * yet in final place. When every part runs at once, this is what moves before the first part
   * is done.
   */
  partsActive?: number;
  /** Part events since the previous snapshot, in the order they happened. */
  events?: readonly PartEvent[];
  /**
   * Pull only, in every snapshot of a `PartedClient` pull: bytes that a resume found on disk
   * and will not fetch again, that is the parts of the partial file that matched their digest
   * plus the written beginnings of parts the pull continues from there. Each part's share is
   * counted as the resume pass finds it, before that part is fetched; it is 0 when there was
   * nothing to resume. It drops when a beginning turns out not to match its part, which is then
   * fetched whole.
   */
  resumedBytes?: number;
  /**
   * Pull only, in every snapshot of a `PartedClient` pull: true once the partial file of an
   * interrupted pull has been checked (at once when there was none), so `resumedBytes` then
   * holds all it found. The check overlaps the first downloads, so before this `resumedBytes`
   * is still growing.
   */
  resumeChecked?: boolean;
  /**
   * Pull only, in every snapshot of a `PartedClient` pull: the file the pull writes, as
   * `PullResult.path` will name it (the destination, or inside a directory the file named by the
   * artifact's title, which the registry chose: escape it before it reaches a terminal). Until
   * the pull commits, its bytes are in `<path>.parted-partial`, where an interrupted pull leaves
   * them for the next one.
   */
  path?: string;
}

/**
 * The progress callback of `PartedClient`. Called synchronously on the transfer's own path, at
 * most about ten times a second, plus once per phase change (the last call has the phase
 * `"done"`) and, in a pull, once when the check of the partial file ends (`resumeChecked`); no
 * call happens after the transfer settled.
 *
 * @example Passing a callback to a transfer
 * ```ts
 * import type { ProgressCallback } from "@ocipart/ocipart";
 * const onProgress: ProgressCallback = (s) => console.log(s.phase, s.completedBytes, s.totalBytes);
 * // await client.push(ref, fromFile(path), { onProgress });
 * onProgress({ phase: "done", completedBytes: 10, wireBytes: 10, totalBytes: 10 });
 * ```
 */
export type ProgressCallback = (snapshot: ProgressSnapshot) => void;
