/**
 * Single-stream blob download that verifies the digest inside the stream and resumes a broken
 * body with a ranged GET from the last verified byte.
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { NetworkError, ProtocolError } from "../errors/kinds.ts";
import { openStreamHash } from "../registry/stream_sha256.ts";
import { AttemptBudget } from "../transport/retry.ts";
import { getBlob } from "../remote/blob_reads.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import type { BlobContext } from "./context.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import type { ProgressReporter } from "./progress.ts";
import { attachSentinel } from "../errors/attach_sentinel.ts";

/** Inputs of a blob download. */
export interface PullRequest {
  /** The repository's registry operations. */
  repo: RemoteRepository;
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

/** GET blob from `offset` as a body that skips what was already delivered. */
async function getBody(
  request: PullRequest,
  offset: number,
  total: number | undefined,
  signal: AbortSignal,
): Promise<BodyResponse | "complete"> {
  const answer = await getBlob(request.repo, request.digest, offset, total, signal);
  if (answer === "complete") return answer;
  return {
    body: answer.body,
    total: answer.total,
    ranges: answer.ranges,
    skip: offset - answer.start,
  };
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
    () => getBody(request, 0, request.size, signal),
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
        const next = await getBody(request, offset, total, signal);
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
            if (await resume(asNetworkFailure(operation, err, undefined, "body read failed"))) {
              return await finish(controller);
            }
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
        throw attachSentinel(err);
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
