/**
 * A blob pulled into a file, resumably: `--workers` ranged reads of `--chunk-size` bytes run at
 * once and are written in order to `<file>.blob-partial`, so the partial file is always a clean
 * beginning of the blob; a rerun hashes that beginning and fetches only the rest. What a kill
 * loses is what was received beyond that beginning, so the reads started ahead of the writer are
 * bounded by {@linkcode lookAheadReads}. The bytes are hashed as they are written; the file is
 * renamed onto `<file>` only once the whole blob hashed to its digest, and a blob that does not
 * is discarded with its partial file.
 *
 * @module
 */
import type { BlobClient } from "../../blob/mod.ts";
import { DigestMismatchError, LocalFileError } from "../../errors/mod.ts";
import { PartialInUseError, type ProgressSnapshot } from "../../parted/mod.ts";
import { openRunningSha256 } from "./running_sha256.ts";

/** What a blob pull into a file needs. */
export interface BlobFileJob {
  /** The client, which makes the ranged reads. */
  readonly client: BlobClient;
  /** `host[:port]/name`. */
  readonly repository: string;
  /** The blob's digest. */
  readonly digest: string;
  /** The blob's size. */
  readonly size: number;
  /** The file to write. */
  readonly path: string;
  /** Ranged reads at once. */
  readonly workers: number;
  /** Bytes per ranged read. */
  readonly chunkSize: number;
  /** Stops the pull; the partial file is kept. */
  readonly signal: AbortSignal;
  /** Told how far the pull is. */
  readonly onProgress: (snapshot: ProgressSnapshot) => void;
  /**
   * When `client` reads through mirrors: the client that reads from the registry alone, which
   * fetches the whole blob again once the bytes did not hash to the digest.
   */
  readonly registryOnly?: () => BlobClient;
}

/** What a finished pull did. */
export interface BlobFileResult {
  /** The file written. */
  readonly path: string;
  /** The blob's digest. */
  readonly digest: string;
  /** The blob's size. */
  readonly size: number;
  /** Bytes an earlier run had written and this one kept. */
  readonly resumedBytes: number;
  /** Bytes fetched by this run (from the registry or its mirrors). */
  readonly fetchedBytes: number;
}

/** The share of the blob the reads ahead of the writer may hold: what a kill can lose. */
const LOOK_AHEAD_SHARE = 1 / 25;

/**
 * The ranged read size when none was asked for: 8 MiB, less for a blob too small to give every
 * worker 25 reads of that size (at least 256 KiB), so that `workers` reads under way hold at most
 * {@linkcode LOOK_AHEAD_SHARE} of the blob.
 *
 * @example
 * ```ts
 * import { defaultChunkSize } from "./blob_file.ts";
 * console.log(defaultChunkSize(32 * 2 ** 20, 8), defaultChunkSize(2 ** 31, 8)); // 262144 8388608
 * ```
 */
export function defaultChunkSize(size: number, workers: number): number {
  const spread = Math.ceil(size * LOOK_AHEAD_SHARE / Math.max(1, workers));
  return Math.min(8 << 20, Math.max(256 << 10, spread));
}

/**
 * How many reads may be started from the first unwritten one on: enough to keep `workers`
 * reads going (and up to twice that, so one slow read does not stall the others), but no more
 * than {@linkcode LOOK_AHEAD_SHARE} of the blob allows once `workers` reads fit in it. A kill
 * then loses at most that share (with the default read size, from 50 MiB at 8 workers).
 *
 * @example
 * ```ts
 * import { lookAheadReads } from "./blob_file.ts";
 * console.log(lookAheadReads(2 ** 31, 8 << 20, 8), lookAheadReads(2 ** 20, 2 ** 20, 8)); // 10 8
 * ```
 */
export function lookAheadReads(size: number, chunkSize: number, workers: number): number {
  const share = Math.floor(size * LOOK_AHEAD_SHARE / chunkSize);
  return Math.max(workers, Math.min(2 * workers, share));
}

/** The suffix of the partial file next to the destination. */
export const BLOB_PARTIAL_SUFFIX = ".blob-partial";

const READ_BUFFER = 1 << 20;

/** The most milliseconds between two progress reports while bytes are written. */
const PROGRESS_INTERVAL_MS = 100;

/**
 * Pulls `job`'s blob into `job.path` (see the module).
 *
 * @example
 * ```ts ignore
 * const result = await pullBlobFile({ client, repository, digest, size, path: "data.bin",
 *   workers: 8, chunkSize: 8 << 20, signal, onProgress });
 * ```
 */
