/**
 * Pulling one part: its bytes from the one blob reader (`remote/blob_reader.ts`: a whole-blob GET,
 * a broken stream continued with a ranged GET from the byte reached, within the part's retry
 * budget), written at the part's offset while it is hashed. A part whose beginning an earlier
 * pull wrote continues the same way from there, with the hash of those bytes. Any of those GETs
 * may be answered by a mirror (`mirror_reads.ts`).
 *
 * A part that hashes wrong is the registry's verdict only when the registry sent every byte of
 * it; when some bytes came from elsewhere (the disk, a mirror), the part starts over from byte
 * zero at the registry, spending one attempt ({@linkcode wrongPart}).
 *
 * Writes of a part are positional and strictly in order: one at a time, each started only once
 * the one before it has completed, from a chunk sequence that keeps the body's order. So when
 * the process dies mid-part, the part on disk holds a prefix of its bytes (the write in flight
 * may have landed partly, as a prefix of its buffer) and its unwritten rest; the resume pass
 * relies on that. A machine that loses power gives no such order; the digest then decides.
 *
 * @module
 */
import { LengthMismatchError } from "../errors/kinds.ts";
import { OciError } from "../errors/oci_error.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { BufferFill, BufferPool } from "../hashing/buffer_pool.ts";
import { BlobReader } from "../remote/blob_reader.ts";
import { DigestCheck } from "../remote/digest_check.ts";
import { mirrorSpoiled } from "../remote/mirror_reads.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import { AttemptBudget, type RetryPolicy } from "../remote/retry.ts";
import type { RangeScan, RunningHash, Sha256Threads } from "../hashing/sha256_threads.ts";
import { PREFIX_BLOCK_BYTES } from "../hashing/written_prefix.ts";
import type { Clock } from "../transport/clock.ts";
import type { PartialFile } from "./fs_partial.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { ProgressTracker } from "./progress.ts";

/** Where a part download writes: positional writes at the part's offset in the file. */
export type PartSink = Pick<PartialFile, "writeAt">;

/** Bytes gathered before one positional write; also the most one read may deliver. */
const WRITE_BUFFER_SIZE = 1 << 20;

/** What a part download needs. */
export interface PartDownloadContext {
  /** The registry operations of the source repository. */
  repo: RemoteRepository;
  /** Where the bytes go: the partial file, or a part held apart (a stream's spill, a cache). */
  partial: PartSink;
  /** Counts wire bytes and the bytes each attempt landed. */
  progress: ProgressTracker;
  /** Stops the download. */
  signal: AbortSignal;
  /** Retry budget. */
  policy: RetryPolicy;
  /** Time source of the backoff. */
  clock: Clock;
  /** Where the running hashes of parts are computed. */
  hashThreads: Sha256Threads;
  /**
   * The write buffers, shared by all the part downloads of a pull (see
   * {@linkcode partDownloadBuffers}); default: buffers of this download's own.
   */
  buffers?: BufferPool;
  /**
   * The most one read of a body asks for, up to a write buffer's 1 MiB (the default). Smaller
   * reads cost a write and a hash hand-over more per MiB; see the stream pull for when they pay.
   */
  readBytes?: number;
}

/** One part's download: what it writes with, and how far it got across its attempts. */
interface PartRun {
  readonly context: PartDownloadContext;
  readonly part: PartDescriptor;
  readonly pool: BufferPool;
  readonly hash: RunningHash;
  readonly budget: AttemptBudget;
  readonly check: DigestCheck;
  /** Bytes of the part in place and hashed. */
  reached: number;
  /** Of those, the bytes an earlier pull wrote (read from the disk, not received). */
  fromDisk: number;
}

