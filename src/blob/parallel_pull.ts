/**
 * Parallel download: a fixed set of workers fetches chunk ranges concurrently, the stream emits
 * them in order so the digest is verified exactly as in a single-stream pull, and a registry
 * that does not serve ranges gets a single stream instead.
 *
 * @module
 */
import { findError } from "../errors/find_error.ts";
import { ProtocolError } from "../errors/kinds.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { blobUrl } from "../registry/endpoints.ts";
import { formatRange, parseContentRange, validateContentRange } from "../registry/range.ts";
import { openStreamHash } from "../registry/stream_sha256.ts";
import { expectStatus, requireIdentityEncoding } from "../registry/status.ts";
import { AttemptBudget } from "./attempt_budget.ts";
import { LookAhead } from "./look_ahead.ts";
import { type BlobContext, discard, send } from "./context.ts";
import { acceptsRanges, contentLength, type PullRequest, verifiedStream } from "./pull.ts";
import { type RangePortion, readRange } from "./pull_range.ts";
import { toPublicError } from "./public_error.ts";

/** Parallel pull settings. */
export interface ParallelPullSettings {
  /** Size of the fixed worker set, the probe included. */
  workers: number;
  /** Bytes per scheduled chunk. */
  chunkSize: number;
}

/** Observes buffering, for tests and diagnostics. */
export interface ParallelPullObserver {
  /** Called whenever the number of received-but-not-emitted bytes changes. */
  buffered?(bytes: number): void;
  /** Called when the probe shows the registry does not serve ranges. */
  fallback?(): void;
}

interface Chunk {
  start: number;
  end: number;
  pieces: Uint8Array[];
  done: boolean;
}

/**
 * Downloads a blob with `settings.workers` concurrent ranged GETs of `settings.chunkSize`
 * bytes. The first GET is a probe (`bytes=0-<chunkSize-1>`) that uses one worker slot; when it
 * answers 200 the download continues as a single verifying stream. Workers fetch ahead of the
 * consumer only as far as the adaptive look-ahead allows (see `look_ahead.ts`), so received
 * bytes are buffered for at most `workers` chunks ahead of the consumer; closing the stream cancels the probe,
 * queued work, active bodies and backoff waits before it returns.
 *
 * @example
 * ```ts ignore
 * const stream = await parallelPullBlob(context, request, { workers: 4, chunkSize: 64 << 20 });
 * ```
 */