export async function pullBlobFile(job: BlobFileJob): Promise<BlobFileResult> {
  const fetched = { bytes: 0 };
  try {
    return await pullOnce(job, fetched);
  } catch (err) {
    if (job.registryOnly === undefined || !(err instanceof DigestMismatchError)) throw err;
    // A mirror may have sent (or an earlier run kept) other bytes: a mirror never decides what
    // a digest names, so the registry is asked for the whole blob, and its bytes are final.
    return await pullOnce({ ...job, client: job.registryOnly(), registryOnly: undefined }, fetched);
  }
}

/** One pull of the blob into the partial file; `fetched` counts the bytes received. */
async function pullOnce(job: BlobFileJob, fetched: { bytes: number }): Promise<BlobFileResult> {
  const partial = `${job.path}${BLOB_PARTIAL_SUFFIX}`;
  await refuseLink(partial);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(partial, { read: true, write: true, create: true });
  } catch (err) {
    throw new LocalFileError("cannot open the partial file", { cause: err });
  }
  if (!(await file.tryLock(true))) {
    file.close();
    throw new PartialInUseError();
  }
  const hash = openRunningSha256();
  let kept = 0;
  try {
    kept = (await file.stat()).size;
    if (kept > job.size) {
      await file.truncate(0);
      kept = 0;
    }
    const chunks = Math.max(1, Math.ceil(job.size / job.chunkSize));
    const snapshot = (phase: ProgressSnapshot["phase"], written: number): ProgressSnapshot => ({
      phase,
      completedBytes: written,
      transferredBytes: written,
      wireBytes: fetched.bytes,
      totalBytes: job.size,
      partsDone: written === job.size ? chunks : Math.floor(written / job.chunkSize),
      partsSkipped: 0,
      partsTotal: chunks,
      partsActive: 0,
      events: [],
      // No `path`: a failure report then does not point at a partial file to reuse, which a
      // mismatch here discards.
      ...(kept > 0 ? { resumedBytes: kept, resumeChecked: phase !== "verifying" } : {}),
    });
    // The beginning an earlier run wrote: hashed, not fetched again.
    if (kept > 0) {
      job.onProgress(snapshot("verifying", 0));
      await hashPrefix(file, kept, hash, job.signal);
    }
    await file.seek(kept, Deno.SeekMode.Start);
    let written = kept;
    job.onProgress(snapshot("downloading", written));
    let reported = 0;
    await fetchInOrder(job, kept, async (bytes) => {
      fetched.bytes += bytes.length;
      await writeAll(file, bytes);
      await hash.update(bytes);
      written += bytes.length;
      // At most about ten reports a second, as the libraries' progress.
      const now = Date.now();
      if (now - reported >= PROGRESS_INTERVAL_MS) {
        reported = now;
        job.onProgress(snapshot("downloading", written));
      }
    });
    const digest = await hash.digest();
    if (digest !== job.digest) {
      file.close();
      await Deno.remove(partial).catch(() => {});
      throw new DigestMismatchError(
        `GET blob: the bytes do not hash to the digest asked for; nothing was kept`,
      );
    }
    await file.syncData();
    await refuseLink(partial);
    // Renamed while still locked, so no other pull takes the partial file in between.
    await Deno.rename(partial, job.path);
    file.close();
    job.onProgress(snapshot("done", job.size));
    return {
      path: job.path,
      digest: job.digest,
      size: job.size,
      resumedBytes: kept,
      fetchedBytes: fetched.bytes,
    };
  } catch (err) {
    try {
      file.close();
    } catch {
      // Already closed.
    }
    throw err;
  } finally {
    hash.close();
  }
}

/** A partial file that is a symbolic link is refused: a pull never writes through one. */
async function refuseLink(path: string): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch {
    return;
  }
  if (info.isSymlink || !info.isFile) {
    throw new LocalFileError("the partial file is not a regular file (a link or special file)");
  }
}

async function hashPrefix(
  file: Deno.FsFile,
  length: number,
  hash: { update(chunk: Uint8Array): Promise<void> },
  signal: AbortSignal,
): Promise<void> {
  await file.seek(0, Deno.SeekMode.Start);
  const buffer = new Uint8Array(READ_BUFFER);
  let left = length;
  while (left > 0) {
    signal.throwIfAborted();
    const n = await file.read(buffer.subarray(0, Math.min(left, buffer.length)));
    if (n === null || n === 0) throw new LocalFileError("the partial file became shorter");
    await hash.update(buffer.subarray(0, n));
    left -= n;
  }
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) offset += await file.write(bytes.subarray(offset));
}