/**
 * Fetches `part` into place and verifies it. The blob reader continues a broken stream with a
 * ranged GET from the byte reached (the running hash keeps what came before) and reads a
 * registry that ignores the range (200) from byte zero again. A part that the registry sent
 * whole and that hashes wrong fails with `DigestMismatchError`, not retried; one with bytes from
 * a mirror is fetched again from the registry alone, spending an attempt.
 *
 * With `onDisk` (the resume pass's scan of the part), the download continues from the written
 * prefix the scan found, with its hash. When the part then hashes wrong, the fault may be in the
 * bytes read from the disk (a torn write): the prefix is forgotten (its first block zeroed, so no
 * later pull continues from it) and the next attempt fetches the part whole. Resolves to the
 * bytes of the part kept from the disk (0 when it was fetched whole).
 *
 * @example
 * ```ts ignore
 * import { downloadPart } from "./part_download.ts";
 * await downloadPart(context, part);
 * ```
 */
export async function downloadPart(
  context: PartDownloadContext,
  part: PartDescriptor,
  onDisk?: RangeScan,
): Promise<number> {
  const { signal } = context;
  const pool = context.buffers?.lease() ?? partDownloadBuffers();
  const recycle = (buffer: ArrayBuffer) => pool.release(buffer);
  const hash = onDisk === undefined
    ? context.hashThreads.open(recycle)
    : onDisk.continueHash(recycle);
  const prefix = onDisk?.prefix ?? 0;
  const run: PartRun = {
    context,
    part,
    pool,
    hash,
    budget: new AttemptBudget(context.policy, context.clock, signal),
    check: new DigestCheck(part.digest, `part ${part.index}`),
    reached: prefix,
    fromDisk: prefix,
  };
  try {
    // Each pass reads the part to its end; only a part whose bytes were wrong takes another.
    for (let wrong = await fetchPart(run); wrong !== undefined; wrong = await fetchPart(run)) {
      await run.budget.failed(`part ${part.index}: download`, wrong);
    }
    return run.fromDisk;
  } finally {
    hash.close();
    pool.close();
  }
}

/**
 * Fetches bytes `[start, end]` of `part` (offsets within the part) into place, unhashed: one
 * stripe of a part that several connections fetch at once (`striped_part.ts`), which hashes the
 * part in order once its stripes are in. A broken body continues from the byte reached within the
 * stripe's own retry budget. Resolves with whether a mirror sent any of the bytes.
 *
 * @example
 * ```ts ignore
 * import { downloadRange } from "./part_download.ts";
 * const { mirrored } = await downloadRange(context, part, 0, (16 << 20) - 1);
 * ```
 */
export async function downloadRange(
  context: PartDownloadContext,
  part: PartDescriptor,
  start: number,
  end: number,
): Promise<{ mirrored: boolean }> {
  const pool = context.buffers?.lease() ?? partDownloadBuffers();
  const run: PartRun = {
    context,
    part,
    pool,
    hash: unhashed((buffer) => pool.release(buffer)),
    budget: new AttemptBudget(context.policy, context.clock, context.signal),
    check: new DigestCheck(part.digest, `part ${part.index}`),
    reached: start,
    fromDisk: 0,
  };
  try {
    const reader = await BlobReader.open(context.repo, part.digest, {
      label: `part ${part.index}: download`,
      offset: start,
      end,
      total: part.size,
      budget: run.budget,
      signal: context.signal,
    });
    try {
      await copyPart(
        run,
        reader,
        new PartWriter(context.partial, part.offset + start, pool, run.hash),
      );
      return { mirrored: reader.mirrored };
    } finally {
      await reader.cancel();
    }
  } finally {
    pool.close();
  }
}

/** A hash that hashes nothing: each buffer goes back to its pool once written. */
function unhashed(recycle: (buffer: ArrayBuffer) => void): RunningHash {
  return {
    update: (buffer) => recycle(buffer),
    reset: () => {},
    digest: () => Promise.reject(new TypeError("a stripe is not hashed on its own")),
    close: () => {},
  };
}

/**
 * One pass over the part from the byte reached: its bytes in place and hashed, then checked.
 * Resolves with the failure that makes the part start over (bytes from elsewhere were wrong),
 * or undefined when the part is verified.
 */
