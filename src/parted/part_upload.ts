/**
 * Pushing one part: existence check, then an upload session and one PUT streamed from the
 * file, repeated within the part's retry budget.
 *
 * @module
 */
import { findError } from "../errors/find_error.ts";
import { HttpStatusError, LocalFileError, SourceChangedError } from "../errors/kinds.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import { fileBody } from "../transport/file_body.ts";
import { PARTED_RETRY_POLICY, retry, type RetryPolicy } from "../transport/retry.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { ProgressTracker } from "./progress.ts";
import type { PartedRequests } from "./requests.ts";

/** What a part upload needs. */
export interface PartUploadContext {
  /** The registry requests of the target repository. */
  requests: PartedRequests;
  /** The source file. */
  path: string;
  /** Counts wire bytes. */
  progress: ProgressTracker;
  /** Stops the upload. */
  signal: AbortSignal;
  /** Retry budget; the parted policy by default. */
  policy?: RetryPolicy;
  /** Time source of the backoff. */
  clock?: Clock;
  /** Called before each upload session is opened (e.g. to renew a token about to expire). */
  beforeUpload?: (part: PartDescriptor, signal: AbortSignal) => Promise<void>;
}

/**
 * Makes sure the registry holds `part`: HEAD first (present → `"skipped"`), else POST + PUT of
 * the part streamed from disk with its exact length (`"uploaded"`). Each attempt repeats the
 * existence check and re-streams the part; 4 attempts by default. A source that ends early or
 * whose bytes no longer match the part digest fails with `SourceChangedError`, not retried.
 *
 * @example
 * ```ts ignore
 * import { uploadPart } from "./part_upload.ts";
 * await uploadPart(context, { index: 0, offset: 0, size: 10, digest });
 * ```
 */
export async function uploadPart(
  context: PartUploadContext,
  part: PartDescriptor,
): Promise<"skipped" | "uploaded"> {
  const { requests, signal } = context;
  return await retry(`part ${part.index}: upload`, async () => {
    if (await requests.blobExists(part.digest, signal)) return "skipped";
    await context.beforeUpload?.(part, signal);
    const session = await requests.openUpload(signal);
    // The hook counts wire bytes on the transport's direct file path as well as on a plain
    // stream, so the body stays a recognisable file range.
    const body = part.size === 0
      ? new Uint8Array(0)
      : fileBody(context.path, part.offset, part.size, {
        onBytes: (n) => context.progress.addWire(n),
      });
    try {
      await requests.completeUpload(session, part.digest, part.size, body, signal);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      const local = findError(err, LocalFileError);
      if (local !== undefined && FILE_ENDED.test(local.message)) {
        throw new SourceChangedError(`part ${part.index}: file ended early`, { cause: err });
      }
      if (local !== undefined) {
        throw new LocalFileError(`push source: read failed at part ${part.index}`, {
          cause: local,
        });
      }
      if (isDigestInvalid(err)) {
        // The registry hashed what we streamed and it differs from what we hashed: the file
        // changed between the hashing read and the upload.
        throw new SourceChangedError(`part ${part.index}: bytes differ from their digest`, {
          cause: err,
        });
      }
      throw err;
    }
    return "uploaded";
  }, {
    policy: context.policy ?? PARTED_RETRY_POLICY,
    signal,
    clock: context.clock ?? systemClock,
  });
}

// The message of fileBody's error for a file shorter than its range.
const FILE_ENDED = /file ended before/;

function isDigestInvalid(err: unknown): boolean {
  const status = findError(err, HttpStatusError);
  if (status === undefined || status.status !== 400) return false;
  return new TextDecoder().decode(status.body).includes("DIGEST_INVALID");
}
