/**
 * The pull procedure: lock and measure the partial file, resolve and verify the manifest, size
 * the partial when there is room, resume (whole parts, and parts from their written beginning)
 * or start fresh, fetch parts concurrently, commit atomically.
 *
 * @module
 */
import type { RangeScan, Sha256Threads } from "../hashing/sha256_threads.ts";
import { join } from "node:path";
import type { Clock } from "../transport/clock.ts";
import type { RetryPolicy } from "../remote/retry.ts";
import { FileDigestCheck } from "./fs_file_digest.ts";
import { isPlainFileName } from "./format.ts";
import { NoFileNameError } from "./no_file_name_error.ts";
import { AsyncQueue } from "./async_queue.ts";
import type { Connection } from "./connection.ts";
import { type DestinationGuard, PartialFile } from "./fs_partial.ts";
import type { PartDescriptor, PartedManifest } from "./manifest.ts";
import { resolveManifest } from "./resolve_manifest.ts";
import { downloadPart, partDownloadBuffers, type PartDownloadContext } from "./part_download.ts";
import { ProgressTracker } from "./progress.ts";
import { scanPartial } from "./resume_scan.ts";
import { hashingFor, type TransferJob } from "./transfer_job.ts";
import { FirstFailure, nextPart } from "./part_workers.ts";

/** What the pull procedure needs, already validated. */
export interface PullJob extends TransferJob {
  /** The destination path. */
  destination: string;
  /** `destination` is a directory: the file is named by the manifest's title. */
  intoDirectory?: boolean;
  /** Into a directory: a file of the title's name may be replaced. */
  overwrite?: boolean;
  /** Check the whole-file digest annotation while parts land. */
  verifyFileDigest?: boolean;
}

/**
 * What {@linkcode PartedClient.pull} resolves to: the file written and what it took.
 *
 * @example Reporting what a pull fetched and what it found on disk
 * ```ts
 * import type { PullResult } from "@ocipart/ocipart";
 * const describe = (r: PullResult) =>
 *   `${r.path}: ${r.bytesFetched} bytes fetched, ${r.bytesResumed} found on disk ` +
 *   `(parts kept whole: ${r.partsResumed}, continued: ${r.partsContinued})`;
 * console.log(describe({
 *   path: "models/weights.bin",
 *   digest: "sha256:…",
 *   size: 30,
 *   bytesFetched: 12,
 *   bytesResumed: 18,
 *   bytesResumedInParts: 8,
 *   partsFetched: 2,
 *   partsResumed: 1,
 *   partsContinued: 2,
 * }));
 * // "models/weights.bin: 12 bytes fetched, 18 found on disk (parts kept whole: 1, continued: 2)"
 * ```
 */
export interface PullResult {
  /** The file written: the destination, or in a directory the file named by the artifact. */
  path: string;
  /** The digest of the manifest pulled (what a tag resolved to). */
  digest: string;
  /** The file's size in bytes. */
  size: number;
  /**
   * Part bytes received from the registry; more than the bytes missing when work was redone
   * (a restarted part, a range the registry ignored). The final `wireBytes` of the progress.
   */
  bytesFetched: number;
  /**
   * Bytes an earlier, interrupted pull had left in the partial file that were kept, not
   * fetched: the parts that matched whole plus `bytesResumedInParts`. The final
   * `resumedBytes` of the progress.
   */
  bytesResumed: number;
  /** Of `bytesResumed`, the written beginnings of the parts continued from there. */
  bytesResumedInParts: number;
  /** Parts downloaded, whole or continued from their beginning on disk. */
  partsFetched: number;
  /** Parts found complete in the partial file: nothing was fetched for them. */
  partsResumed: number;
  /** Of `partsFetched`, the parts continued from the beginning an earlier pull wrote. */
  partsContinued: number;
}

/**
 * Pulls the artifact of `job` into its destination. The procedure, step by step:
 * docs/protocol.md#pull.
 *
 * @example
 * ```ts ignore
 * import { runPull } from "./pull.ts";
 * const result = await runPull(job, () => connect(stack, reference));
 * ```
 */