export async function parallelPullBlob(
  context: BlobContext,
  request: PullRequest,
  settings: ParallelPullSettings,
  observer: ParallelPullObserver = {},
): Promise<ReadableStream<Uint8Array>> {
  const operation = "GET blob";
  const abort = new AbortController();
  const signal = request.signal === undefined
    ? abort.signal
    : AbortSignal.any([request.signal, abort.signal]);
  const budget = new AttemptBudget(context.policy, context.clock, signal);
  const { chunkSize, workers } = settings;

  const probe = await budget.run(operation, async () => {
    const { response, offOrigin } = await send(context, request.origin, {
      method: "GET",
      url: blobUrl(request.origin, request.name, request.digest),
      headers: { "accept-encoding": "identity", range: formatRange(0, chunkSize - 1) },
      signal,
    }, operation);
    if (response.status === 416) {
      // An empty blob: nothing can satisfy a range. Never read this body.
      const value = response.headers.get("content-range");
      await discard(response);
      const parsed = value === null ? undefined : tryParse(value);
      if (parsed && "unsatisfied" in parsed && parsed.total === 0 && !request.size) {
        return { kind: "empty" as const };
      }
      await expectStatus(response, [206], operation, { offOrigin });
    }
    if (response.status === 200) {
      try {
        requireIdentityEncoding(response, operation);
      } catch (err) {
        await discard(response);
        throw err;
      }
      return { kind: "whole" as const, response };
    }
    await expectStatus(response, [206], operation, { offOrigin });
    try {
      requireIdentityEncoding(response, operation);
      const range = validateContentRange(
        response.headers.get("content-range"),
        { start: 0, total: request.size },
        operation,
      );
      if (range.total === undefined) {
        throw new ProtocolError(`${operation}: Content-Range has no total`);
      }
      if (range.end > chunkSize - 1) {
        throw new ProtocolError(`${operation}: Content-Range exceeds the request`);
      }
      const body = response.body ?? new ReadableStream({ start: (c) => c.close() });
      const portion: RangePortion = { body, start: 0, end: range.end, total: range.total };
      return { kind: "ranged" as const, portion, total: range.total };
    } catch (err) {
      await discard(response);
      throw err;
    }
  });

  if (probe.kind !== "ranged") {
    observer.fallback?.();
    const body = probe.kind === "whole"
      ? (probe.response.body ?? new ReadableStream({ start: (c) => c.close() }))
      : new ReadableStream<Uint8Array>({ start: (c) => c.close() });
    const total = probe.kind === "whole" ? contentLength(probe.response) : 0;
    if (request.size !== undefined && total !== undefined && total !== request.size) {
      await body.cancel().catch(() => {});
      throw new ProtocolError(`${operation}: Content-Length differs from the blob size`);
    }
    const ranges = probe.kind === "whole" ? acceptsRanges(probe.response) : false;
    return verifiedStream(
      context,
      request,
      { body, total, ranges, skip: 0 },
      budget,
      abort,
      signal,
    );
  }

  const total = probe.total;
  const chunks: Chunk[] = [];
  for (let start = 0; start < total; start += chunkSize) {
    chunks.push({ start, end: Math.min(total, start + chunkSize) - 1, pieces: [], done: false });
  }
  const hash = openStreamHash(total, context.hashThreads);
  const { progress } = request;
  let head = 0; // the chunk being emitted
  let next = 0; // the next chunk a worker takes
  let buffered = 0;
  const lookAhead = new LookAhead(workers);
  let headEmitted = false; // a wait after the head chunk's first bytes is a throughput shortage
  let failure: unknown;
  let changed = Promise.withResolvers<void>();
  const notify = () => {
    changed.resolve();
    changed = Promise.withResolvers<void>();
  };
  const fail = (err: unknown) => {
    if (failure === undefined && !abort.signal.aborted) failure = err;
    abort.abort();
    notify();
  };

  const worker = async (firstPortion?: RangePortion) => {
    let portion = firstPortion;
    while (!abort.signal.aborted) {
      if (next >= chunks.length) return;
      // Stay within the look-ahead of the consumer: bounds the buffered bytes.
      if (next >= head + lookAhead.window) {
        await changed.promise;
        continue;
      }
      const chunk = chunks[next++]!;
      await readRange(
        context,
        request,
        chunk.start,
        chunk.end,
        total,
        budget,
        signal,
        (bytes) => {
          chunk.pieces.push(bytes);
          buffered += bytes.byteLength;
          observer.buffered?.(buffered);
          notify();
        },
        portion,
      );
      portion = undefined;
      chunk.done = true;
      notify();
    }
  };

  const running: Promise<void>[] = [];
  const start = (firstPortion?: RangePortion) =>
    running.push(worker(firstPortion).catch((err) => fail(err)));
  start(probe.portion);
  for (let i = 1; i < Math.min(workers, chunks.length); i++) start();
  const settled = () => Promise.all(running).then(() => {});

  /** Complete chunks waiting behind the one being emitted. */
  const readyAhead = () => {
    let ready = 0;
    for (let i = head + 1; i < next; i++) if (chunks[i]!.done) ready++;
    return ready;
  };

  let closed = false;
  const finish = () => {
    closed = true;
    hash.close();
    progress.close();
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          if (failure !== undefined) throw failure;
          if (abort.signal.aborted) throw signal.reason;
          if (head >= chunks.length) {
            if ((await hash.digest()) !== request.digest) {
              throw new DigestMismatchError(operation);
            }
            finish();
            controller.close();
            await settled();
            return;
          }
          const chunk = chunks[head]!;
          const piece = chunk.pieces.shift();
          if (piece !== undefined) {
            lookAhead.piledUp(readyAhead());
            buffered -= piece.byteLength;
            observer.buffered?.(buffered);
            await hash.update(piece);
            headEmitted = true;
            controller.enqueue(piece);
            progress.committed(hash.bytes, total);
            return;
          }
          if (chunk.done) {
            head++;
            headEmitted = false;
            notify();
            continue;
          }
          if (headEmitted && lookAhead.starved()) notify();
          await changed.promise;
        }
      } catch (err) {
        finish();
        abort.abort();
        notify();
        await settled();
        const mapped = findError(err, DigestMismatchError) ? err : toPublicError(err);
        throw mapped;
      }
    },
    async cancel(reason) {
      if (closed) return;
      finish();
      abort.abort(reason);
      notify();
      await settled();
    },
  }, { highWaterMark: 0 });
}

function tryParse(value: string): ReturnType<typeof parseContentRange> | undefined {
  try {
    return parseContentRange(value);
  } catch {
    return undefined;
  }
}