/** One ranged read: the bytes received and not yet written, and whether all arrived. */
interface Chunk {
  pieces: Uint8Array[];
  done: boolean;
}

/**
 * Fetches bytes `[start, size)` as ranged reads of `chunkSize`, `workers` at once, and gives
 * them to `emit` in order: the first unwritten read's bytes as they arrive, the others once
 * their turn comes. At most {@linkcode lookAheadReads} reads are held.
 */
async function fetchInOrder(
  job: BlobFileJob,
  start: number,
  emit: (bytes: Uint8Array) => Promise<void>,
): Promise<void> {
  const { size, chunkSize } = job;
  const count = Math.ceil((size - start) / chunkSize);
  if (count <= 0) return;
  const abort = new AbortController();
  const signal = AbortSignal.any([job.signal, abort.signal]);
  const chunks = new Map<number, Chunk>();
  const window = lookAheadReads(size, chunkSize, job.workers);
  const changed = new Changes(signal);
  let next = 0;
  let head = 0;
  const worker = async () => {
    for (;;) {
      // Wait while the reads ahead of the writer fill the window.
      while (next < count && next - head >= window) await changed.next();
      if (next >= count) return;
      const index = next++;
      const offset = start + index * chunkSize;
      const length = Math.min(chunkSize, size - offset);
      const chunk: Chunk = { pieces: [], done: false };
      chunks.set(index, chunk);
      const stream = await job.client.pullRange(job.repository, job.digest, offset, length, {
        signal,
      });
      let received = 0;
      for await (const piece of stream) {
        received += piece.length;
        if (received > length) break;
        chunk.pieces.push(piece);
        changed.tell();
      }
      if (received !== length) {
        throw new DigestMismatchError("GET blob: a ranged read returned another length");
      }
      chunk.done = true;
      changed.tell();
    }
  };
  const writer = async () => {
    while (head < count) {
      const chunk = chunks.get(head);
      if (chunk !== undefined && chunk.pieces.length > 0) {
        const pieces = chunk.pieces;
        chunk.pieces = [];
        for (const run of joined(pieces)) await emit(run);
        continue;
      }
      if (chunk !== undefined && chunk.done) {
        chunks.delete(head);
        head++;
        changed.tell();
        continue;
      }
      await changed.next();
    }
  };
  const stop = (err: unknown) => {
    abort.abort(err);
    changed.tell();
    throw err;
  };
  const tasks = Array.from({ length: Math.min(job.workers, count) }, () => worker().catch(stop));
  const results = await Promise.allSettled([...tasks, writer().catch(stop)]);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed !== undefined) {
    throw job.signal.aborted ? job.signal.reason : firstCause(failed.reason, abort.signal);
  }
}

/**
 * `pieces` (the runtime's reads, about 64 KiB each) joined into runs of up to
 * {@linkcode READ_BUFFER} bytes: one write and one hash update per run instead of per read.
 */
function* joined(pieces: Uint8Array[]): Generator<Uint8Array> {
  let at = 0;
  while (at < pieces.length) {
    let end = at;
    let length = 0;
    while (end < pieces.length && (end === at || length + pieces[end].length <= READ_BUFFER)) {
      length += pieces[end++].length;
    }
    if (end - at === 1) {
      yield pieces[at];
    } else {
      const run = new Uint8Array(length);
      let offset = 0;
      for (let i = at; i < end; i++) {
        run.set(pieces[i], offset);
        offset += pieces[i].length;
      }
      yield run;
    }
    at = end;
  }
}

/**
 * Wakes every task waiting for a change (a chunk landed, one was written, a failure). A stop is
 * a change too, and a wait that begins after it throws at once: once every reader has stopped,
 * no other change comes to wake the writer.
 */
class Changes {
  #waiting: (() => void)[] = [];
  readonly #signal: AbortSignal;

  constructor(signal: AbortSignal) {
    this.#signal = signal;
    signal.addEventListener("abort", () => this.tell(), { once: true });
  }

  /** Resolves at the next change; rejects with the stop's reason once stopped. */
  async next(): Promise<void> {
    this.#signal.throwIfAborted();
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#signal.throwIfAborted();
  }

  /** Tells every waiting task. */
  tell(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }
}

/** The error that ended the pull, not the abort it caused in the other workers. */
function firstCause(reason: unknown, abort: AbortSignal): unknown {
  return abort.aborted ? abort.reason : reason;
}
