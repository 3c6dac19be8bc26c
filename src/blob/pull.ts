/**
 * Single-stream blob download that verifies the digest inside the stream and resumes a broken
 * body with a ranged GET from the last verified byte.
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { NetworkError, ProtocolError } from "../errors/kinds.ts";
import { blobUrl } from "../registry/endpoints.ts";
import { formatRange, parseContentRange, validateContentRange } from "../registry/range.ts";
import { openStreamHash } from "../registry/stream_sha256.ts";
import { expectStatus, requireIdentityEncoding } from "../registry/status.ts";
import { AttemptBudget } from "../transport/retry.ts";
import { bodyError } from "./body_error.ts";
import { type BlobContext, discard, send } from "./context.ts";
import type { ProgressReporter } from "./progress.ts";
import { toPublicError } from "./public_error.ts";

/** Inputs of a blob download. */
export interface PullRequest {
  /** The registry origin. */
  origin: URL;
  /** The repository path. */
  name: string;
  /** The expected sha256 digest. */
  digest: string;
  /** The size, when the caller knows it (checked against the registry's answer). */
  size: number | undefined;
  /** Cancels the download. */
  signal: AbortSignal | undefined;
  /** The progress callbacks of this call. */
  progress: ProgressReporter;
}

/** A response that starts or continues the body, and what it says. */
export interface BodyResponse {
  /** The body to read. */
  body: ReadableStream<Uint8Array>;
  /** The blob's total size when the response states it. */
  total: number | undefined;
  /** True when the server showed it serves byte ranges. */
  ranges: boolean;
  /** Bytes at the start of `body` that were already delivered (a 200 answer to a resume). */
  skip: number;
}

/** `Accept-Ranges: bytes` on a response. */
export function acceptsRanges(response: Response): boolean {
  return /\bbytes\b/i.test(response.headers.get("accept-ranges") ?? "");
}

/**
 * Sends one GET of the blob, ranged from `offset` when it is greater than zero, and checks the
 * answer. Returns `"complete"` for the terminal 416 case: `bytes *\/N` with N equal to `offset`
 * and to any known total (the 416 body is never read).
 */
export async function getBlob(
  context: BlobContext,
  request: { origin: URL; name: string; digest: string },
  offset: number,
  total: number | undefined,
  signal: AbortSignal,
): Promise<BodyResponse | "complete"> {
  const operation = "GET blob";
  const headers = new Headers({ "accept-encoding": "identity" });
  if (offset > 0) headers.set("range", formatRange(offset));
  const { response, offOrigin } = await send(context, request.origin, {
    method: "GET",
    url: blobUrl(request.origin, request.name, request.digest),
    headers,
    signal,
  }, operation);
  if (offset > 0 && response.status === 416) {
    const value = response.headers.get("content-range");
    await discard(response);
    const parsed = value === null ? undefined : safeParse(value);
    if (
      parsed !== undefined && "unsatisfied" in parsed && parsed.total === offset &&
      (total === undefined || total === offset)
    ) {
      return "complete";
    }
  }
  if (response.status === 206 && offset > 0) {
    try {
      requireIdentityEncoding(response, operation);
      const range = validateContentRange(
        response.headers.get("content-range"),
        { start: offset, end: total === undefined ? undefined : total - 1, total },
        operation,
      );
      if (range.total !== undefined && range.end !== range.total - 1) {
        throw new ProtocolError(`${operation}: Content-Range does not reach the end`);
      }
      return { body: bodyOf(response), total: range.total ?? total, ranges: true, skip: 0 };
    } catch (err) {
      await discard(response);
      throw err;
    }
  }
  await expectStatus(response, [200], operation, { offOrigin });
  try {
    requireIdentityEncoding(response, operation);
    const length = contentLength(response);
    if (total !== undefined && length !== undefined && length !== total) {
      throw new ProtocolError(`${operation}: Content-Length differs from the blob size`);
    }
    return {
      body: bodyOf(response),
      total: total ?? length,
      ranges: acceptsRanges(response),
      skip: offset,
    };
  } catch (err) {
    await discard(response);
    throw err;
  }
}

