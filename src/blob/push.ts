/**
 * Blob upload: one session per attempt, monolithic PUT by default or PATCH chunks when chunked
 * upload is enabled, digest-verified commit, best-effort cleanup of abandoned sessions.
 *
 * @module
 */
import { AttemptBudget } from "../remote/retry.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import {
  cancelUpload,
  completeUpload,
  openUpload,
  patchUpload,
  type UploadSession,
} from "../remote/uploads.ts";
import type { BlobContext } from "./context.ts";
import type { ProgressReporter } from "./progress.ts";
import { ExactReader, stagedBody, type UploadSource } from "./upload_source.ts";

/** Inputs of {@linkcode pushBlob}. */
export interface PushRequest {
  /** The repository's registry operations. */
  repo: RemoteRepository;
  /** The expected digest. */
  digest: string;
  /** The exact size in bytes. */
  size: number;
  /** The normalized body. */
  source: UploadSource;
  /** Cancels the push, its retries and waits. */
  signal: AbortSignal | undefined;
  /** The progress callbacks of this call. */
  progress: ProgressReporter;
}

/**
 * Uploads a blob. Each attempt opens a session (POST), sends the bytes and commits with the
 * digest; a failed attempt DELETEs its session (at most 5 s, only while the caller's signal is
 * active, never replacing the original error) and, if the failure is retryable, the budget
 * allows it and the body is re-readable, restarts from byte zero with a new session.
 *
 * @example
 * ```ts ignore
 * await pushBlob(context, { origin, name, digest, size, source, signal, progress });
 * ```
 */
export async function pushBlob(context: BlobContext, request: PushRequest): Promise<void> {
  const { signal, source } = request;
  const budget = new AttemptBudget(context.policy, context.clock, signal);
  for (;;) {
    signal?.throwIfAborted();
    let session: UploadSession | undefined;
    const readers: ExactReader[] = [];
    const open = (start = 0, end = request.size): ExactReader => {
      const { stream, owned } = source.open(start, end);
      const reader = new ExactReader(stream, end - start, owned, "PUT blob upload");
      readers.push(reader);
      return reader;
    };
    try {
      session = await openUpload(request.repo, signal);
      if (context.chunkSize === undefined) {
        await putMonolithic(request, session, open);
      } else {
        await putChunked(request, session, context.chunkSize, open);
      }
      return;
    } catch (caught) {
      // A body-length failure is what really happened, whatever the transport made of it.
      const err = readers.find((reader) => reader.failure)?.failure ?? caught;
      if (session !== undefined) await cancelUpload(request.repo, session.location, signal);
      if (signal?.aborted) throw signal.reason;
      // A one-shot body that was read cannot be sent again.
      if (source.opened && !source.replayable) throw err;
      await budget.failed("push blob", err);
    } finally {
      await Promise.all(readers.map((reader) => reader.close()));
    }
  }
}

async function putMonolithic(
  request: PushRequest,
  session: UploadSession,
  open: (start?: number, end?: number) => ExactReader,
): Promise<void> {
  const { size, source, progress } = request;
  let first: ExactReader | undefined = open();
  if (size === 0) await first.finish();
  const make = () => {
    // The first hop uses the attempt's reader; a followed write redirect re-reads from zero.
    const reader = first ?? open();
    first = undefined;
    return size === 0 ? null : stagedBody(reader, size, (n) => progress.wire(n));
  };
  await completeUpload(request.repo, session, request.digest, size, {
    make,
    replayable: source.replayable,
  }, request.signal);
  progress.committed(size, size);
}

async function putChunked(
  request: PushRequest,
  firstSession: UploadSession,
  configuredChunk: number,
  open: (start?: number, end?: number) => ExactReader,
): Promise<void> {
  const { size, source, progress } = request;
  const reader = open();
  let session = firstSession;
  let start = 0;
  while (start < size) {
    const chunkSize = Math.max(configuredChunk, session.minimumChunk);
    const length = Math.min(chunkSize, size - start);
    let firstHop = true;
    const chunkStart = start;
    const make = () => {
      if (firstHop) {
        firstHop = false;
        return stagedBody(reader, chunkStart + length, (n) => progress.wire(n));
      }
      const replay = open(chunkStart, chunkStart + length);
      return stagedBody(replay, length, (n) => progress.wire(n));
    };
    session = await patchUpload(request.repo, session, start, length, {
      make,
      replayable: source.randomAccess,
    }, request.signal);
    start += length;
    progress.committed(start, size);
  }
  await reader.finish();
  await completeUpload(request.repo, session, request.digest, size, undefined, request.signal);
  progress.committed(size, size);
}
