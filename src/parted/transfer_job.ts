/**
 * What every parted transfer is told, whichever direction it goes.
 *
 * @module
 */
import type { Reference } from "../registry/reference.ts";
import type { Sha256Threads } from "../hashing/sha256_threads.ts";
import { THREADED_HASH_MIN_BYTES } from "../hashing/stream_sha256.ts";
import type { HashWork } from "../remote/session.ts";
import type { Clock } from "../transport/clock.ts";
import type { RetryPolicy } from "../remote/retry.ts";
import type { ProgressCallback } from "./progress.ts";

/**
 * The fields a push job and a pull job share.
 *
 * @example
 * ```ts ignore
 * const job: TransferJob = { reference, workers: 8 };
 * ```
 */
export interface TransferJob {
  /** The artifact's reference (tag and/or digest). */
  reference: Reference;
  /** Concurrent part transfers (and, for pull, resume hashing). */
  workers: number;
  /** Progress callback. */
  onProgress?: ProgressCallback;
  /** The caller's signal. */
  signal?: AbortSignal;
  /** Retry budget of every part, the config blob and each manifest call. */
  policy: RetryPolicy;
  /** Backoff time source. */
  clock: Clock;
  /** The most hashing threads (the client's `hashThreads`); large files only use threads. */
  hashThreads: number;
  /**
   * Hashing threads, at most `count` (and `hashThreads`), for `work` (default `"local"`); the
   * caller closes them.
   */
  hashing(count: number, work?: HashWork): Sha256Threads;
}

/**
 * The hashing threads of a transfer of a file of `fileSize` bytes: at most `most` (and the
 * client's `hashThreads`), for `work`; none for a small file, which hashes faster here than a
 * thread starts (and starting none keeps a process that moves many small files lean).
 *
 * @example
 * ```ts ignore
 * const threads = hashingFor(job, manifest.fileSize, job.workers, "download");
 * ```
 */
export function hashingFor(
  job: TransferJob,
  fileSize: number,
  most: number,
  work?: HashWork,
): Sha256Threads {
  return job.hashing(threadsFor(fileSize, most), work);
}

/**
 * How many hashing threads a file of `fileSize` bytes may use, at most `most`: none under
 * `THREADED_HASH_MIN_BYTES`.
 *
 * @example
 * ```ts
 * import { threadsFor } from "./transfer_job.ts";
 * console.log(threadsFor(1 << 20, 2), threadsFor(1 << 30, 2)); // 0 2
 * ```
 */
export function threadsFor(fileSize: number, most: number): number {
  return fileSize < THREADED_HASH_MIN_BYTES ? 0 : most;
}