function safeParse(value: string): ReturnType<typeof parseContentRange> | undefined {
  try {
    return parseContentRange(value);
  } catch {
    return undefined;
  }
}

function bodyOf(response: Response): ReadableStream<Uint8Array> {
  return response.body ?? new ReadableStream({ start: (c) => c.close() });
}

/** The Content-Length of a response, when present and valid. */
export function contentLength(response: Response): number | undefined {
  const value = response.headers.get("content-length");
  if (value === null || !/^\d+$/.test(value)) return undefined;
  const length = Number(value);
  return Number.isSafeInteger(length) ? length : undefined;
}

/**
 * Downloads a blob as a verifying stream: resolves once the registry answered the first GET
 * (rejecting with the mapped error otherwise). The stream closes only when the bytes hash to
 * `digest`; otherwise it errors with `DigestMismatchError`. A body that breaks is resumed from
 * the last delivered byte when the server serves ranges, within the operation's attempt budget.
 *
 * @example
 * ```ts ignore
 * const stream = await pullBlob(context, { origin, name, digest, size, signal, progress });
 * ```
 */
export async function pullBlob(
  context: BlobContext,
  request: PullRequest,
): Promise<ReadableStream<Uint8Array>> {
  const abort = new AbortController();
  const signal = request.signal === undefined
    ? abort.signal
    : AbortSignal.any([request.signal, abort.signal]);
  const budget = new AttemptBudget(context.policy, context.clock, signal);
  const first = await budget.run(
    "GET blob",
    () => getBlob(context, request, 0, request.size, signal),
  );
  if (first === "complete") throw new ProtocolError("GET blob: unexpected answer");
  return verifiedStream(context, request, first, budget, abort, signal);
}

/**
 * Builds the verifying stream over a first response; shared with the parallel pull's
 * single-stream fallback.
 */
export function verifiedStream(
  context: BlobContext,
  request: PullRequest,
  first: BodyResponse,
  budget: AttemptBudget,
  abort: AbortController,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const operation = "GET blob";
  const { progress, digest } = request;
  let total = first.total;
  const hash = openStreamHash(total, context.hashThreads);
  let ranges = first.ranges;
  let skip = first.skip;
  let reader = first.body.getReader();
  let offset = 0;

  const finish = async (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (total !== undefined && offset !== total) {
      throw new NetworkError(`${operation}: body ended early`);
    }
    if ((await hash.digest()) !== digest) throw new DigestMismatchError(operation);
    hash.close();
    progress.committed(offset, total ?? offset);
    progress.close();
    controller.close();
  };

  const resume = async (err: unknown): Promise<boolean> => {
    if (signal.aborted) throw signal.reason;
    if (!ranges && offset > 0) throw err;
    await budget.failed(operation, err);
    for (;;) {
      try {
        const next = await getBlob(context, request, offset, total, signal);
        if (next === "complete") return true;
        reader = next.body.getReader();
        total = next.total;
        ranges ||= next.ranges;
        skip = next.skip;
        return false;
      } catch (failure) {
        await budget.failed(operation, failure);
      }
    }
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reader.read();
            if (chunk.done && total !== undefined && offset < total) {
              throw new NetworkError(`${operation}: body ended early`);
            }
          } catch (err) {
            if (signal.aborted || isAbortError(err)) throw signal.reason ?? err;
            if (await resume(bodyError(err, operation))) return await finish(controller);
            continue;
          }
          if (chunk.done) return await finish(controller);
          let value = chunk.value;
          if (skip > 0) {
            const dropped = Math.min(skip, value.byteLength);
            skip -= dropped;
            value = value.subarray(dropped);
          }
          if (value.byteLength === 0) continue;
          if (total !== undefined && offset + value.byteLength > total) {
            throw new ProtocolError(`${operation}: body longer than the blob size`);
          }
          await hash.update(value);
          offset += value.byteLength;
          controller.enqueue(value);
          progress.committed(offset, total ?? -1);
          return;
        }
      } catch (err) {
        hash.close();
        progress.close();
        abort.abort();
        reader.cancel().catch(() => {});
        throw toPublicError(err);
      }
    },
    async cancel(reason) {
      hash.close();
      progress.close();
      abort.abort(reason);
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}
