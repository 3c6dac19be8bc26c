/**
 * Blob upload: one session per attempt, monolithic PUT by default or PATCH chunks when chunked
 * upload is enabled, digest-verified commit, best-effort cleanup of abandoned sessions.
 *
 * @module
 */
import { ProtocolError } from "../errors/kinds.ts";
import { uploadUrl } from "../registry/endpoints.ts";
import { resolveLocation, withDigestQuery } from "../registry/location.ts";
import { parseUploadRange } from "../registry/range.ts";
import { expectStatus } from "../registry/status.ts";
import { AttemptBudget } from "../transport/retry.ts";
import { type BlobContext, discard, send } from "./context.ts";
import type { ProgressReporter } from "./progress.ts";
import { ExactReader, stagedBody, type UploadSource } from "./upload_source.ts";

/** Upper bound of the best-effort DELETE of an abandoned session. */
export const CLEANUP_TIMEOUT_MS = 5_000;

const OCTET_STREAM = "application/octet-stream";

/** Inputs of {@linkcode pushBlob}. */
export interface PushRequest {
  /** The registry origin. */
  origin: URL;
  /** The repository path. */
  name: string;
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
    let session: URL | undefined;
    const readers: ExactReader[] = [];
    const open = (start = 0, end = request.size): ExactReader => {
      const { stream, owned } = source.open(start, end);
      const reader = new ExactReader(stream, end - start, owned, "PUT blob upload");
      readers.push(reader);
      return reader;
    };
    try {
      const opened = await openSession(context, request);
      session = opened.session;
      if (context.chunkSize === undefined) {
        await putMonolithic(context, request, session, open);
      } else {
        const chunkSize = Math.max(context.chunkSize, opened.minimumChunk);
        await putChunked(context, request, session, chunkSize, open);
      }
      return;
    } catch (caught) {
      // A body-length failure is what really happened, whatever the transport made of it.
      const err = readers.find((reader) => reader.failure)?.failure ?? caught;
      if (session !== undefined) await cleanup(context, request, session);
      if (signal?.aborted) throw signal.reason;
      // A one-shot body that was read cannot be sent again.
      if (source.opened && !source.replayable) throw err;
      await budget.failed("push blob", err);
    } finally {
      await Promise.all(readers.map((reader) => reader.close()));
    }
  }
}

async function openSession(
  context: BlobContext,
  request: PushRequest,
): Promise<{ session: URL; minimumChunk: number }> {
  const operation = "POST blob upload";
  const { response, url, offOrigin } = await send(context, request.origin, {
    method: "POST",
    url: uploadUrl(request.origin, request.name),
    headers: { "content-length": "0" },
    signal: request.signal,
  }, operation);
  await expectStatus(response, [202], operation, { offOrigin });
  await discard(response);
  const session = resolveLocation(response.headers.get("location"), url, operation);
  return { session, minimumChunk: chunkMinimum(response) };
}

/** The `OCI-Chunk-Min-Length` a registry asks for, or 0. */
function chunkMinimum(response: Response): number {
  const value = Number(response.headers.get("oci-chunk-min-length") ?? "0");
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}

async function putMonolithic(
  context: BlobContext,
  request: PushRequest,
  session: URL,
  open: (start?: number, end?: number) => ExactReader,
): Promise<void> {
  const operation = "PUT blob upload";
  const { size, source, progress } = request;
  let first: ExactReader | undefined = open();
  if (size === 0) await first.finish();
  const body = () => {
    // The first hop uses the attempt's reader; a followed write redirect re-reads from zero.
    const reader = first ?? open();
    first = undefined;
    return size === 0 ? null : stagedBody(reader, size, (n) => progress.wire(n));
  };
  const { response, offOrigin } = await send(context, request.origin, {
    method: "PUT",
    url: withDigestQuery(session, request.digest),
    headers: { "content-type": OCTET_STREAM, "content-length": String(size) },
    body,
    replayable: source.replayable,
    signal: request.signal,
  }, operation);
  await expectStatus(response, [201], operation, { offOrigin });
  await discard(response);
  progress.committed(size, size);
}

async function putChunked(
  context: BlobContext,
  request: PushRequest,
  firstSession: URL,
  configuredChunk: number,
  open: (start?: number, end?: number) => ExactReader,
): Promise<void> {
  const { size, source, progress } = request;
  const reader = open();
  let session = firstSession;
  let chunkSize = configuredChunk;
  let start = 0;
  while (start < size) {
    const operation = "PATCH blob upload";
    const length = Math.min(chunkSize, size - start);
    const end = start + length - 1;
    let firstHop = true;
    const chunkStart = start;
    const body = () => {
      if (firstHop) {
        firstHop = false;
        return stagedBody(reader, chunkStart + length, (n) => progress.wire(n));
      }
      const replay = open(chunkStart, chunkStart + length);
      return stagedBody(replay, length, (n) => progress.wire(n));
    };
    const { response, url, offOrigin } = await send(context, request.origin, {
      method: "PATCH",
      url: session,
      headers: {
        "content-type": OCTET_STREAM,
        "content-length": String(length),
        "content-range": `${start}-${end}`,
      },
      body,
      replayable: source.randomAccess,
      signal: request.signal,
    }, operation);
    await expectStatus(response, [202], operation, { offOrigin });
    await discard(response);
    const acknowledged = parseUploadRange(response.headers.get("range"));
    if (acknowledged.start !== 0 || acknowledged.end !== end) {
      throw new ProtocolError(`${operation}: acknowledged range did not advance by the chunk`);
    }
    if (response.headers.has("location")) {
      session = resolveLocation(response.headers.get("location"), url, operation);
    }
    chunkSize = Math.max(chunkSize, chunkMinimum(response));
    start += length;
    progress.committed(start, size);
  }
  await reader.finish();
  const operation = "PUT blob upload";
  const { response, offOrigin } = await send(context, request.origin, {
    method: "PUT",
    url: withDigestQuery(session, request.digest),
    headers: { "content-type": OCTET_STREAM, "content-length": "0" },
    signal: request.signal,
  }, operation);
  await expectStatus(response, [201], operation, { offOrigin });
  await discard(response);
  progress.committed(size, size);
}

/**
 * DELETEs an abandoned session: best effort, bounded by 5 s, skipped when the caller's signal
 * ended, and never throwing.
 *
 * @example
 * ```ts ignore
 * await cleanup(context, request, session);
 * ```
 */
export async function cleanup(
  context: BlobContext,
  request: { origin: URL; signal: AbortSignal | undefined },
  session: URL,
): Promise<void> {
  if (request.signal?.aborted) return;
  const timeout = AbortSignal.timeout(CLEANUP_TIMEOUT_MS);
  const signal = request.signal === undefined
    ? timeout
    : AbortSignal.any([request.signal, timeout]);
  try {
    const { response } = await send(context, request.origin, {
      method: "DELETE",
      url: session,
      signal,
    }, "DELETE blob upload");
    await discard(response);
  } catch {
    // Best effort: the original outcome stays what the caller sees.
  }
}
