/**
 * Ranged download of part of a blob: every Content-Range is validated before its bytes are
 * exposed, shorter valid portions are continued, and the digest is not verified (it covers the
 * whole blob).
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { NetworkError, ProtocolError } from "../errors/kinds.ts";
import { blobUrl } from "../registry/endpoints.ts";
import { formatRange, validateContentRange } from "../registry/range.ts";
import { expectStatus, requireIdentityEncoding } from "../registry/status.ts";
import { AttemptBudget } from "../transport/retry.ts";
import { bodyError } from "./body_error.ts";
import { type BlobContext, discard, send } from "./context.ts";
import type { ProgressReporter } from "./progress.ts";
import { producerStream } from "./producer_stream.ts";
import { toPublicError } from "./public_error.ts";

/** At most this many successful 206 responses complete one requested range. */
export const MAX_RANGE_PORTIONS = 16;

/** A ranged response whose Content-Range was validated. */
export interface RangePortion {
  /** The body: exactly `end - start + 1` bytes are expected. */
  body: ReadableStream<Uint8Array>;
  /** First byte of the portion. */
  start: number;
  /** Last byte of the portion (inclusive). */
  end: number;
  /** The blob size the server stated, if any. */
  total: number | undefined;
}

/**
 * Sends one ranged GET for `[start, end]` and validates the 206 answer: the portion must begin
 * at `start`, end at or before `end`, and agree with a known total. Anything but 206 is an
 * error (a 200 means the server ignored the range).
 */
export async function getRange(
  context: BlobContext,
  request: { origin: URL; name: string; digest: string },
  start: number,
  end: number,
  total: number | undefined,
  signal: AbortSignal,
): Promise<RangePortion> {
  const operation = "GET blob range";
  const { response, offOrigin } = await send(context, request.origin, {
    method: "GET",
    url: blobUrl(request.origin, request.name, request.digest),
    headers: { "accept-encoding": "identity", range: formatRange(start, end) },
    signal,
  }, operation);
  await expectStatus(response, [206], operation, { offOrigin });
  try {
    requireIdentityEncoding(response, operation);
    const range = validateContentRange(
      response.headers.get("content-range"),
      { start, total },
      operation,
    );
    if (range.end > end) throw new ProtocolError(`${operation}: Content-Range exceeds the request`);
    const body = response.body ?? new ReadableStream({ start: (c) => c.close() });
    return { body, start: range.start, end: range.end, total: range.total ?? total };
  } catch (err) {
    await discard(response);
    throw err;
  }
}

/**
 * Reads `[start, end]` through as many portions as the server splits it into (at most 16
 * successful 206 responses), resuming a broken portion within the budget. `deliver` receives
 * the bytes in order. Used by `pullRange` and by each parallel-pull worker.
 */
export async function readRange(
  context: BlobContext,
  request: { origin: URL; name: string; digest: string },
  start: number,
  end: number,
  knownTotal: number | undefined,
  budget: AttemptBudget,
  signal: AbortSignal,
  deliver: (bytes: Uint8Array) => void | Promise<void>,
  first?: RangePortion,
): Promise<number | undefined> {
  const operation = "GET blob range";
  let total = knownTotal;
  let position = start;
  let portions = 0;
  let portion = first;
  while (position <= end) {
    if (portion === undefined) {
      if (portions >= MAX_RANGE_PORTIONS) {
        throw new ProtocolError(`${operation}: range split into too many portions`);
      }
      try {
        portion = await getRange(context, request, position, end, total, signal);
      } catch (err) {
        await budget.failed(operation, err);
        continue;
      }
    }
    portions++;
    total = portion.total;
    const reader = portion.body.getReader();
    const portionEnd = portion.end;
    portion = undefined;
    try {
      while (position <= portionEnd) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (signal.aborted || isAbortError(err)) throw signal.reason ?? err;
          throw bodyError(err, operation);
        }
        if (chunk.done) throw new NetworkError(`${operation}: body ended early`);
        const value = chunk.value;
        if (position + value.byteLength > portionEnd + 1) {
          throw new ProtocolError(`${operation}: body longer than its Content-Range`);
        }
        position += value.byteLength;
        if (value.byteLength > 0) await deliver(value);
      }
      // A portion must end where its Content-Range said.
      const rest = await reader.read().catch((err) => {
        throw bodyError(err, operation);
      });
      if (!rest.done && rest.value.byteLength > 0) {
        throw new ProtocolError(`${operation}: body longer than its Content-Range`);
      }
    } catch (err) {
      reader.cancel().catch(() => {});
      if (signal.aborted) throw signal.reason;
      if (err instanceof ProtocolError) throw err;
      // A broken portion: retry the rest within the budget (counts as a new portion).
      await budget.failed(operation, err);
    } finally {
      reader.releaseLock?.();
    }
  }
  return total;
}

/** Inputs of {@linkcode pullRangeBlob}. */
export interface PullRangeRequest {
  /** The registry origin. */
  origin: URL;
  /** The repository path. */
  name: string;
  /** The blob digest (not verified). */
  digest: string;
  /** First byte. */
  offset: number;
  /** Number of bytes. */
  length: number;
  /** Cancels the download. */
  signal: AbortSignal | undefined;
  /** Progress of this call. */
  progress: ProgressReporter;
}

/**
 * Returns a stream of `length` bytes from `offset`. Resolves once the first portion's
 * Content-Range was validated; later failures error the stream.
 *
 * @example
 * ```ts ignore
 * const stream = await pullRangeBlob(context, { origin, name, digest, offset, length, ... });
 * ```
 */
export async function pullRangeBlob(
  context: BlobContext,
  request: PullRangeRequest,
): Promise<ReadableStream<Uint8Array>> {
  const { offset, length, progress } = request;
  if (length === 0) {
    progress.committed(0, 0);
    progress.close();
    return new ReadableStream({ start: (c) => c.close() });
  }
  const abort = new AbortController();
  const signal = request.signal === undefined
    ? abort.signal
    : AbortSignal.any([request.signal, abort.signal]);
  const budget = new AttemptBudget(context.policy, context.clock, signal);
  const end = offset + length - 1;
  const first = await budget.run(
    "GET blob range",
    () => getRange(context, request, offset, end, undefined, signal),
  );
  let delivered = 0;
  return producerStream(
    async (sink) => {
      await readRange(context, request, offset, end, first.total, budget, signal, (bytes) => {
        delivered += bytes.byteLength;
        progress.committed(delivered, length);
        return sink.write(bytes);
      }, first);
      progress.close();
    },
    (reason) => {
      progress.close();
      abort.abort(reason);
    },
    (err) => {
      progress.close();
      return toPublicError(err);
    },
  );
}
