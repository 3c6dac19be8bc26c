/**
 * Ranged download of part of a blob: every Content-Range is validated before its bytes are
 * exposed, shorter valid portions are continued, and the digest is not verified (it covers the
 * whole blob).
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { NetworkError, ProtocolError } from "../errors/kinds.ts";
import { AttemptBudget } from "../remote/retry.ts";
import { getRange, type RangePortion } from "../remote/blob_reads.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import type { BlobContext } from "./context.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import type { ProgressReporter } from "./progress.ts";
import { producerStream } from "./producer_stream.ts";
import { attachSentinel } from "../errors/attach_sentinel.ts";

/** At most this many successful 206 responses complete one requested range. */
export const MAX_RANGE_PORTIONS = 16;

/**
 * Reads `[start, end]` through as many portions as the server splits it into (at most 16
 * successful 206 responses), resuming a broken portion within the budget. `deliver` receives
 * the bytes in order. Used by `pullRange` and by each parallel-pull worker.
 */
export async function readRange(
  request: { repo: RemoteRepository; digest: string },
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
        portion = await getRange(request.repo, request.digest, position, end, total, signal);
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
          throw asNetworkFailure(operation, err, undefined, "body read failed");
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
        throw asNetworkFailure(operation, err, undefined, "body read failed");
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
  /** The repository's registry operations. */
  repo: RemoteRepository;
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
    () => getRange(request.repo, request.digest, offset, end, undefined, signal),
  );
  let delivered = 0;
  return producerStream(
    async (sink) => {
      await readRange(request, offset, end, first.total, budget, signal, (bytes) => {
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
      return attachSentinel(err);
    },
  );
}
