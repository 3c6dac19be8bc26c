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
import { validateContentRange } from "../registry/range.ts";
import { Sha256 } from "../registry/sha256.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import { PARTED_RETRY_POLICY, retry, type RetryPolicy } from "../transport/retry.ts";
import type { PartialFile } from "./fs_partial.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { ProgressTracker } from "./progress.ts";
import type { PartedRequests } from "./requests.ts";

/** Bytes gathered before one positional write. */
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
  const hash = new Sha256();
  let reached = 0;
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
    const writer = new PartWriter(partial, part.offset + position);
    let failure: unknown;
    if (response.body !== null) {
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (position + value.byteLength > part.size) {
            await reader.cancel().catch(() => {});
            throw new DigestMismatchError(`part ${part.index}`, {
              cause: new ProtocolError(`${operation}: body longer than the part size`),
            });
          }
          hash.update(value);
          position += value.byteLength;
          progress.addWire(value.byteLength);
          await writer.add(value);
        }
      } catch (err) {
        failure = err;
        reader.cancel().catch(() => {});
      }
    }
    // Place every hashed byte before deciding, so a continuation starts where the disk is.
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
    if (hash.digest() !== part.digest) throw new DigestMismatchError(`part ${part.index}`);
  }, {
    policy: context.policy ?? PARTED_RETRY_POLICY,
    signal,
    clock: context.clock ?? systemClock,
  });
}

/** Gathers chunks into 1 MiB writes, keeping at most one write in flight. */
class PartWriter {
  readonly #partial: PartialFile;
  #position: number;
  #buffer: Uint8Array = new Uint8Array(WRITE_BUFFER_SIZE);
  #spare: Uint8Array | undefined = new Uint8Array(WRITE_BUFFER_SIZE);
  #length = 0;
  #inflight: Promise<void> | undefined;

  constructor(partial: PartialFile, position: number) {
    this.#partial = partial;
    this.#position = position;
  }

  async add(chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.byteLength) {
      const take = Math.min(chunk.byteLength - offset, WRITE_BUFFER_SIZE - this.#length);
      this.#buffer.set(chunk.subarray(offset, offset + take), this.#length);
      this.#length += take;
      offset += take;
      if (this.#length === WRITE_BUFFER_SIZE) await this.#swap();
    }
  }

  async flush(): Promise<void> {
    if (this.#length > 0) await this.#swap();
    const inflight = this.#inflight;
    this.#inflight = undefined;
    await inflight;
  }

  async #swap(): Promise<void> {
    const previous = this.#inflight;
    this.#inflight = undefined;
    await previous;
    const full = this.#buffer.subarray(0, this.#length);
    const position = this.#position;
    this.#position += this.#length;
    this.#length = 0;
    const spare = this.#spare ?? new Uint8Array(WRITE_BUFFER_SIZE);
    this.#spare = undefined;
    const backing = this.#buffer;
    this.#buffer = spare;
    this.#inflight = this.#partial.writeAt(full, position).then(() => {
      this.#spare = backing;
    });
    // Surface a write failure at the next await instead of as an unhandled rejection.
    this.#inflight.catch(() => {});
  }
}
