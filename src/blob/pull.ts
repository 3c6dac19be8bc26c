/**
 * Single-stream blob download that verifies the digest inside the stream; the bytes, joined
 * where they arrived together, and their continuations are the one blob reader's
 * (`remote/blob_reader.ts`).
 *
 * @module
 */
import { openStreamHash } from "../hashing/stream_sha256.ts";
import { AttemptBudget } from "../remote/retry.ts";
import { BlobReader } from "../remote/blob_reader.ts";
import { DigestCheck } from "../remote/digest_check.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import type { BlobContext } from "./context.ts";
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

/** What a download runs under: its budget, and the abort that ends its every request. */
export interface DownloadRun {
  /** The operation's attempt budget. */
  budget: AttemptBudget;
  /** Ends every request of the download. */
  abort: AbortController;
  /** The caller's signal combined with `abort`. */
  signal: AbortSignal;
}

/**
 * The budget and signals of one download of `request`.
 *
 * @example
 * ```ts ignore
 * const run = downloadRun(context, request);
 * ```
 */
export function downloadRun(
  context: BlobContext,
  request: { signal: AbortSignal | undefined },
): DownloadRun {
  const abort = new AbortController();
  const signal = request.signal === undefined
    ? abort.signal
    : AbortSignal.any([request.signal, abort.signal]);
  return { budget: new AttemptBudget(context.policy, context.clock, signal), abort, signal };
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
  const run = downloadRun(context, request);
  const reader = await BlobReader.open(request.repo, request.digest, {
    budget: run.budget,
    signal: run.signal,
    total: request.size,
  });
  return verifiedStream(context, request, reader, run.abort);
}

/**
 * The verifying stream over `reader`; shared with the parallel pull's single-stream fallback.
 *
 * @example
 * ```ts ignore
 * const stream = verifiedStream(context, request, reader, abort);
 * ```
 */
export function verifiedStream(
  context: BlobContext,
  request: PullRequest,
  reader: BlobReader,
  abort: AbortController,
): ReadableStream<Uint8Array> {
  const { progress, digest } = request;
  const hash = openStreamHash(reader.total, context.hashThreads);
  const check = new DigestCheck(digest, "GET blob");
  const close = () => {
    hash.close();
    progress.close();
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.readJoined();
        if (chunk === undefined) {
          await check.verify(hash);
          progress.committed(reader.position, reader.total ?? reader.position);
          close();
          controller.close();
          return;
        }
        await hash.update(chunk.bytes);
        controller.enqueue(chunk.bytes);
        progress.committed(reader.position, reader.total ?? -1);
      } catch (err) {
        close();
        abort.abort();
        reader.cancel();
        throw attachSentinel(err);
      }
    },
    async cancel(reason) {
      close();
      abort.abort(reason);
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
