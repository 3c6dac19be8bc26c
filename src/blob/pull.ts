/**
 * Single-stream blob download that verifies the digest inside the stream and resumes a broken
 * body with a ranged GET from the last verified byte.
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { NetworkError, ProtocolError } from "../errors/kinds.ts";
import { concatBytes } from "../registry/bytes.ts";
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
 * Reads that arrive within `GATHER_MS` of each other are joined up to `EMIT_BYTES` before they
 * are handed on: a fast link delivers 64 KiB reads, and each one costs a hash update and a
 * consumer write; a slow link is never held back for longer than a read plus `GATHER_MS`.
 */
export const EMIT_BYTES = 1 << 20;
const GATHER_MS = 10;

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

  /** A read taken while gathering that ended the body or failed: the next pull handles it. */
  let held: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;

  /** The next bytes of the blob (`skip` applied), or undefined at its end; resumes a broken body. */
  const nextBytes = async (): Promise<Uint8Array | undefined> => {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        const read = held ?? reader.read();
        held = undefined;
        chunk = await read;
        if (chunk.done && total !== undefined && offset < total) {
          throw new NetworkError(`${operation}: body ended early`);
        }
      } catch (err) {
        if (signal.aborted || isAbortError(err)) throw signal.reason ?? err;
        if (await resume(asNetworkFailure(operation, err, undefined, "body read failed"))) {
          return undefined;
        }
        continue;
      }
      if (chunk.done) return undefined;
      const value = withoutSkipped(chunk.value);
      if (value.byteLength === 0) continue;
      checkRoom(value.byteLength);
      return value;
    }
  };

  const withoutSkipped = (value: Uint8Array): Uint8Array => {
    if (skip === 0) return value;
    const dropped = Math.min(skip, value.byteLength);
    skip -= dropped;
    return value.subarray(dropped);
  };

  const checkRoom = (length: number) => {
    if (total !== undefined && offset + length > total) {
      throw new ProtocolError(`${operation}: body longer than the blob size`);
    }
  };

  /**
   * Joins `first` with the reads behind it up to `EMIT_BYTES`, for at most `GATHER_MS`. A read
   * that ends or breaks the body is held for the next pull, so a continuation starts after the
   * bytes handed on.
   */
  const gather = async (first: Uint8Array): Promise<Uint8Array> => {
    const pieces = [first];
    let length = first.byteLength;
    const until = performance.now() + GATHER_MS;
    while (length < EMIT_BYTES && performance.now() < until) {
      const read = reader.read();
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await read;
      } catch {
        held = read;
        break;
      }
      if (chunk.done) {
        held = read;
        break;
      }
      const value = withoutSkipped(chunk.value);
      checkRoom(length + value.byteLength);
      pieces.push(value);
      length += value.byteLength;
    }
    return concatBytes(pieces, length);
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const first = await nextBytes();
        if (first === undefined) return await finish(controller);
        const value = first.byteLength >= EMIT_BYTES ? first : await gather(first);
        await hash.update(value);
        offset += value.byteLength;
        controller.enqueue(value);
        progress.committed(offset, total ?? -1);
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
