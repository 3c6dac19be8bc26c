/**
 * The resolved client settings every blob operation works with.
 *
 * @module
 */
import type { Sha256Threads } from "../hashing/sha256_threads.ts";
import type { Clock } from "../transport/clock.ts";
import type { RetryPolicy } from "../remote/retry.ts";

/** Resolved, validated settings of a `BlobClient`. */
export interface BlobContext {
  /** The attempt budget and backoff of each operation. */
  policy: RetryPolicy;
  /** Plain HTTP to the registry. */
  plainHttp: boolean;
  /** Time source of backoff waits. */
  clock: Clock;
  /** Chunk size of chunked uploads, when enabled. */
  chunkSize: number | undefined;
  /** Parallel pull settings, when enabled. */
  parallelPull: { workers: number; chunkSize: number } | undefined;
  /** Where large downloads are hashed (threads start on first use, idle ones never hold the process); undefined: inline. */
  hashThreads: Sha256Threads | undefined;
}
