/**
 * The push from a stream of unknown length: parts are cut as bytes arrive, each written to a
 * file of a temporary directory while it is hashed, then uploaded by the first free worker
 * while the next parts arrive. Once the registry has lacked a part, the part being cut is also
 * sent while it arrives (`live_upload.ts`). At most `workers` part files exist at a time (the
 * one being filled among them): reading waits for an upload to finish when they are all taken.
 * The manifest, with the file's size and digest, is written last, only after the stream ended
 * normally and every part is in the registry.
 *
 * @module
 */
import type { Descriptor } from "../registry/media_types.ts";
import { BufferPool } from "../hashing/buffer_pool.ts";
import type { RunningHash } from "../hashing/sha256_threads.ts";
import { AsyncQueue } from "./async_queue.ts";
import type { Connection } from "./connection.ts";
import { type PartFile, SpillDirectory } from "./fs_spill.ts";
import { LiveChoice, LiveUpload } from "./live_upload.ts";
import type { PartDescriptor } from "./manifest.ts";
import { uploadPart } from "./part_upload.ts";
import { FirstFailure, nextPart } from "./part_workers.ts";
import { ProgressTracker } from "./progress.ts";
import { recordedTitle, writePartedManifest } from "./push.ts";
import { PushTokens } from "./push_tokens.ts";
import type { TransferJob } from "./transfer_job.ts";
import { abortable } from "../transport/abortable.ts";

/** What the push from a stream needs, already validated. */
export interface StreamPushJob extends TransferJob {
  /** The file's bytes. */
  readable: ReadableStream<Uint8Array>;
  /** Part size in bytes. */
  partSize: number;
  /** The title to record. */
  name?: string;
  /** The caller's manifest annotations (keys already checked). */
  annotations?: Readonly<Record<string, string>>;
  /** Where the temporary directory is made (default: the system's temporary directory). */
  spillDirectory?: string;
}

/** A part cut from the stream, in its own file (and on its way already, when `live`). */
interface CutPart extends PartDescriptor {
  readonly file: PartFile;
  readonly live: LiveUpload | undefined;
}

/**
 * Pushes the stream of `job` and returns the manifest's descriptor.
 *
 * @example
 * ```ts ignore
 * import { runStreamPush } from "./stream_push.ts";
 * const descriptor = await runStreamPush(job, () => connect(session, reference));
 * ```
 */
export async function runStreamPush(
  job: StreamPushJob,
  connect: () => Connection,
): Promise<Descriptor> {
  job.signal?.throwIfAborted();
  const reader = readerOf(job.readable);
  const latch = new FirstFailure(job.signal);
  const { signal } = latch;
  // The total is known only at the end: progress counts bytes and parts as they go.
  const progress = new ProgressTracker(0, 0, "hashing", job.onProgress);
  progress.onFailure = (err) => latch.stop(err);
  let spill: SpillDirectory | undefined;
  try {
    spill = await SpillDirectory.create(job.spillDirectory);
    const connection = connect();
    const queue = new AsyncQueue<CutPart>();
    const slots = new Slots(job.workers);
    const choice = new LiveChoice(job.partSize);
    // A token that would expire before a part arrives is renewed first, as a push of a file does.
    const tokens = new PushTokens(
      connection.tokens,
      job.reference.repository,
      job.clock,
      job.workers,
    );
    const renewFor = (bytes: number, signal: AbortSignal) =>
      tokens.renewFor(bytes, progress.snapshot.wireBytes, signal);
    const goLive = (file: PartFile, index: number) =>
      choice.wanted
        ? new LiveUpload({
          repo: connection.repo,
          path: file.path,
          index,
          progress,
          signal,
          beforeUpload: (signal) => renewFor(job.partSize, signal),
          choice,
        })
        : undefined;
    const cut = cutParts(job, reader, spill, slots, signal, goLive, (part) => {
      progress.extend(part.size, 1);
      queue.push(part);
    })
      .then((cut) => {
        queue.close();
        return cut;
      }, (err) => {
        queue.close();
        latch.fail(err);
        return undefined;
      });
    const context = {
      repo: connection.repo,
      fileSize: job.partSize,
      partSize: job.partSize,
      progress,
      signal,
      policy: job.policy,
      clock: job.clock,
      beforeUpload: (part: PartDescriptor, signal: AbortSignal) => {
        choice.missing();
        return renewFor(part.size, signal);
      },
      tokenLifetimeMs: () => tokens.lifetimeMs(),
    };
    const workers = Array.from({ length: job.workers }, async () => {
      for (let part; (part = await nextPart(queue, signal)) !== undefined;) {
        const { file, live, ...descriptor } = part;
        try {
          progress.setPhase("uploading");
          // Each part file holds its part from byte zero.
          const outcome = await finishPart(
            { ...descriptor, offset: 0 },
            live,
            choice,
            () => uploadPart({ ...context, path: file.path }, { ...descriptor, offset: 0 }),
          );
          progress.completePart(part.index, part.size, outcome);
        } catch (err) {
          latch.fail(err, part.index);
        } finally {
          await file.remove();
          slots.release();
        }
      }
    });
    await latch.settle([cut, ...workers], progress);
    const file = (await cut)!;
    return await writePartedManifest({
      job,
      connection,
      signal,
      progress,
      fileSize: file.size,
      fileDigest: file.digest,
      partDigests: file.partDigests,
      title: job.name === undefined ? undefined : recordedTitle(job.name),
    });
  } catch (err) {
    await reader.reader.cancel(err).catch(() => {});
    throw latch.publicError(err);
  } finally {
    progress.close();
    reader.reader.releaseLock();
    await spill?.remove();
  }
}

