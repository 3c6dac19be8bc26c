/**
 * Ranged download of part of a blob through the one blob reader: every Content-Range is
 * validated before its bytes are exposed, shorter valid portions are continued, and the digest
 * is not verified (it covers the whole blob).
 *
 * @module
 */
import { BlobReader } from "../remote/blob_reader.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import type { BlobContext } from "./context.ts";
import type { ProgressReporter } from "./progress.ts";
import { producerStream } from "./producer_stream.ts";
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { downloadRun } from "./pull.ts";

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
  const { budget, abort, signal } = downloadRun(context, request);
  const reader = await BlobReader.open(request.repo, request.digest, {
    budget,
    signal,
    offset,
    end: offset + length - 1,
  });
  return producerStream(
    async (sink) => {
      for (let chunk = await reader.read(); chunk !== undefined; chunk = await reader.read()) {
        progress.committed(reader.position - offset, length);
        await sink.write(chunk.bytes);
      }
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
