/**
 * Pulling one part: a whole-blob GET written at the part's offset while it is hashed; a broken
 * stream continues with a ranged GET from the byte reached, within the part's retry budget.
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { NetworkError, ProtocolError } from "../errors/kinds.ts";
import { OciError } from "../errors/oci_error.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { BufferFill, BufferPool } from "../registry/buffer_pool.ts";
import { type ByobSource, openByob } from "../transport/byob_body.ts";
import { validateContentRange } from "../registry/range.ts";
import type { RunningHash, Sha256Threads } from "../registry/sha256_threads.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import { PARTED_RETRY_POLICY, retry, type RetryPolicy } from "../transport/retry.ts";
import type { PartialFile } from "./fs_partial.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { ProgressTracker } from "./progress.ts";
import type { PartedRequests } from "./requests.ts";

/** Bytes gathered before one positional write; also the most one read may deliver. */
const WRITE_BUFFER_SIZE = 1 << 20;

/** What a part download needs. */
export interface PartDownloadContext {
  /** The registry requests of the source repository. */
  requests: PartedRequests;
  /** The partial file the bytes go to. */
  partial: PartialFile;
  /** Counts wire bytes. */
  progress: ProgressTracker;
  /** Stops the download. */
  signal: AbortSignal;
  /** Retry budget; the parted policy by default. */
  policy?: RetryPolicy;
  /** Time source of the backoff. */
  clock?: Clock;
  /** Where the running hashes of parts are computed. */
  hashThreads: Sha256Threads;
}

/**
 * Fetches `part` into place and verifies it. One attempt is a GET, the copy into place and the
 * digest check; a broken stream makes the next attempt a ranged GET from the byte reached with
 * the running hash. A registry that ignores the range (200) is consumed from byte zero in the
 * same attempt. A part that arrives whole and hashes wrong fails with `DigestMismatchError`,
 * not retried.
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
): Promise<void> {
  const { requests, signal, partial, progress } = context;
  const operation = "GET blob";
  const pool = new BufferPool(BUFFERS_PER_PART, WRITE_BUFFER_SIZE);
  const hash = context.hashThreads.open((buffer) => pool.release(buffer));
  let reached = 0;
  try {
    await retry(`part ${part.index}: download`, async () => {
      const { response } = await requests.getBlob(part.digest, reached, signal);
      let position: number;
      if (response.status === 206) {
        try {
          validateContentRange(
            response.headers.get("content-range"),
            { start: reached, end: part.size - 1, total: part.size },
            operation,
          );
        } catch (err) {
          await response.body?.cancel().catch(() => {});
          throw err;
        }
        position = reached;
      } else {
        // The whole blob: start over from byte zero, overwriting what was placed.
        hash.reset();
        reached = 0;
        position = 0;
        const declared = response.headers.get("content-length");
        if (declared !== null && Number(declared) !== part.size) {
          await response.body?.cancel().catch(() => {});
          throw new DigestMismatchError(`part ${part.index}`, {
            cause: new ProtocolError(`${operation}: length differs from the part size`),
          });
        }
      }
      const writer = new PartWriter(partial, part.offset + position, pool, hash);
      let failure: unknown;
      const overlong = () =>
        new DigestMismatchError(`part ${part.index}`, {
          cause: new ProtocolError(`${operation}: body longer than the part size`),
        });
      const received = (n: number) => {
        position += n;
        progress.addWire(n);
      };
      // Into pooled buffers where the runtime allows it: no copy and no garbage chunk per read.
      const byob = response.body === null ? undefined : openByob(response.body);
      if (byob !== undefined) {
        try {
          await writer.readFrom(byob, part.size - position, received, overlong);
        } catch (err) {
          failure = err;
          byob.cancel().catch(() => {});
        }
      } else if (response.body !== null) {
        const reader = response.body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            if (position + value.byteLength > part.size) throw overlong();
            received(value.byteLength);
            await writer.add(value);
          }
        } catch (err) {
          failure = err;
          reader.cancel().catch(() => {});
        }
      }
      // Place (and hash) every received byte first: a continuation starts where the disk is.
      await writer.flush();
      reached = position;
      if (failure !== undefined) {
        if (signal.aborted) throw signal.reason;
        if (failure instanceof OciError || isAbortError(failure)) throw failure;
        throw new NetworkError(`${operation}: body read failed`, { cause: failure });
      }
      if (position < part.size) {
        throw new NetworkError(`${operation}: body ended before the part did`);
      }
      if ((await hash.digest()) !== part.digest) {
        throw new DigestMismatchError(`part ${part.index}`);
      }
    }, {
      policy: context.policy ?? PARTED_RETRY_POLICY,
      signal,
      clock: context.clock ?? systemClock,
    });
  } finally {
    hash.close();
  }
}

/** At most this many 1 MiB buffers per part download (written, hashing, or being filled). */
const BUFFERS_PER_PART = 4;

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
