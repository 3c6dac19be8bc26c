/**
 * The pull into a stream: the file's bytes in order into a `WritableStream` (standard output,
 * a pipe, a socket). Parts download in parallel, each into a place of its own, and a part's
 * bytes are written to the stream as soon as the whole part has verified and every part before
 * it is written. Workers fetch at most `workers` parts ahead of the part being written (the
 * window), so what is held is bounded: `workers × part size` bytes, in memory when that fits in
 * the memory window, else in files of a temporary directory, except that a stream which lets
 * chunks be reused keeps as many parts in memory as fit, in buffers that serve part after part.
 *
 * @module
 */
import type { Connection } from "./connection.ts";
import { SpillDirectory } from "./fs_spill.ts";
import { FilePart, type HeldPart, MemoryPart } from "./held_part.ts";
import type { PartDescriptor } from "./manifest.ts";
import { downloadPart, partDownloadBuffers } from "./part_download.ts";
import { FirstFailure } from "./part_workers.ts";
import { ProgressTracker } from "./progress.ts";
import { resolveManifest } from "./resolve_manifest.ts";
import { type RangeSupport, StripedPart, stripesOf } from "./striped_part.ts";
import { hashingFor, type TransferJob } from "./transfer_job.ts";
import { abortable } from "../transport/abortable.ts";
import { deferred } from "../transport/deferred.ts";

/** The most bytes a pull into a stream holds in memory before it spills parts to disk. */
export const DEFAULT_MEMORY_WINDOW_BYTES: number = 256 * 1024 * 1024;

// One read of a body lands at most this many bytes, for every part of a pull into a stream
// (held in memory or a temporary file, whole or in stripes). What costs is the size of the part
// files' writes: with 1 MiB reads (or these copied into 1 MiB writes) a pull of 2 GiB to standard
// output (512 MiB parts, each through a temporary file) took 5.7–7.5 s, with these 4.2–5.2 s; a
// pull to a file spends an eighth less CPU on 1 MiB reads than on these.
const HELD_READ_BYTES = 256 * 1024;

/** What the pull into a stream needs, already validated. */
export interface StreamPullJob extends TransferJob {
  /** Receives the file's bytes in order; closed at the end, aborted on failure. */
  writable: WritableStream<Uint8Array>;
  /** Bytes of parts that may be held in memory; a larger window goes to a temporary directory. */
  memoryWindowBytes: number;
  /** Where the temporary directory is made (default: the system's temporary directory). */
  spillDirectory?: string;
  /** The stream is done with a chunk once its write resolved: read-back buffers are reused. */
  reuseChunks?: boolean;
}

/**
 * What {@linkcode PartedClient.pull} into a stream resolves to.
 *
 * @example Reporting a pull to a stream
 * ```ts
 * import type { StreamPullResult } from "@ocipart/ocipart";
 * const describe = (r: StreamPullResult) =>
 *   `${r.size} bytes in ${r.partsFetched} parts${r.spilled ? " (spilled to disk)" : ""}`;
 * console.log(describe({ digest: "sha256:…", size: 30, bytesFetched: 30, partsFetched: 3, spilled: false }));
 * // "30 bytes in 3 parts"
 * ```
 */
export interface StreamPullResult {
  /** The digest of the manifest pulled. */
  digest: string;
  /** The file's size in bytes: all written to the stream. */
  size: number;
  /** Part bytes received from the registry. */
  bytesFetched: number;
  /** Parts downloaded. */
  partsFetched: number;
  /** The window did not fit in memory: parts waited in a temporary directory (now removed). */
  spilled: boolean;
}

/**
 * Pulls the artifact of `job` into its writable stream.
 *
 * @example
 * ```ts ignore
 * import { runStreamPull } from "./stream_pull.ts";
 * const result = await runStreamPull(job, () => connect(session, reference, true));
 * ```
 */
