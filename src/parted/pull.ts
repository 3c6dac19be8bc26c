/**
 * The pull procedure: lock and measure the partial file, resolve and verify the manifest, size
 * the partial when there is room, resume or start fresh, fetch parts concurrently, commit atomically.
 *
 * @module
 */
import { Sha256Threads } from "../registry/sha256_threads.ts";
import { THREADED_HASH_MIN_BYTES } from "../registry/stream_sha256.ts";
import { systemClock } from "../transport/clock.ts";
import { PARTED_RETRY_POLICY } from "../transport/retry.ts";
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
  /** Threads of the resume hashing pass; default the hardware concurrency, at most `workers`. */
  hashThreads?: number;
}

/**
 * Pulls the artifact of `job` into its destination. See the Pull section of the specification.
 *
 * @example
 * ```ts ignore
 * import { runPull } from "./pull.ts";
 * await runPull(job, () => connect(stack, reference, false));
 * ```
 */
export async function runPull(job: PullJob, connect: () => Connection): Promise<void> {
  job.signal?.throwIfAborted();
  // The destination is this pull's before anything else happens: a second pull of it is
  // refused at once, before either touches a byte.
  const partial = await PartialFile.open(job.destination);
  const connection = connect();
  const controller = new AbortController();
  const signal = job.signal === undefined
    ? controller.signal
    : AbortSignal.any([job.signal, controller.signal]);
  const policy = job.policy ?? PARTED_RETRY_POLICY;
  const clock = job.clock ?? systemClock;
  let progress: ProgressTracker | undefined;
  let manifest: PartedManifest;
  try {
    ({ manifest } = await resolveManifest(connection, job.reference, { signal, policy, clock }));
  } catch (err) {
    await partial.close();
    if (job.signal?.aborted) throw job.signal.reason;
    throw err;
  }
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
  try {
    progress = new ProgressTracker(manifest.fileSize, "resolving", job.onProgress);
    progress.onFailure = (err) => controller.abort(err);
    await partial.prepare(manifest.fileSize);
    const queue = new AsyncQueue<PartDescriptor>();
    const tracker = progress;
    const openPartial = partial;
    let feeding: Promise<void>;
    if (partial.initialLength === manifest.fileSize) {
      tracker.setPhase("verifying");
      feeding = verifyExisting(manifest, partial.path, hashThreads, signal, (part, ok) => {
        if (ok) tracker.completePart(part.size);
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
      tracker.setPhase("downloading");
      await downloadPart({
        repo: connection.repo,
        partial: openPartial,
        progress: tracker,
        signal,
        policy,
        clock,
        hashThreads,
      }, part);
      tracker.completePart(part.size);
    });
    await latch.settle([feeding, ...workers], progress);
    progress.setPhase("committing");
    await partial.commit();
    progress.setPhase("done");
  } catch (err) {
    throw latch.publicError(err);
  } finally {
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
