/**
 * Pulling one part: a whole-blob GET written at the part's offset while it is hashed; a broken
 * stream continues with a ranged GET from the byte reached, within the part's retry budget. A
 * part whose beginning an earlier pull wrote continues the same way from there, with the hash
 * of those bytes. Any of those GETs may be answered by a mirror (`mirror_reads.ts`).
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
import { LengthMismatchError, NetworkError, ProtocolError } from "../errors/kinds.ts";
import { OciError } from "../errors/oci_error.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { BufferFill, BufferPool } from "../registry/buffer_pool.ts";
import { type ByobSource, openByob } from "../transport/byob_body.ts";
import { getBlob } from "../remote/blob_reads.ts";
import { mirrorSpoiled } from "../remote/mirror_reads.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import type { RangeScan, RunningHash, Sha256Threads } from "../registry/sha256_threads.ts";
import { PREFIX_BLOCK_BYTES } from "../registry/written_prefix.ts";
import type { Clock } from "../transport/clock.ts";
import { retry, type RetryPolicy } from "../remote/retry.ts";
import type { PartialFile } from "./fs_partial.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { ProgressTracker } from "./progress.ts";

/** Bytes gathered before one positional write; also the most one read may deliver. */
const WRITE_BUFFER_SIZE = 1 << 20;

/** What a part download needs. */
export interface PartDownloadContext {
  /** The registry operations of the source repository. */
  repo: RemoteRepository;
  /** The partial file the bytes go to. */
  partial: PartialFile;
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
}

/** How far a part got, across its attempts. */
interface PartState {
  /** Bytes of the part in place and hashed. */
  reached: number;
  /** Of those, the bytes an earlier pull wrote (read from the disk, not received). */
  fromDisk: number;
  /** Whether a mirror sent any of them. */
  mirrored: boolean;
}

/**
 * Fetches `part` into place and verifies it. One attempt is a GET, the copy into place and the
 * digest check; a broken stream makes the next attempt a ranged GET from the byte reached with
 * the running hash. A registry that ignores the range (200) is consumed from byte zero in the
 * same attempt. A part that the registry sent whole and that hashes wrong fails with
 * `DigestMismatchError`, not retried; one with bytes from a mirror is fetched again from the
 * registry alone.
 *
 * With `onDisk` (the resume pass's scan of the part), the first attempt continues from the
 * written prefix the scan found, with its hash. When the part then hashes wrong, the fault may
 * be in the bytes read from the disk (a torn write): the prefix is forgotten (its first block
 * zeroed, so no later pull continues from it) and the next attempt fetches the part whole.
 * Resolves to the bytes of the part kept from the disk (0 when it was fetched whole).
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
  const state: PartState = { reached: prefix, fromDisk: prefix, mirrored: false };
  try {
    await retry(
      `part ${part.index}: download`,
      () => downloadAttempt(context, part, pool, hash, state),
      {
        policy: context.policy,
        signal,
        clock: context.clock,
      },
    );
    return state.fromDisk;
  } finally {
    hash.close();
    pool.close();
  }
}

/**
 * One attempt: a GET from the byte reached, every received byte placed (and hashed) before a
 * failure is reported, so the next attempt continues where the disk is.
 */
async function downloadAttempt(
  context: PartDownloadContext,
  part: PartDescriptor,
  pool: BufferPool,
  hash: RunningHash,
  state: PartState,
): Promise<void> {
  const { repo, signal, partial, progress } = context;
  const operation = "GET blob";
  let answer: Awaited<ReturnType<typeof getBlob>>;
  try {
    answer = await getBlob(repo, part.digest, state.reached, part.size, signal);
  } catch (err) {
    // A whole-blob answer of another length is another blob: the part cannot be had here.
    if (!(err instanceof LengthMismatchError)) throw err;
    throw new DigestMismatchError(`part ${part.index}`, { cause: err });
  }
  let position = state.reached;
  let failure: unknown;
  if (answer !== "complete") {
    if (answer.start === 0 && state.reached > 0) {
      // The whole blob again: start over from byte zero, overwriting what was placed.
      restart(context, part, hash, state);
      position = 0;
    }
    if (answer.mirrored) state.mirrored = true;
    const writer = new PartWriter(partial, part.offset + position, pool, hash);
    const overlong = () =>
      new DigestMismatchError(`part ${part.index}`, {
        cause: new ProtocolError(`${operation}: body longer than the part size`),
      });
    const received = (n: number) => {
      position += n;
      progress.addWire(n);
      progress.landed(part.index, n);
    };
    failure = await copyBody(answer.body, writer, part.size - position, received, overlong);
    // Place (and hash) every received byte first: a continuation starts where the disk is.
    await writer.flush();
    state.reached = position;
  }
  if (failure instanceof DigestMismatchError && state.mirrored) {
    throw await wrongPart(context, part, hash, state, failure);
  }
  if (failure !== undefined) throw asNetworkFailure(operation, failure, signal, "body read failed");
  if (position < part.size) {
    throw new NetworkError(`${operation}: body ended before the part did`);
  }
  if ((await hash.digest()) !== part.digest) {
    throw await wrongPart(
      context,
      part,
      hash,
      state,
      new DigestMismatchError(`part ${part.index}`),
    );
  }
}

