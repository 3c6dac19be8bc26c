/**
 * The resolved client settings every blob operation works with, and the one way requests are
 * sent: through {@linkcode followRedirects} with origin routing.
 *
 * @module
 */
import type { Sha256Threads } from "../registry/sha256_threads.ts";
import type { Clock } from "../transport/clock.ts";
import type { Fetch } from "../transport/fetch.ts";
import {
  type FollowedResponse,
  followRedirects,
  type RedirectableRequest,
} from "../transport/follow_redirects.ts";
import type { RetryPolicy } from "../transport/retry.ts";

/** Resolved, validated settings of a `BlobClient`. */
export interface BlobContext {
  /** Transport for the registry origin. */
  transport: Fetch;
  /** Transport for every other origin. */
  storageTransport: Fetch;
  /** The attempt budget and backoff of each operation. */
  policy: RetryPolicy;
  /** Whether redirects of writes may be followed. */
  writeRedirects: boolean;
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

/**
 * Sends one request for an operation: the registry origin goes through the registry transport,
 * every other origin through the storage transport without credential headers.
 *
 * @example
 * ```ts ignore
 * const { response } = await send(context, origin, { method: "HEAD", url }, "HEAD blob");
 * ```
 */
export function send(
  context: BlobContext,
  origin: URL,
  request: RedirectableRequest,
  operation: string,
): Promise<FollowedResponse> {
  return followRedirects(request, {
    origin,
    transport: context.transport,
    storageTransport: context.storageTransport,
    operation,
    writeRedirects: context.writeRedirects,
  });
}

/** Cancels a response body that is not needed, ignoring failures. */
export async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // The body is not needed; a failure to cancel it changes nothing.
  }
}