export async function runStreamPull(
  job: StreamPullJob,
  connect: () => Connection,
): Promise<StreamPullResult> {
  job.signal?.throwIfAborted();
  const writer = job.writable.getWriter();
  const connection = connect();
  const latch = new FirstFailure(job.signal);
  const { policy, clock } = job;
  let spill: SpillDirectory | undefined;
  let progress: ProgressTracker | undefined;
  let hashThreads: ReturnType<TransferJob["hashing"]> | undefined;
  try {
    const { manifest, digest } = await resolveManifest(connection, job.reference, {
      signal: latch.signal,
      policy,
      clock,
    });
    const parts = manifest.parts;
    const window = Math.min(job.workers, parts.length);
    const memory = memorySlots(job, window, manifest.partSize);
    if (memory.count < window) spill = await SpillDirectory.create(job.spillDirectory);
    hashThreads = hashingFor(job, manifest.fileSize, job.workers, "download");
    progress = new ProgressTracker(manifest.fileSize, parts.length, "downloading", job.onProgress);
    const tracker = progress;
    tracker.onFailure = (err) => latch.stop(err);
    const context = {
      repo: connection.repo,
      progress: tracker,
      hashThreads,
      buffers: partDownloadBuffers(hashThreads.threadedRunning),
      readBytes: HELD_READ_BYTES,
      signal: latch.signal,
      policy,
      clock,
    };
    const ready = parts.map(() => deferred<HeldPart>());
    for (const r of ready) r.promise.catch(() => {});
    const gate = new Gate();
    let written = 0;
    // Large parts go in stripes, taken in file order, so the connections work on the next part
    // to write together instead of on every part of the window at once.
    const tail = manifest.fileSize - manifest.partSize;
    const stripesOfPart = parts.map((part) => stripesOf(part, part.offset + part.size > tail));
    const stripes = stripesOfPart.flat();
    const ranges: RangeSupport = { refused: false };
    const places = new Map<number, Promise<PartPlace>>();
    const placeOf = (part: PartDescriptor) => {
      let place = places.get(part.index);
      if (place === undefined) {
        place = holdPart(part);
        places.set(part.index, place);
      }
      return place;
    };
    const holdPart = async (part: PartDescriptor): Promise<PartPlace> => {
      const lent = memory.take(part.size);
      const held = lent !== undefined
        ? new MemoryPart(part.offset, part.size, lent, () => memory.give(lent))
        : new FilePart(part.offset, await spill!.file(`part-${part.index}`));
      const stripesHere = stripesOfPart[part.index];
      const striped = stripesHere.length > 1
        ? new StripedPart({ ...context, partial: held }, part, held, ranges, stripesHere)
        : undefined;
      return { held, striped };
    };
    let next = 0;
    // The first part (in file order) that failed: nothing of it or after it is fetched any more,
    // and the pull fails when the writer reaches it, once every part before it is out.
    let failedFrom = Infinity;
    const failPart = async (part: PartDescriptor, place: PartPlace | undefined, err: unknown) => {
      failedFrom = Math.min(failedFrom, part.index);
      ready[part.index].reject(err);
      gate.open();
      // Its place goes only once no stripe writes into it any more.
      place?.striped?.stop();
      await place?.striped?.settled();
      await place?.held.release();
    };
    const worker = async () => {
      // The verdicts of the parts this worker completed, which it waits for before it ends.
      const verdicts: Promise<void>[] = [];
      try {
        for (;;) {
          const stripe = stripes[next++];
          if (stripe === undefined || latch.signal.aborted) return;
          const { part } = stripe;
          let place: PartPlace | undefined;
          try {
            // The window: no part more than `window` ahead of the part being written.
            while (part.index >= written + window && part.index < failedFrom) {
              await gate.wait(latch.signal);
            }
            if (part.index >= failedFrom) return;
            place = await placeOf(part);
            if (place.striped === undefined) {
              await downloadPart({ ...context, partial: place.held }, part);
              ready[part.index].resolve(place.held);
              continue;
            }
            const fetched = await place.striped.fetch(stripe);
            if (fetched === "fetched") continue;
            // The part's hash finishes meanwhile: this connection takes its next stripe.
            const placed = place;
            const verdict = fetched.verified.then(
              () => ready[part.index].resolve(placed.held),
              (err) => failPart(part, placed, err),
            );
            verdict.catch(() => {});
            verdicts.push(verdict);
          } catch (err) {
            await failPart(part, place, err);
            return;
          }
        }
      } finally {
        await Promise.all(verdicts);
      }
    };
    const buffers = job.reuseChunks === true && spill !== undefined ? readBackBuffers() : undefined;
    const writing = async () => {
      for (const part of parts) {
        let held: HeldPart;
        try {
          held = await abortable(ready[part.index].promise, latch.signal);
        } catch (err) {
          latch.fail(err, part.index);
          return;
        }
        try {
          // A verified part goes out whole: a failure elsewhere does not cut it short. The
          // caller's stop does: a reader that stopped reading would hold it for ever.
          for await (const chunk of held.chunks(0, part.size, buffers)) {
            await abortable(writer.write(chunk), job.signal);
          }
        } finally {
          await held.release();
        }
        tracker.completePart(part.index, part.size, "verified");
        written++;
        gate.open();
      }
    };
    const workers = Array.from({ length: Math.min(job.workers, stripes.length) }, () => worker());
    const out = writing().catch((err) => latch.fail(err));
    await latch.settle([out, ...workers], tracker);
    // A part left unwritten (a worker stopped by the caller) is not a success.
    latch.signal.throwIfAborted();
    await writer.close();
    tracker.setPhase("done");
    return {
      digest,
      size: manifest.fileSize,
      bytesFetched: tracker.snapshot.wireBytes,
      partsFetched: parts.length,
      spilled: spill !== undefined,
    };
  } catch (err) {
    const aborting = writer.abort(err).catch(() => {});
    // After a stop, a write the reader never took would hold the abort for ever.
    if (job.signal?.aborted) throw job.signal.reason;
    await aborting;
    throw latch.publicError(err);
  } finally {
    progress?.close();
    hashThreads?.close();
    await spill?.remove();
    writer.releaseLock();
  }
}