/**
 * Ends a cut part's upload: its live session when it has one, else (or when that failed) the
 * usual upload; tells `choice` what the registry turned out to hold.
 */
async function finishPart(
  part: PartDescriptor,
  live: LiveUpload | undefined,
  choice: LiveChoice,
  upload: () => Promise<"skipped" | "uploaded">,
): Promise<"exists" | "uploaded"> {
  let outcome = live === undefined ? "fallback" : await live.complete(part);
  if (outcome === "fallback") outcome = await upload() === "skipped" ? "exists" : "uploaded";
  if (outcome === "exists") choice.present();
  return outcome;
}

/** What the stream turned out to be. */
interface CutFile {
  size: number;
  digest: string;
  partDigests: string[];
}

/** Bytes staged before one write of a part file; each staged buffer is hashed as one piece. */
const STAGE_BYTES = 1 << 20;
/** Staged buffers being filled, written or hashed at once: bounds the memory the cut holds. */
const STAGE_BUFFERS = 8;

/** The part being cut: its file, its running hash, the bytes written to it, its live upload. */
interface OpenPart {
  readonly file: PartFile;
  readonly hash: RunningHash;
  written: number;
  live: LiveUpload | undefined;
}

/**
 * Reads the stream to its end, handing each part on once its file is written and hashed. The
 * bytes are staged in 1 MiB buffers, each written to the part's file and then hashed for its
 * part and for the whole file by one hashing thread (one hand-over a buffer for both digests), so
 * this thread only reads and writes and the input is cut as fast as the producer gives it: the
 * last part's bytes, and its upload, come that much sooner. A slow core (no SHA extensions)
 * hashes both at 0.08–0.25 GB/s there, above most links; `hashThreads: 0` hashes here instead.
 */
