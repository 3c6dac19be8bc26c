/**
 * Hashing a byte range of a file on the calling thread: the fallback of the hashing threads, and
 * the faster choice for small files (a thread takes longer to start than they take to hash).
 *
 * @module
 */
import { open } from "node:fs/promises";
import { createHash, type Hash } from "node:crypto";
import { LocalFileError } from "../errors/kinds.ts";
import { KeptBuffers } from "./buffer_pool.ts";
import { PREFIX_BLOCK_BYTES, scanWrittenPrefix } from "./written_prefix.ts";

/** The file ended before the range did: the file shrank. */
export class ShortFileError extends LocalFileError {
  override readonly code: string = "ERR_LOCAL_FILE";
  /** Creates the error. */
  constructor() {
    super("local file: file ended before the hashed range");
  }
}

/**
 * Read size of every range hashed, on the calling thread and on the hashing threads: the caller's
 * signal is checked after every read (under a millisecond of hashing on a core with SHA
 * extensions). Each read is a hand-over to the runtime's blocking threads: a 2 GiB push hashed
 * inline spent about 0.3 CPU-s less with 1 MiB reads than with 256 KiB ones.
 */
export const HASH_READ_BYTES: number = 1024 * 1024;

/**
 * Read buffers kept from one range to the next (two for each of two ranges at once): an 8 GiB
 * push hashed inline (144 ranges) held 11 MiB more of them when each range made its own.
 */
const chunks = new KeptBuffers(HASH_READ_BYTES, 4);

/**
 * Hashes `size` bytes of the file at `path` from `offset` on the calling thread with
 * double-buffered 1 MiB reads, checking `signal` after every read and telling `onBytes` the
 * byte count of each read hashed. Resolves to `sha256:<hex>`; rejects with `ShortFileError`
 * when the file ends first.
 *
 * @example Hashing the first bytes of a file
 * ```ts
 * import { hashRangeInline } from "./hash_range.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "abcdef");
 * console.log(await hashRangeInline(path, 0, 3));
 * // "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 * await Deno.remove(path);
 * ```
 */
export async function hashRangeInline(
  path: string,
  offset: number,
  size: number,
  signal?: AbortSignal,
  onBytes?: (bytes: number) => void,
): Promise<string> {
  const hash = createHash("sha256");
  await hashRangeInto(hash, path, offset, size, signal, onBytes);
  return `sha256:${hash.digest("hex")}`;
}

/** What a scan of a range found: see {@linkcode scanRangeInline}. */
export interface InlineRangeScan {
  /** `sha256:<hex>` of the whole range. */
  digest: string;
  /** Bytes of the range's written prefix (see `scanWrittenPrefix`). */
  prefix: number;
  /** A running hash of exactly the prefix. */
  prefixHash: Hash;
}

/**
 * Hashes a range as {@linkcode hashRangeInline} does and, in the same read, finds its written
 * prefix (up to the first all-zero block of `PREFIX_BLOCK_BYTES`, trailing zeros trimmed) with
 * the running hash of that prefix.
 *
 * @example A range written up to its third byte
 * ```ts
 * import { scanRangeInline } from "./hash_range.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeFile(path, new Uint8Array([7, 8, 9, 0, 0]));
 * const scan = await scanRangeInline(path, 0, 5);
 * console.log(scan.prefix); // 3
 * await Deno.remove(path);
 * ```
 */
export async function scanRangeInline(
  path: string,
  offset: number,
  size: number,
  signal?: AbortSignal,
): Promise<InlineRangeScan> {
  const hash = createHash("sha256");
  const scan = scanWrittenPrefix(hash, PREFIX_BLOCK_BYTES);
  await hashRangeInto(scan, path, offset, size, signal);
  const { prefix, prefixHash } = scan.finish();
  return { digest: `sha256:${hash.digest("hex")}`, prefix, prefixHash };
}

/**
 * Feeds `size` bytes of the file at `path` from `offset` into `hash` on the calling thread,
 * as {@linkcode hashRangeInline} reads them (`onBytes` is told each read's byte count).
 *
 * @example Two ranges into one hash
 * ```ts
 * import { createHash } from "node:crypto";
 * import { hashRangeInto } from "./hash_range.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "abc");
 * const hash = createHash("sha256");
 * await hashRangeInto(hash, path, 0, 1);
 * await hashRangeInto(hash, path, 1, 2);
 * console.log(hash.digest("hex"));
 * // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 * await Deno.remove(path);
 * ```
 */
export async function hashRangeInto(
  hash: { update(bytes: Uint8Array): unknown },
  path: string,
  offset: number,
  size: number,
  signal?: AbortSignal,
  onBytes?: (bytes: number) => void,
): Promise<void> {
  signal?.throwIfAborted();
  let handle;
  try {
    handle = await open(path, "r");
  } catch (err) {
    throw new LocalFileError("local file: open failed", { cause: err });
  }
  try {
    const buffers = [chunks.take(), chunks.take()];
    const outcome = await readRange(handle, buffers, offset, size, (bytes) => {
      hash.update(bytes);
      onBytes?.(bytes.byteLength);
    }, () => signal?.aborted === true).catch((err) => {
      throw new LocalFileError("local file: read failed", { cause: err });
    });
    // Every read has ended once readRange resolved (a failed one leaves its buffers unkept).
    for (const buffer of buffers) chunks.give(buffer);
    signal?.throwIfAborted();
    if (outcome === "short") throw new ShortFileError();
  } finally {
    await handle.close().catch(() => {});
  }
}

/** A file handle's positional read, as `node:fs/promises` has it. */
interface PositionalReader {
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
}

/**
 * Reads `size` bytes of `handle` from `offset` into the two `buffers` in turn (the next read
 * runs while `each` takes the bytes of the last), until the range is read (`"done"`), the file
 * ends (`"short"`) or `stopped()` says so after a read (`"stopped"`). Self-contained: a hashing
 * thread runs its source (`hash_worker_source.ts`), so both read a range the same way.
 *
 * @example Reading a range in pieces
 * ```ts
 * import { open } from "node:fs/promises";
 * import { readRange } from "./hash_range.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "abcdef");
 * const handle = await open(path);
 * const seen: string[] = [];
 * const buffers = [new Uint8Array(2), new Uint8Array(2)];
 * const outcome = await readRange(handle, buffers, 1, 4, (bytes) => {
 *   seen.push(new TextDecoder().decode(bytes));
 * }, () => false);
 * console.log(outcome, seen); // "done" [ "bc", "de" ]
 * await handle.close();
 * await Deno.remove(path);
 * ```
 */
export async function readRange(
  handle: PositionalReader,
  buffers: Uint8Array[],
  offset: number,
  size: number,
  each: (bytes: Uint8Array) => void,
  stopped: () => boolean,
): Promise<"done" | "short" | "stopped"> {
  const chunk = buffers[0].byteLength;
  const end = offset + size;
  let position = offset;
  let index = 0;
  let pending = size > 0 ? handle.read(buffers[0], 0, Math.min(chunk, size), position) : null;
  while (pending !== null) {
    const { bytesRead } = await pending;
    if (stopped()) return "stopped";
    if (bytesRead === 0) return "short";
    const current = buffers[index];
    position += bytesRead;
    index = 1 - index;
    pending = position < end
      ? handle.read(buffers[index], 0, Math.min(chunk, end - position), position)
      : null;
    // A read that fails while the bytes before it are taken is awaited (and thrown) next.
    pending?.catch(() => {});
    each(current.subarray(0, bytesRead));
  }
  return "done";
}