export async function runPull(job: PullJob, connect: () => Connection): Promise<PullResult> {
  job.signal?.throwIfAborted();
  // A named destination is this pull's before anything else happens: a second pull of it is
  // refused at once, before either touches a byte. A directory's file name comes from the
  // manifest, so that lock is taken once the manifest is read.
  let partial = job.intoDirectory ? undefined : await PartialFile.open(job.destination);
  const connection = connect();
  const latch = new FirstFailure(job.signal);
  const { policy, clock } = job;
  let resolved: { manifest: PartedManifest; digest: string };
  try {
    resolved = await resolveManifest(connection, job.reference, {
      signal: latch.signal,
      policy,
      clock,
    });
    // Named by the registry: only what the caller allowed is replaced, and that is known now,
    // before any part is fetched.
    const guard: DestinationGuard = { named: false, overwrite: job.overwrite ?? false };
    partial ??= await PartialFile.open(
      fileInDirectory(job.destination, resolved.manifest.title),
      guard,
    );
  } catch (err) {
    await partial?.close();
    if (job.signal?.aborted) throw job.signal.reason;
    throw err;
  }
  const run = { latch, signal: latch.signal, policy, clock };
  return await fetchParts(job, resolved, partial, connection, run);
}

/** Where a pull into `directory` writes: the manifest's title, once checked. */
function fileInDirectory(directory: string, title: string | undefined): string {
  if (title === undefined) throw new NoFileNameError("no-title");
  if (!isPlainFileName(title)) throw new NoFileNameError("not-plain");
  return join(directory, title);
}

/** How a pull runs: its stop and signal, retry policy and clock. */
interface PullRun {
  latch: FirstFailure;
  signal: AbortSignal;
  policy: RetryPolicy;
  clock: Clock;
}

/** Fetches (or resumes) every part into `partial`, checks the file digest if asked, commits. */
async function fetchParts(
  job: PullJob,
  resolved: { manifest: PartedManifest; digest: string },
  partial: PartialFile,
  connection: Connection,
  run: PullRun,
): Promise<PullResult> {
  const { manifest } = resolved;
  // One hashing thread per core at most: hashing is the bound, and the receiving thread's share
  // of a core is small (measured: one thread fewer pulled 20% slower on two cores).
  const hashThreads = hashingFor(job, manifest.fileSize, job.workers, "download");
  const { latch } = run;
  const progress = new ProgressTracker(
    manifest.fileSize,
    manifest.parts.length,
    "resolving",
    job.onProgress,
    { resume: true, path: partial.destination },
  );
  progress.onFailure = (err) => latch.stop(err);
  let fileCheck: FileDigestCheck | undefined;
  try {
    if (job.verifyFileDigest) {
      fileCheck = new FileDigestCheck(
        partial.path,
        manifest.parts,
        manifest.fileDigest,
        hashThreads,
      );
      fileCheck.onFailure = (err) => latch.fail(err);
    }
    await partial.prepare(manifest.fileSize);
    // What an interrupted pull placed may not be on the disk yet: flush it while parts hash.
    if (partial.initialLength > 0) partial.flushSoon();
    // One pool of write buffers for every part download of the pull (see partDownloadBuffers).
    const buffers = partDownloadBuffers(hashThreads.threadedRunning);
    const context = { ...run, repo: connection.repo, partial, progress, hashThreads, buffers };
    const tally = await placeParts(job, manifest, context, latch);
    if (fileCheck) {
      // Read back once every part is placed: the digest covers the bytes on disk at the
      // commit, not bytes another program may have changed after a part landed.
      progress.setPhase("verifying");
      for (const part of manifest.parts) fileCheck.partPlaced(part.index);
      await fileCheck.finish();
    }
    progress.setPhase("committing");
    // A caller that cancels from the callback above gets a cancelled pull, not a committed one.
    run.signal.throwIfAborted();
    await partial.commit();
    progress.setPhase("done");
    return {
      path: partial.destination,
      digest: resolved.digest,
      size: manifest.fileSize,
      bytesFetched: progress.snapshot.wireBytes,
      bytesResumed: progress.resumedBytes,
      bytesResumedInParts: progress.resumedBytes - tally.resumedBytes,
      partsFetched: tally.fetched,
      partsResumed: tally.resumed,
      partsContinued: tally.continued,
    };
  } catch (err) {
    throw latch.publicError(err);
  } finally {
    progress.close();
    fileCheck?.close();
    hashThreads.close();
    await partial.close();
  }
}