/**
 * What a part whose bytes are wrong fails with. Every byte from the registry: `wrong`, not
 * retried. Some from elsewhere, which may be at fault: the part starts over from byte zero with
 * a retryable failure, so the next attempt fetches it whole from the registry. Bytes an earlier
 * pull wrote (perhaps a torn write) are forgotten, their first block zeroed so no later pull
 * continues from them; a mirror that sent any is not asked for this blob again.
 */
async function wrongPart(
  context: PartDownloadContext,
  part: PartDescriptor,
  hash: RunningHash,
  state: PartState,
  wrong: DigestMismatchError,
): Promise<Error> {
  const { fromDisk, mirrored } = state;
  if (fromDisk === 0 && !mirrored) return wrong;
  if (fromDisk > 0) {
    const block = new Uint8Array(Math.min(part.size, PREFIX_BLOCK_BYTES));
    await context.partial.writeAt(block, part.offset);
  }
  restart(context, part, hash, state);
  if (mirrored) return mirrorSpoiled(context.repo, part.digest, `part ${part.index}`);
  return new OciError(
    `part ${part.index}: the bytes an earlier pull wrote do not match; fetching the part whole`,
    { retryable: true },
  );
}

/** Forgets every byte of the part placed or hashed so far: the next bytes are its byte zero. */
function restart(
  context: PartDownloadContext,
  part: PartDescriptor,
  hash: RunningHash,
  state: PartState,
): void {
  hash.reset();
  state.reached = 0;
  state.fromDisk = 0;
  state.mirrored = false;
  context.progress.restartPart(part.index);
}

/**
 * Copies `body` into `writer` (into pooled buffers where the runtime allows it: no copy and no
 * garbage chunk per read); resolves with the failure that ended the copy, if any.
 */
async function copyBody(
  body: ReadableStream<Uint8Array>,
  writer: PartWriter,
  room: number,
  received: (n: number) => void,
  overlong: () => Error,
): Promise<unknown> {
  const byob = openByob(body);
  if (byob !== undefined) {
    try {
      await writer.readFrom(byob, room, received, overlong);
    } catch (err) {
      byob.cancel().catch(() => {});
      return err;
    }
    return undefined;
  }
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return undefined;
      if (value.byteLength > room) throw overlong();
      room -= value.byteLength;
      received(value.byteLength);
      await writer.add(value);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    return err;
  }
}

/**
 * The write buffers of a pull's part downloads together: 32 of 1 MiB (written, hashing, or
 * being filled), whatever the number of parts and workers. Each part download leases them from
 * one pool, so a finished part's buffers serve the next part: buffers of its own per part (8,
 * which keep the socket, the disk and the hashing thread busy through each other's stalls) made
 * 64 MiB with 8 parts in flight, and 8 MiB of garbage per finished part that the runtime collected
 * late (peak RSS of a 16 GiB pull, 32 parts: 209 MiB against 141 MiB at 4 GiB, 8 parts; 4 GiB in
 * 32 parts: 182-198 MiB, now 133 MiB).
 *
 * @example One pool for a pull
 * ```ts
 * import { partDownloadBuffers } from "./part_download.ts";
 * const buffers = partDownloadBuffers();
 * console.log(buffers.size); // 1048576
 * ```
 */
export function partDownloadBuffers(): BufferPool {
  return new BufferPool(BUFFERS_PER_PULL, WRITE_BUFFER_SIZE);
}

const BUFFERS_PER_PULL = 32;

/**
 * Gathers chunks into 1 MiB positional writes (one in flight at a time, in order); each buffer
 * goes to the running hash once written, so the hash covers exactly the bytes placed on disk.
 */
class PartWriter {
  readonly #partial: PartialFile;
  readonly #pool: BufferPool;
  readonly #fill: BufferFill;
  readonly #hash: RunningHash;
  #position: number;
  #inflight: Promise<void> | undefined;

  constructor(partial: PartialFile, position: number, pool: BufferPool, hash: RunningHash) {
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

  /**
   * Reads `source` until it ends, calling `received` per read; more than `room` bytes fail with
   * `overlong()`. Every read lands in a pooled buffer of its own that is written and hashed as
   * it is (no copy, no garbage per chunk); a failed read takes only an empty buffer with it.
   */
  async readFrom(
    source: ByobSource,
    room: number,
    received: (n: number) => void,
    overlong: () => Error,
  ): Promise<void> {
    await this.#writeFilled();
    for (;;) {
      const buffer = await this.#pool.acquire();
      // Past the part's end one byte is still asked for: the body must end there.
      const want = Math.max(1, Math.min(WRITE_BUFFER_SIZE, room));
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await source.read(new Uint8Array(buffer, 0, want));
      } catch (err) {
        this.#pool.release(new ArrayBuffer(WRITE_BUFFER_SIZE));
        throw err;
      }
      const { done, value } = result;
      const filled = (value?.buffer as ArrayBuffer | undefined) ??
        new ArrayBuffer(WRITE_BUFFER_SIZE);
      if (done || value.byteLength > room) {
        this.#pool.release(filled);
        if (done) return;
        throw overlong();
      }
      room -= value.byteLength;
      received(value.byteLength);
      await this.#write(filled, value.byteLength);
    }
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
