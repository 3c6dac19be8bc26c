/**
 * Comparing a local file with a parted artifact, part by part, on hashing threads.
 *
 * @module
 */
import type { Connection } from "./connection.ts";
import { ProgressTracker } from "./progress.ts";
import type { PartInfo } from "./inspect.ts";
import { resolveManifest } from "./resolve_manifest.ts";
import { statSource } from "./fs_source.ts";
import type { TransferJob } from "./transfer_job.ts";

/**
 * One part of a verification: the artifact's digest and what the local file holds there.
 *
 * @example Finding differing parts
 * ```ts
 * import type { PartCheck } from "@ocipart/ocipart";
 * const differs = (p: PartCheck) => !p.matches;
 * console.log(typeof differs); // "function"
 * ```
 */
export interface PartCheck extends PartInfo {
  /** The digest of the local file's bytes of this part; undefined when the file is too short. */
  readonly localDigest: string | undefined;
  /** Whether the local bytes hash to the part's digest. */
  readonly matches: boolean;
}

/**
 * What {@linkcode PartedClient.verify} found.
 *
 * @example Summarising a report
 * ```ts
 * import type { VerifyReport } from "@ocipart/ocipart";
 * const summary = (r: VerifyReport) => r.identical ? "same" : `${r.differing.length} differ`;
 * console.log(typeof summary); // "function"
 * ```
 */
export interface VerifyReport {
  /** True when the sizes are equal and every part matches. */
  readonly identical: boolean;
  /** The artifact's file size. */
  readonly expectedSize: number;
  /** The local file's size. */
  readonly localSize: number;
  /** Every part, in file order. */
  readonly parts: readonly PartCheck[];
  /** The indexes of the parts that differ (or lie past the end of the local file). */
  readonly differing: readonly number[];
}

/** What the verify procedure needs. */
export interface VerifyJob extends TransferJob {
  /** The local file. */
  path: string;
}

/**
 * Resolves the manifest, then hashes each part's range of the local file, `job.workers` at a
 * time, on worker threads. Parts beyond the end of the local file count as differing. Progress
 * (`job.onProgress`): `verifying` from the manifest on, then `done`; a part counts in
 * `completedBytes` and `partsDone` once checked, whatever the verdict (no part events), and
 * `transferredBytes` follows the bytes hashed so far; nothing crosses the wire.
 *
 * @throws {LocalFileError} The file is missing, not a regular file, or cannot be read.
 *
 * @example Verifying (internal)
 * ```ts ignore
 * import { runVerify } from "./verify.ts";
 * const report = await runVerify({ ...job, path: "model.bin" }, connect);
 * ```
 */
export async function runVerify(job: VerifyJob, connect: () => Connection): Promise<VerifyReport> {
  job.signal?.throwIfAborted();
  const localSize = (await statSource(job.path, "verify: the local file")).size;
  const { manifest } = await resolveManifest(connect(), job.reference, job);
  const progress = new ProgressTracker(
    manifest.fileSize,
    manifest.parts.length,
    "resolving",
    job.onProgress,
  );
  // A callback that throws fails the verification: its error stops the hashing.
  const controller = new AbortController();
  progress.onFailure = (err) => controller.abort(err);
  const signal = job.signal === undefined
    ? controller.signal
    : AbortSignal.any([job.signal, controller.signal]);
  const threads = job.hashing(Math.min(job.workers, manifest.parts.length, job.hashThreads));
  try {
    progress.setPhase("verifying");
    const parts = await Promise.all(manifest.parts.map(async (part): Promise<PartCheck> => {
      const { index, offset, size, digest } = part;
      const inside = offset + size <= localSize;
      const localDigest = inside
        ? await threads.hashRange(job.path, offset, size, signal, (n) => progress.landed(index, n))
        : undefined;
      progress.completePart(index, size);
      return { index, offset, size, digest, localDigest, matches: localDigest === digest };
    }));
    const differing = parts.filter((p) => !p.matches).map((p) => p.index);
    const identical = localSize === manifest.fileSize && differing.length === 0;
    progress.setPhase("done");
    if (progress.failure !== undefined) throw progress.failure;
    return { identical, expectedSize: manifest.fileSize, localSize, parts, differing };
  } catch (err) {
    throw progress.failure ?? err;
  } finally {
    progress.close();
    threads.close();
  }
}