/** Where one part of the window waits: in memory or a file, fetched whole or in stripes. */
interface PartPlace {
  held: HeldPart;
  striped: StripedPart | undefined;
}

/** Bytes of one read of a spilled part when its buffers are reused. */
const READ_BACK_BYTES = 4 << 20;

/**
 * The two buffers a spilled part is read back into by turns (one read ahead of the write),
 * when the stream lets chunks be reused: a new array per read cost more than the pipe.
 */
function readBackBuffers(): [Uint8Array, Uint8Array] {
  return [new Uint8Array(READ_BACK_BYTES), new Uint8Array(READ_BACK_BYTES)];
}

/**
 * The memory the window's parts may wait in: the whole window when it fits in the memory window;
 * else, when the stream lets chunks be reused, as many parts as fit, each in a buffer that serves
 * part after part; else none (a new array per part would leave the collector that much more to
 * find, at its own pace).
 */
function memorySlots(job: StreamPullJob, window: number, partSize: number): MemorySlots {
  const reuse = job.reuseChunks === true;
  if (window * partSize <= job.memoryWindowBytes) return new MemorySlots(window, partSize, reuse);
  if (!reuse) return new MemorySlots(0, partSize, false);
  return new MemorySlots(Math.floor(job.memoryWindowBytes / partSize), partSize, true);
}

/** Buffers of one part each, at most `count` lent at once, kept for the next part if `reuse`. */
class MemorySlots {
  readonly count: number;
  readonly #size: number;
  readonly #reuse: boolean;
  readonly #free: ArrayBuffer[] = [];
  #lent = 0;

  constructor(count: number, size: number, reuse: boolean) {
    this.count = count;
    this.#size = size;
    this.#reuse = reuse;
  }

  /** A buffer for a part of `size` bytes when fewer than `count` are lent, else undefined. */
  take(size: number): ArrayBuffer | undefined {
    if (this.#lent >= this.count) return undefined;
    this.#lent++;
    // Every part but the last has the part size: only those buffers are kept for reuse.
    return (size === this.#size ? this.#free.pop() : undefined) ?? new ArrayBuffer(size);
  }

  /** Takes a buffer back. */
  give(buffer: ArrayBuffer): void {
    this.#lent--;
    if (this.#reuse && buffer.byteLength === this.#size) this.#free.push(buffer);
  }
}

/** Wakes every waiter each time it is opened (the writer moved on by one part). */
class Gate {
  #waiters: (() => void)[] = [];

  /** Resolves at the next `open()`, rejects once `signal` aborts. */
  wait(signal: AbortSignal): Promise<void> {
    return abortable(new Promise<void>((resolve) => this.#waiters.push(resolve)), signal);
  }

  /** Wakes the waiters. */
  open(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
}
