/**
 * The pull procedure: lock and measure the partial file, resolve and verify the manifest, size
 * the partial when there is room, resume or start fresh, fetch parts concurrently, commit
 * atomically.
 *
 * @module
 */
import { Sha256Threads } from "../registry/sha256_threads.ts";
import { THREADED_HASH_MIN_BYTES } from "../registry/stream_sha256.ts";
import { join } from "node:path";
import { InvalidManifestError } from "../errors/kinds.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import { PARTED_RETRY_POLICY, type RetryPolicy } from "../transport/retry.ts";
import { FileDigestCheck } from "./fs_file_digest.ts";
import { isPlainFileName } from "./format.ts";
import { AsyncQueue } from "./async_queue.ts";
import type { Connection } from "./connection.ts";
import { PartialFile } from "./fs_partial.ts";
import type { PartDescriptor, PartedManifest } from "./manifest.ts";
import { resolveManifest } from "./resolve_manifest.ts";
import { downloadPart } from "./part_download.ts";
import { ProgressTracker } from "./progress.ts";
import type { TransferJob } from "./transfer_job.ts";
import { FirstFailure, runPartWorkers } from "./part_workers.ts";

/** What the pull procedure needs, already validated. */
export interface PullJob extends TransferJob {
  /** The destination path. */
  destination: string;
  /** Hashing threads (resume pass and downloads); default the core count, at most `workers`. */
  hashThreads?: number;
  /** `destination` is a directory: the file is named by the manifest's title. */
  intoDirectory?: boolean;
  /** Check the whole-file digest annotation while parts land. */
  verifyFileDigest?: boolean;
}

/**
 * Pulls the artifact of `job` into its destination. See the Pull section of the specification.
 *
 * @example
 * ```ts ignore
 * import { runPull } from "./pull.ts";
 * await runPull(job, () => connect(stack, reference));
 * ```
 */
export async function runPull(job: PullJob, connect: () => Connection): Promise<void> {
  job.signal?.throwIfAborted();
  // A named destination is this pull's before anything else happens: a second pull of it is
  // refused at once, before either touches a byte. A directory's file name comes from the
  // manifest, so that lock is taken once the manifest is read.
  let partial = job.intoDirectory ? undefined : await PartialFile.open(job.destination);
  const connection = connect();
  const controller = new AbortController();
  const signal = job.signal === undefined
    ? controller.signal
    : AbortSignal.any([job.signal, controller.signal]);
  const policy = job.policy ?? PARTED_RETRY_POLICY;
  const clock = job.clock ?? systemClock;
  let manifest: PartedManifest;
  try {
    ({ manifest } = await resolveManifest(connection, job.reference, { signal, policy, clock }));
    partial ??= await PartialFile.open(fileInDirectory(job.destination, manifest.title));
  } catch (err) {
    await partial?.close();
    if (job.signal?.aborted) throw job.signal.reason;
    throw err;
  }
  await fetchParts(job, manifest, partial, connection, { controller, signal, policy, clock });
}

/** Where a pull into `directory` writes: the manifest's title, once checked. */
function fileInDirectory(directory: string, title: string | undefined): string {
  if (title === undefined) {
    throw new InvalidManifestError("annotations: no title to name the file; pull into a file");
  }
  if (!isPlainFileName(title)) {
    throw new InvalidManifestError("annotations: title is not a plain file name");
  }
  return join(directory, title);
}

/** Fetches (or resumes) every part into `partial`, checks the file digest if asked, commits. */
async function fetchParts(
  job: PullJob,
  manifest: PartedManifest,
  partial: PartialFile,
  connection: Connection,
  run: { controller: AbortController; signal: AbortSignal; policy: RetryPolicy; clock: Clock },
): Promise<void> {
  const { controller, signal, policy, clock } = run;
  // One hashing thread per core: hashing is the bound, and the receiving thread's share of a
  // core is small (measured: one thread fewer pulled 20% slower on two cores). A small file
  // hashes faster here than a thread starts: none for it.
  const threads = manifest.fileSize < THREADED_HASH_MIN_BYTES
    ? 0
    : Math.min(job.workers, globalThis.navigator?.hardwareConcurrency ?? 2);
  const hashThreads = new Sha256Threads(
    job.hashThreads === undefined ? threads : Math.min(job.workers, job.hashThreads),
  );
  const latch = new FirstFailure(job.signal, controller);
  const progress = new ProgressTracker(
    manifest.fileSize,
    manifest.parts.length,
    "resolving",
    job.onProgress,
  );
  progress.onFailure = (err) => controller.abort(err);
  let fileCheck: FileDigestCheck | undefined;
  const placed = (part: PartDescriptor, kind: "resumed" | "verified") => {
    progress.completePart(part.index, part.size, kind);
    fileCheck?.partPlaced(part.index);
  };
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
    const queue = new AsyncQueue<PartDescriptor>();
    let feeding: Promise<void>;
    if (partial.initialLength === manifest.fileSize) {
      progress.setPhase("verifying");
      feeding = verifyExisting(manifest, partial.path, hashThreads, signal, (part, ok) => {
        if (ok) placed(part, "resumed");
        else queue.push(part);
      }).then(() => queue.close(), (err) => {
        queue.close();
        latch.fail(err);
      });
    } else {
      for (const part of manifest.parts) queue.push(part);
      queue.close();
      feeding = Promise.resolve();
    }
    const count = Math.min(job.workers, manifest.parts.length);
    const workers = runPartWorkers(queue, count, signal, latch, async (part) => {
      progress.setPhase("downloading");
      await downloadPart({
        repo: connection.repo,
        partial,
        progress,
        signal,
        policy,
        clock,
        hashThreads,
      }, part);
      placed(part, "verified");
    });
    await latch.settle([feeding, ...workers], progress);
    if (fileCheck) {
      progress.setPhase("verifying");
      await fileCheck.finish();
    }
    progress.setPhase("committing");
    // A caller that cancels from the callback above gets a cancelled pull, not a committed one.
    signal.throwIfAborted();
    await partial.commit();
    progress.setPhase("done");
  } catch (err) {
    throw latch.publicError(err);
  } finally {
    progress.close();
    fileCheck?.close();
    hashThreads.close();
    await partial.close();
  }
}

/**
 * The resume pass: hashes every part range of the partial file (at most the pool's thread count
 * at once) and reports each part as it is known, so failed parts are fetched while the others
 * are still being hashed.
 */
async function verifyExisting(
  manifest: PartedManifest,
  path: string,
  threads: Sha256Threads,
  signal: AbortSignal,
  onPart: (part: PartDescriptor, ok: boolean) => void,
): Promise<void> {
  await Promise.all(manifest.parts.map(async (part) => {
    const digest = await threads.hashRange(path, part.offset, part.size, signal);
    onPart(part, digest === part.digest);
  }));
}
