/**
 * Pushing one part: existence check, then an upload session and one PUT streamed from the
 * file, repeated within the part's retry budget.
 *
 * @module
 */
import { findError } from "../errors/find_error.ts";
import {
  FileEndedError,
  HttpStatusError,
  LocalFileError,
  SourceChangedError,
} from "../errors/kinds.ts";
import { registryErrorCodes } from "../registry/status.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import { completeUpload, openUpload } from "../remote/uploads.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import { fileBody } from "../transport/file_body.ts";
import { PARTED_RETRY_POLICY, retry, type RetryPolicy } from "../transport/retry.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { ProgressTracker } from "./progress.ts";

/** What a part upload needs. */
export interface PartUploadContext {
  /** The registry operations of the target repository. */
  repo: RemoteRepository;
  /** The source file. */
  path: string;
  /** Counts wire bytes and the bytes each attempt sent. */
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
  const { repo, signal } = context;
  return await retry(`part ${part.index}: upload`, async () => {
    if (await repo.exists(part.digest, signal)) return "skipped";
    await context.beforeUpload?.(part, signal);
    const session = await openUpload(repo, signal);
    // The hook counts wire bytes on the transport's direct file path as well as on a plain
    // stream, so the body stays a recognisable file range.
    const make = () => {
      // Each body is a new attempt from the part's first byte.
      context.progress.restartPart(part.index);
      return part.size === 0 ? new Uint8Array(0) : fileBody(context.path, part.offset, part.size, {
        onBytes: (n) => {
          context.progress.addWire(n);
          context.progress.landed(part.index, n);
        },
      });
    };
    try {
      await completeUpload(repo, session, part.digest, part.size, {
        make,
        replayable: true,
      }, signal);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw sourceFailure(err, part.index);
    }
    return "uploaded";
  }, {
    policy: context.policy ?? PARTED_RETRY_POLICY,
    signal,
    clock: context.clock ?? systemClock,
  });
}

/** What a failed part PUT says about the source file, if anything; else `err` unchanged. */
function sourceFailure(err: unknown, index: number): unknown {
  if (findError(err, FileEndedError) !== undefined) {
    return new SourceChangedError(`part ${index}: file ended early`, { cause: err });
  }
  const local = findError(err, LocalFileError);
  if (local !== undefined) {
    return new LocalFileError(`push source: read failed at part ${index}`, { cause: local });
  }
  const status = findError(err, HttpStatusError);
  if (status?.status === 400 && registryErrorCodes(status).includes("DIGEST_INVALID")) {
    // The registry hashed what we streamed and it differs from what we hashed: the file
    // changed between the hashing read and the upload.
    return new SourceChangedError(`part ${index}: bytes differ from their digest`, {
      cause: err,
    });
  }
  return err;
}
