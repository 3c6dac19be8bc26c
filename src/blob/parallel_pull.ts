/**
 * Parallel download: a fixed set of workers fetches chunk ranges concurrently, the stream emits
 * them in order so the digest is verified exactly as in a single-stream pull, and a registry
 * that does not serve ranges gets a single stream instead.
 *
 * @module
 */
import { findError } from "../errors/find_error.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { concatBytes } from "../registry/bytes.ts";
import { openStreamHash, type StreamHash } from "../hashing/stream_sha256.ts";
import {
  BlobReader,
  bodyOf,
  EMIT_BYTES,
  probeBlob,
  type RangePortion,
} from "../remote/blob_reader.ts";
import { DigestCheck } from "../remote/digest_check.ts";
import type { BlobContext } from "./context.ts";
import { type DownloadRun, downloadRun, type PullRequest, verifiedStream } from "./pull.ts";
import { LookAhead } from "./look_ahead.ts";
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { deferred } from "../transport/deferred.ts";

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
 * The chunks of a parallel download and where the workers and the consumer are. The plan grows
 * as it goes: a chunk exists from the moment a worker takes it until the consumer has emitted
 * it, so what it holds is bounded by the look-ahead (at most `workers` chunks), never by the
 * total a registry states.
 */
class Schedule {
  /** The chunks taken and not yet emitted, by index. */
  readonly #live = new Map<number, Chunk>();
  /** How many chunks the blob has: arithmetic on the stated total, nothing allocated. */
  readonly count: number;
  readonly #total: number;
  readonly #chunkSize: number;
  /** The chunk being emitted. */
  head = 0;
  /** The next chunk a worker takes. */
  next = 0;
  /** Received bytes not yet emitted. */
  buffered = 0;
  /** The first failure of a worker. */
  failure: unknown;
  /** How many chunks past the head the workers may fetch. */
  readonly lookAhead: LookAhead;
  #changed = deferred<void>();
  readonly #abort: AbortController;

  constructor(total: number, chunkSize: number, workers: number, abort: AbortController) {
    this.lookAhead = new LookAhead(workers);
    this.count = Math.ceil(total / chunkSize);
    this.#total = total;
    this.#chunkSize = chunkSize;
    this.#abort = abort;
  }