async function cutParts(
  job: StreamPushJob,
  reader: StreamReader,
  spill: SpillDirectory,
  slots: Slots,
  signal: AbortSignal,
  goLive: (file: PartFile, index: number) => LiveUpload | undefined,
  onPart: (part: CutPart) => void,
): Promise<CutFile> {
  const threads = job.hashing(1);
  const pool = new BufferPool(STAGE_BUFFERS, STAGE_BYTES);
  const release = (buffer: ArrayBuffer) => pool.release(buffer);
  // Fed beside each part's hash, in the order the buffers were written (one part at a time).
  const whole = threads.open(release);
  const partDigests: string[] = [];
  let size = 0;
  let part: OpenPart | undefined;
  let stage: { buffer: ArrayBuffer; length: number } | undefined;
  const open = async () => {
    await slots.acquire(signal);
    const file = await spill.file(`part-${partDigests.length}`);
    part = { file, hash: threads.open(release, whole), written: 0, live: undefined };
  };
  const flush = async () => {
    if (stage === undefined) return;
    const { buffer, length } = stage;
    stage = undefined;
    try {
      await part!.file.writeAt(new Uint8Array(buffer, 0, length), part!.written);
    } catch (err) {
      pool.release(buffer);
      throw err;
    }
    part!.written += length;
    part!.hash.update(buffer, length);
    // Its bytes are in its file: once the registry lacked a part, they go now.
    part!.live ??= goLive(part!.file, partDigests.length);
    part!.live?.offer(part!.written);
  };
  const finish = async () => {
    await flush();
    const { file, hash, written, live } = part!;
    part = undefined;
    // Once the part's digest is in, every buffer of it has gone on to the whole-file hash.
    const digest = await hash.digest();
    hash.close();
    const index = partDigests.length;
    partDigests.push(digest);
    onPart({ index, offset: index * job.partSize, size: written, digest, file, live });
  };
  // Bytes taken into the stage: a part is opened only once bytes for it exist.
  const took = async (length: number) => {
    stage!.length += length;
    size += length;
    if (part!.written + stage!.length === job.partSize) await finish();
    else if (stage!.length === STAGE_BYTES) await flush();
  };
  /** Room in the stage for the part being cut (or the next one). */
  const room = () =>
    Math.min(STAGE_BYTES - stage!.length, job.partSize - (part?.written ?? 0) - stage!.length);
  try {
    if (reader.kind === "byob") {
      // A byte stream reads straight into the stage: no array per read, no copy.
      for (;;) {
        signal.throwIfAborted();
        stage ??= { buffer: await pool.acquire(), length: 0 };
        const view = new Uint8Array(stage.buffer, stage.length, room());
        const { value, done } = await abortable(reader.reader.read(view), signal);
        // The read took the stage's buffer and hands it back as `value`'s.
        stage.buffer = value?.buffer as ArrayBuffer ?? new ArrayBuffer(STAGE_BYTES);
        if (done) break;
        if (value.byteLength === 0) continue;
        if (part === undefined) await open();
        await took(value.byteLength);
      }
    } else {
      for (;;) {
        signal.throwIfAborted();
        const { value, done } = await abortable(reader.reader.read(), signal);
        if (done) break;
        for (let at = 0; at < value.byteLength;) {
          if (part === undefined) await open();
          stage ??= { buffer: await pool.acquire(), length: 0 };
          const take = Math.min(room(), value.byteLength - at);
          new Uint8Array(stage.buffer, stage.length, take).set(value.subarray(at, at + take));
          at += take;
          await took(take);
        }
      }
    }
    if (part !== undefined) await finish();
    // An empty stream is an empty file: one empty part.
    if (partDigests.length === 0) {
      await open();
      await finish();
    }
    return { size, digest: await whole.digest(), partDigests };
  } finally {
    part?.hash.close();
    part?.live?.abandon();
    await part?.file.remove();
    whole.close();
    threads.close();
  }
}

/** The stream's reader: a BYOB one where the stream is a byte stream (standard input is). */
type StreamReader =
  | { kind: "byob"; reader: ReadableStreamBYOBReader }
  | { kind: "default"; reader: ReadableStreamDefaultReader<Uint8Array> };

function readerOf(readable: ReadableStream<Uint8Array>): StreamReader {
  try {
    return { kind: "byob", reader: readable.getReader({ mode: "byob" }) };
  } catch {
    return { kind: "default", reader: readable.getReader() };
  }
}

/** A count of part files that may exist at once. */
class Slots {
  #free: number;
  #waiters: (() => void)[] = [];

  constructor(count: number) {
    this.#free = count;
  }

  /** Takes a slot, waiting for one to be released. */
  async acquire(signal: AbortSignal): Promise<void> {
    while (this.#free === 0) {
      signal.throwIfAborted();
      await new Promise<void>((resolve) => {
        const onAbort = () => resolve();
        signal.addEventListener("abort", onAbort, { once: true });
        this.#waiters.push(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    }
    this.#free--;
  }

  /** Gives a slot back. */
  release(): void {
    this.#free++;
    this.#waiters.shift()?.();
  }
}