/** What placing the parts took: parts fetched (and continued), parts found whole on disk. */
interface PartTally {
  fetched: number;
  continued: number;
  resumed: number;
  /** Bytes of the parts found whole on disk. */
  resumedBytes: number;
}

/**
 * Puts every part in place: the resume pass (for a partial of the full length) feeds the part
 * workers with the parts it did not find whole, each continued from its written beginning when
 * it has one; resolves once all are placed, rejects with what ended the transfer.
 */
async function placeParts(
  job: PullJob,
  manifest: PartedManifest,
  context: PartDownloadContext & { partial: PartialFile; signal: AbortSignal },
  latch: FirstFailure,
): Promise<PartTally> {
  const { progress, signal } = context;
  const tally: PartTally = { fetched: 0, continued: 0, resumed: 0, resumedBytes: 0 };
  const placed = (part: PartDescriptor, kind: "resumed" | "verified") => {
    progress.completePart(part.index, part.size, kind);
  };
  const queue = new AsyncQueue<PartDescriptor>();
  const onDisk = new Map<number, RangeScan>();
  const feeding = feedParts(manifest, context.partial, queue, {
    threads: context.hashThreads,
    signal,
    progress,
    latch,
    onPrefix: (part, scan) => {
      onDisk.set(part.index, scan);
      progress.resumePrefix(part.index, scan.prefix);
    },
    onComplete: (part) => {
      tally.resumed++;
      tally.resumedBytes += part.size;
      placed(part, "resumed");
    },
  });
  const count = Math.min(job.workers, manifest.parts.length);
  const work = async (part: PartDescriptor) => {
    progress.setPhase("downloading");
    const scan = onDisk.get(part.index);
    onDisk.delete(part.index);
    const kept = await downloadPart(context, part, scan);
    tally.fetched++;
    if (kept > 0) tally.continued++;
    placed(part, "verified");
  };
  const workers = Array.from({ length: count }, async () => {
    for (let part; (part = await nextPart(queue, signal)) !== undefined;) {
      await work(part).catch((err) => latch.fail(err, part!.index));
    }
  });
  await latch.settle([feeding, ...workers], progress);
  return tally;
}

/** What feeding the part queue reports to, and with. */
interface Feeding {
  threads: Sha256Threads;
  signal: AbortSignal;
  progress: ProgressTracker;
  latch: FirstFailure;
  /** A part to continue from the written beginning `scan` found (then queued). */
  onPrefix: (part: PartDescriptor, scan: RangeScan) => void;
  /** A part found complete on disk (not queued). */
  onComplete: (part: PartDescriptor) => void;
}

/**
 * Queues the parts to fetch: all of them into a fresh partial; from a partial of the full
 * length (an interrupted pull's), those the resume pass did not find complete, each as soon as
 * it is known, after the bytes it keeps were counted.
 */
function feedParts(
  manifest: PartedManifest,
  partial: PartialFile,
  queue: AsyncQueue<PartDescriptor>,
  feeding: Feeding,
): Promise<void> {
  if (partial.initialLength !== manifest.fileSize) {
    for (const part of manifest.parts) queue.push(part);
    queue.close();
    feeding.progress.resumeCheckDone();
    return Promise.resolve();
  }
  feeding.progress.setPhase("verifying");
  const { threads, signal } = feeding;
  return scanPartial(manifest.parts, partial.path, threads, signal, (part, found) => {
    if (found.kind === "complete") return feeding.onComplete(part);
    if (found.kind === "prefix") feeding.onPrefix(part, found.scan);
    queue.push(part);
  }).then(() => {
    queue.close();
    feeding.progress.resumeCheckDone();
  }, (err) => {
    queue.close();
    feeding.latch.fail(err);
  });
}
