/**
 * Single-stream blob download that verifies the digest inside the stream; the body, its joined
 * reads and its continuations are `resuming_body.ts`'s.
 *
 * @module
 */
import { DigestMismatchError } from "../errors/sentinels.ts";
import { ProtocolError } from "../errors/kinds.ts";
import { openStreamHash } from "../registry/stream_sha256.ts";
import { AttemptBudget } from "../remote/retry.ts";
import { getBlob } from "../remote/blob_reads.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import type { BlobContext } from "./context.ts";
import type { ProgressReporter } from "./progress.ts";
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { type BodyResponse, ResumingBody } from "./resuming_body.ts";

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
  const { progress, digest } = request;
  const hash = openStreamHash(first.total, context.hashThreads);
  const body = new ResumingBody(
    first,
    (offset, total) => getBody(request, offset, total, signal),
    budget,
    signal,
  );
  const close = () => {
    hash.close();
    progress.close();
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const bytes = await body.read();
        if (bytes === undefined) {
          if ((await hash.digest()) !== digest) throw new DigestMismatchError("GET blob");
          progress.committed(body.offset, body.total ?? body.offset);
          close();
          controller.close();
          return;
        }
        await hash.update(bytes);
        controller.enqueue(bytes);
        progress.committed(body.offset, body.total ?? -1);
      } catch (err) {
        close();
        abort.abort();
        body.cancel();
        throw attachSentinel(err);
      }
    },
    async cancel(reason) {
      close();
      abort.abort(reason);
      await body.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