  /** Makes the next chunk a worker fetches. */
  take(): Chunk {
    const start = this.next * this.#chunkSize;
    const end = Math.min(this.#total, start + this.#chunkSize) - 1;
    const chunk: Chunk = { start, end, pieces: [], done: false };
    this.#live.set(this.next++, chunk);
    return chunk;
  }

  /** The chunk being emitted (taken by a worker or not yet). */
  headChunk(): Chunk | undefined {
    return this.#live.get(this.head);
  }

  /** The head chunk was emitted whole: forget it and move on. */
  advance(): void {
    this.#live.delete(this.head++);
  }

  /** Complete chunks waiting behind the one being emitted. */
  readyAhead(): number {
    let ready = 0;
    for (let i = this.head + 1; i < this.next; i++) if (this.#live.get(i)?.done) ready++;
    return ready;
  }

  /** Resolves at the next change of any chunk or position. */
  get changed(): Promise<void> {
    return this.#changed.promise;
  }

  /** Wakes everyone waiting for a change. */
  notify(): void {
    this.#changed.resolve();
    this.#changed = deferred<void>();
  }

  /** Records the first failure and stops the download. */
  fail(err: unknown): void {
    if (this.failure === undefined && !this.#abort.signal.aborted) this.failure = err;
    this.#abort.abort();
    this.notify();
  }
}

/**
 * Starts `workers` workers (the first continues the probe's portion) that take chunks in order,
 * staying within the adaptive look-ahead of the consumer; resolves when all have stopped.
 */
function runWorkers(
  schedule: Schedule,
  request: PullRequest,
  download: Download,
  workers: number,
  observer: ParallelPullObserver,
): Promise<void> {
  const { probe, budget, abort, signal } = download;
  const worker = async (firstPortion?: RangePortion) => {
    let portion = firstPortion;
    while (!abort.signal.aborted) {
      if (schedule.next >= schedule.count) return;
      // Stay within the look-ahead of the consumer: bounds the buffered bytes.
      if (schedule.next >= schedule.head + schedule.lookAhead.window) {
        await schedule.changed;
        continue;
      }
      const chunk = schedule.take();
      const deliver = (bytes: Uint8Array) => {
        chunk.pieces.push(bytes);
        schedule.buffered += bytes.byteLength;
        observer.buffered?.(schedule.buffered);
        schedule.notify();
      };
      const reader = await BlobReader.open(request.repo, request.digest, {
        budget,
        signal,
        offset: chunk.start,
        end: chunk.end,
        total: probe.total,
        ...(portion === undefined ? {} : { first: portion }),
      });
      portion = undefined;
      for (
        let piece = await reader.readJoined();
        piece !== undefined;
        piece = await reader.readJoined()
      ) {
        deliver(piece.bytes);
      }
      chunk.done = true;
      schedule.notify();
    }
  };
  const running = [worker(probe.portion).catch((err) => schedule.fail(err))];
  for (let i = 1; i < Math.min(workers, schedule.count); i++) {
    running.push(worker().catch((err) => schedule.fail(err)));
  }
  return Promise.all(running).then(() => {});
}

/**
 * Downloads a blob with `settings.workers` concurrent ranged GETs of `settings.chunkSize`
 * bytes. The first GET is a probe (`bytes=0-<chunkSize-1>`) that uses one worker slot; when it
 * answers 200 the download continues as a single verifying stream. Workers fetch ahead of the
 * consumer only as far as the adaptive look-ahead allows (`look_ahead.ts`), at most `workers`
 * chunks, which bounds the buffered bytes; closing the stream cancels the probe,
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
  const { budget, abort, signal } = downloadRun(context, request);
  const { chunkSize } = settings;

  const probing = budget.run(
    operation,
    () => probeBlob(request.repo, request.digest, chunkSize - 1, request.size, signal),
  );
  // Starting a hashing thread takes a while: with the size known, it starts during the probe.
  const early = request.size === undefined
    ? undefined
    : openStreamHash(request.size, context.hashThreads);
  let probe: Awaited<typeof probing>;
  try {
    probe = await probing;
  } catch (err) {
    early?.close();
    throw err;
  }
  if (probe.kind !== "ranged") {
    early?.close();
    observer.fallback?.();
    const first = probe.kind === "whole"
      ? probe.answer
      : { body: bodyOf(new Response(null)), start: 0, total: 0, ranges: false };
    const reader = await BlobReader.open(request.repo, request.digest, {
      budget,
      signal,
      total: request.size,
      first,
    });
    return verifiedStream(context, request, reader, abort);
  }
  const hash = early ?? openStreamHash(probe.total, context.hashThreads);
  return orderedStream(request, settings, observer, {
    probe,
    budget,
    abort,
    signal,
  }, hash);
}

/**
 * Takes the next piece of `pieces`, joined with those behind it up to `EMIT_BYTES` (as the single
 * stream does): draining chunks that arrived ahead costs one hash update and one consumer write
 * per MiB instead of one per network read.
 */
function takeReady(pieces: Uint8Array[]): Uint8Array | undefined {
  const first = pieces.shift();
  if (first === undefined) return undefined;
  let length = first.byteLength;
  let count = 0;
  while (count < pieces.length && length + pieces[count]!.byteLength <= EMIT_BYTES) {
    length += pieces[count++]!.byteLength;
  }
  return concatBytes([first, ...pieces.splice(0, count)], length);
}

/** The state a parallel download shares with its stream: its run, and the probe's answer. */
interface Download extends DownloadRun {
  /** The probe's answer: the first portion and the blob's total. */
  probe: { portion: RangePortion; total: number };
}

/**
 * Schedules the chunks on the workers (the probe's portion is the first chunk's start) and
 * emits them in order through the verifying `hash`.
 */
function orderedStream(
  request: PullRequest,
  settings: ParallelPullSettings,
  observer: ParallelPullObserver,
  download: Download,
  hash: StreamHash,
): ReadableStream<Uint8Array> {
  const operation = "GET blob";
  const { probe, abort, signal } = download;
  const { chunkSize, workers } = settings;
  const total = probe.total;
  const schedule = new Schedule(total, chunkSize, workers, abort);
  const check = new DigestCheck(request.digest, operation);
  const { progress } = request;
  const settled = runWorkers(schedule, request, download, workers, observer);

  // A wait after the head chunk's first bytes means the network, not the hash, is the bound.
  let headEmitted = false;
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
          if (schedule.failure !== undefined) throw schedule.failure;
          if (abort.signal.aborted) throw signal.reason;
          if (schedule.head >= schedule.count) {
            await check.verify(hash);
            finish();
            controller.close();
            await settled;
            return;
          }
          const chunk = schedule.headChunk();
          const piece = chunk === undefined ? undefined : takeReady(chunk.pieces);
          if (piece !== undefined) {
            schedule.lookAhead.piledUp(schedule.readyAhead());
            schedule.buffered -= piece.byteLength;
            observer.buffered?.(schedule.buffered);
            await hash.update(piece);
            headEmitted = true;
            controller.enqueue(piece);
            progress.committed(hash.bytes, total);
            return;
          }
          if (chunk?.done) {
            schedule.advance();
            headEmitted = false;
            schedule.notify();
            continue;
          }
          if (headEmitted && schedule.lookAhead.starved()) schedule.notify();
          await schedule.changed;
        }
      } catch (err) {
        finish();
        abort.abort();
        schedule.notify();
        await settled;
        const mapped = findError(err, DigestMismatchError) ? err : attachSentinel(err);
        throw mapped;
      }
    },
    async cancel(reason) {
      if (closed) return;
      finish();
      abort.abort(reason);
      schedule.notify();
      await settled;
    },
  }, { highWaterMark: 0 });
}
