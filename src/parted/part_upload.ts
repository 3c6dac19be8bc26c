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
import type { Clock } from "../transport/clock.ts";
import { fileBody } from "../transport/file_body.ts";
import { AttemptBudget, type RetryPolicy } from "../remote/retry.ts";
import type { PartDescriptor } from "./manifest.ts";
import { partSizeBelowRefused, partSizeForTimeLimit } from "./part_size_advice.ts";
import { PartSizeError } from "./part_size_error.ts";
import type { ProgressTracker } from "./progress.ts";
import { UploadAttempts } from "./upload_attempts.ts";

/** What a part upload needs. */
export interface PartUploadContext {
  /** The registry operations of the target repository. */
  repo: RemoteRepository;
  /** The source file. */
  path: string;
  /** The size of the source file, in bytes (a suggested part size must fit the part cap). */
  fileSize: number;
  /** The part size of the push, in bytes. */
  partSize: number;
  /** Counts wire bytes and the bytes each attempt sent. */
  progress: ProgressTracker;
  /** Stops the upload. */
  signal: AbortSignal;
  /** Retry budget. */
  policy: RetryPolicy;
  /** Time source of the backoff and of the attempts' timing. */
  clock: Clock;
  /** Called before each upload session is opened (e.g. to renew a token about to expire). */
  beforeUpload?: (part: PartDescriptor, signal: AbortSignal) => Promise<void>;
  /** The stated lifetime (ms) of the token uploads present, when there is one. */
  tokenLifetimeMs?: () => number | undefined;
}

/**
 * Makes sure the registry holds `part`: HEAD first (present → `"skipped"`), else POST + PUT of
 * the part streamed from disk with its exact length (`"uploaded"`). Each attempt repeats the
 * existence check and re-streams the part; 4 attempts by default. A source that ends early or
 * whose bytes no longer match the part digest fails with `SourceChangedError`, not retried. A
 * registry that refuses the part's size fails with `PartSizeError` naming a size that fits:
 * at once on a 413; after two attempts in a row whose token was refused once the whole part
 * had arrived (the second with a fresh token); and once the budget is spent when every attempt
 * was cut after about the same time (a request time limit).
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
  const { clock, signal } = context;
  const attempts = new UploadAttempts(() => clock.now(), part.size);
  const budget = new AttemptBudget(context.policy, clock, signal);
  for (;;) {
    signal.throwIfAborted();
    try {
      return await attemptUpload(context, part, attempts);
    } catch (err) {
      attempts.failed(err);
      const failure = tokenLifetimeFailure(err, context, part, attempts) ?? err;
      await budget.failed(`part ${part.index}: upload`, failure).catch((final) => {
        throw signal.aborted ? final : timeLimitFailure(final, context, part, attempts) ?? final;
      });
    }
  }
}

/** One attempt: existence check, then a session and the PUT streamed from the file. */
async function attemptUpload(
  context: PartUploadContext,
  part: PartDescriptor,
  attempts: UploadAttempts,
): Promise<"skipped" | "uploaded"> {
  const { repo, signal } = context;
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
        attempts.sent(n);
      },
    });
  };
  attempts.startPut();
  try {
    await completeUpload(repo, session, part.digest, part.size, {
      make,
      replayable: true,
    }, signal);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw refusedSize(err, context, part) ?? sourceFailure(err, part.index);
  }
  return "uploaded";
}

/** A 413 from the registry for the part's body: a `PartSizeError` naming a smaller size. */
function refusedSize(
  err: unknown,
  context: PartUploadContext,
  part: PartDescriptor,
): PartSizeError | undefined {
  const status = findError(err, HttpStatusError);
  if (status?.status !== 413 || status.offOrigin) return undefined;
  return new PartSizeError(status.message, {
    limit: "body-size",
    partSize: context.partSize,
    refusedBytes: part.size,
    suggestedPartSize: partSizeBelowRefused(context.fileSize, part.size),
  }, { cause: err, status: 413 });
}

/**
 * The failure of a part whose token was refused after the whole part arrived, twice in a row,
 * if it was: a part must arrive within what a fresh token lives (its stated lifetime, and at
 * most the time the refused part took).
 */
function tokenLifetimeFailure(
  err: unknown,
  context: PartUploadContext,
  part: PartDescriptor,
  attempts: UploadAttempts,
): PartSizeError | undefined {
  const seen = attempts.tokenOutlived();
  if (seen === undefined) return undefined;
  const tokenLifetimeMs = context.tokenLifetimeMs?.();
  const lifeMs = Math.min(tokenLifetimeMs ?? Infinity, seen.uploadMs);
  return new PartSizeError(`part ${part.index}: upload`, {
    limit: "token-lifetime",
    partSize: context.partSize,
    ...seen,
    ...(tokenLifetimeMs === undefined ? {} : { tokenLifetimeMs }),
    suggestedPartSize: partSizeForTimeLimit(
      context.fileSize,
      context.partSize,
      seen.bytesPerSecond,
      lifeMs,
    ),
  }, { cause: err });
}

/** The failure of a part whose every attempt was cut after about the same time, if it was. */
function timeLimitFailure(
  err: unknown,
  context: PartUploadContext,
  part: PartDescriptor,
  attempts: UploadAttempts,
): PartSizeError | undefined {
  const seen = attempts.timeLimit();
  if (seen === undefined) return undefined;
  return new PartSizeError(`part ${part.index}: upload`, {
    limit: "request-time",
    partSize: context.partSize,
    ...seen,
    suggestedPartSize: partSizeForTimeLimit(
      context.fileSize,
      context.partSize,
      seen.bytesPerSecond,
      seen.cutAfterMs,
    ),
  }, { cause: err });
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