async function fetchPart(run: PartRun): Promise<Error | undefined> {
  const { context, part } = run;
  let reader: BlobReader;
  try {
    reader = await BlobReader.open(context.repo, part.digest, {
      label: `part ${part.index}: download`,
      offset: run.reached,
      total: part.size,
      budget: run.budget,
      signal: context.signal,
      wholeAgain: "restart",
    });
  } catch (err) {
    throw asWrongBlob(run, err);
  }
  const writer = new PartWriter(context.partial, part.offset + run.reached, run.pool, run.hash);
  try {
    await copyPart(run, reader, writer);
  } catch (err) {
    const wrong = asWrongBlob(run, err);
    if (wrong instanceof DigestMismatchError && reader.mirrored) {
      return await wrongPart(run, wrong, true);
    }
    throw wrong;
  } finally {
    await reader.cancel();
  }
  try {
    await run.check.verify(run.hash);
  } catch (err) {
    if (!(err instanceof DigestMismatchError)) throw err;
    if (run.fromDisk === 0 && !reader.mirrored) throw err;
    return await wrongPart(run, err, reader.mirrored);
  }
  return undefined;
}

/**
 * Reads the part into place: each read lands in a pooled buffer (no copy where the body is a
 * byte stream), which is written and then hashed; every received byte is placed before a
 * failure is reported.
 */
async function copyPart(run: PartRun, reader: BlobReader, writer: PartWriter): Promise<void> {
  const { context, part, pool } = run;
  const readBytes = Math.min(context.readBytes ?? WRITE_BUFFER_SIZE, WRITE_BUFFER_SIZE);
  try {
    for (;;) {
      const buffer = await pool.acquire();
      const chunk = await reader.read(new Uint8Array(buffer, 0, readBytes)).catch((err) => {
        pool.release(buffer.byteLength === 0 ? fresh() : buffer);
        throw err;
      });
      // A read into the buffer takes it (the bytes come back in it, or in a buffer of its size).
      const taken = buffer.byteLength === 0;
      if (chunk === undefined) {
        const back = reader.takeBuffer();
        pool.release(!taken ? buffer : back?.byteLength === WRITE_BUFFER_SIZE ? back : fresh());
        return;
      }
      if (chunk.offset < run.reached) await restart(run, writer);
      const length = chunk.bytes.byteLength;
      run.reached += length;
      context.progress.addWire(length);
      context.progress.landed(part.index, length);
      const bytes = chunk.bytes;
      if (taken && bytes.byteOffset === 0 && bytes.buffer.byteLength === WRITE_BUFFER_SIZE) {
        await writer.write(bytes.buffer as ArrayBuffer, length);
      } else {
        // A chunk of the body's own (not a byte stream): copied into the write buffers.
        pool.release(taken ? fresh() : buffer);
        await writer.add(bytes);
      }
    }
  } finally {
    await writer.flush();
  }
}

/** A write buffer in place of one a read took and did not give back (a body that broke). */
function fresh(): ArrayBuffer {
  return new ArrayBuffer(WRITE_BUFFER_SIZE);
}

/** A whole-blob answer of another length is another blob: the part cannot be had here. */
function asWrongBlob(run: PartRun, err: unknown): unknown {
  if (!(err instanceof LengthMismatchError)) return err;
  return new DigestMismatchError(run.check.label, { cause: err });
}

/**
 * What a part whose bytes are wrong fails with when some came from elsewhere (which may be at
 * fault): a retryable failure, after which the part starts over from byte zero at the registry.
 * Bytes an earlier pull wrote (perhaps a torn write) are forgotten, their first block zeroed so
 * no later pull continues from them; a mirror that sent any is not asked for this blob again.
 */
async function wrongPart(run: PartRun, wrong: DigestMismatchError, mirrored: boolean) {
  const { context, part } = run;
  if (run.fromDisk === 0 && !mirrored) return wrong;
  if (run.fromDisk > 0) {
    const block = new Uint8Array(Math.min(part.size, PREFIX_BLOCK_BYTES));
    await context.partial.writeAt(block, part.offset);
  }
  forget(run);
  if (mirrored) return mirrorSpoiled(context.repo, part.digest, `part ${part.index}`);
  return new OciError(
    `part ${part.index}: the bytes an earlier pull wrote do not match; fetching the part whole`,
    { retryable: true },
  );
}

/** The registry sent the whole part again: what was placed is overwritten from byte zero. */
async function restart(run: PartRun, writer: PartWriter): Promise<void> {
  await writer.flush();
  forget(run);
  writer.seek(run.part.offset);
}

/** Forgets every byte of the part placed or hashed so far: the next bytes are its byte zero. */
function forget(run: PartRun): void {
  run.hash.reset();
  run.reached = 0;
  run.fromDisk = 0;
  run.context.progress.restartPart(run.part.index);
}

/**
 * The write buffers of a pull's part downloads together, whatever the number of parts and
 * workers: 32 of 1 MiB where a hashing thread holds buffers while it hashes (written, hashing, or
 * being filled), 12 where parts hash inline (a buffer is only filled or written, and 12 keep the
 * disk busy with 8 workers). Each part download leases them from one pool, so a finished part's
 * buffers serve the next part: buffers of its own per part grew with the parts in flight, and
 * were garbage the runtime collected late (docs/performance.md, memory).
 *
 * @example One pool for a pull
 * ```ts
 * import { partDownloadBuffers } from "./part_download.ts";
 * const buffers = partDownloadBuffers(false);
 * console.log(buffers.size); // 1048576
 * ```
 */
export function partDownloadBuffers(threaded = true): BufferPool {
  return new BufferPool(threaded ? THREADED_BUFFERS : INLINE_BUFFERS, WRITE_BUFFER_SIZE);
}

const THREADED_BUFFERS = 32;
const INLINE_BUFFERS = 12;

/**
 * Gathers chunks into 1 MiB positional writes (one in flight at a time, in order); each buffer
 * goes to the running hash once written, so the hash covers exactly the bytes placed on disk.
 */
class PartWriter {
  readonly #partial: PartSink;
  readonly #pool: BufferPool;
  readonly #fill: BufferFill;
  readonly #hash: RunningHash;
  #position: number;
  #inflight: Promise<void> | undefined;

  constructor(partial: PartSink, position: number, pool: BufferPool, hash: RunningHash) {
    this.#partial = partial;
    this.#position = position;
    this.#pool = pool;
    this.#fill = new BufferFill(pool);
    this.#hash = hash;
  }

  /** Copies `chunk` into the write buffers, writing each as it fills. */
  add(chunk: Uint8Array): Promise<void> {
    return this.#fill.add(chunk, (buffer, length) => this.#write(buffer, length));
  }

  /** Writes the first `length` bytes of `buffer` (a pooled buffer it takes) next, in order. */
  async write(buffer: ArrayBuffer, length: number): Promise<void> {
    await this.#writeFilled();
    await this.#write(buffer, length);
  }

  /** The next write goes to `position` (every earlier write was flushed). */
  seek(position: number): void {
    this.#position = position;
  }

  /** Writes what is gathered and waits for every write (and its hand-over to the hash). */
  async flush(): Promise<void> {
    await this.#writeFilled();
    const inflight = this.#inflight;
    this.#inflight = undefined;
    await inflight;
  }

  #writeFilled(): Promise<void> {
    const rest = this.#fill.take();
    return rest === undefined ? Promise.resolve() : this.#write(rest.buffer, rest.length);
  }

  /** Starts the positional write of `buffer` once the previous one is done (writes stay in order). */
  async #write(buffer: ArrayBuffer, length: number): Promise<void> {
    const previous = this.#inflight;
    this.#inflight = undefined;
    try {
      await previous;
    } catch (err) {
      this.#pool.release(buffer);
      throw err;
    }
    const position = this.#position;
    this.#position += length;
    this.#inflight = this.#partial.writeAt(new Uint8Array(buffer, 0, length), position).then(
      () => this.#hash.update(buffer, length),
      (err) => {
        this.#pool.release(buffer);
        throw err;
      },
    );
    // Surface a write failure at the next await instead of as an unhandled rejection.
    this.#inflight.catch(() => {});
  }
}
