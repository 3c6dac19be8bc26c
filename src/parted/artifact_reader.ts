/**
 * Random access to a parted artifact: any byte range, fetched part by part. A part is the
 * unit of verification (its digest is all the manifest says about its bytes), so every part a
 * range touches is fetched whole and verified before any of its bytes is returned: reading 8
 * bytes costs one part. Verified parts stay in a bounded cache (memory, or a cache directory)
 * so that nearby reads do not fetch them again.
 *
 * @module
 */
import { FileEndedError } from "../errors/kinds.ts";
import { openStreamHash } from "../hashing/stream_sha256.ts";
import type { Sha256Threads } from "../hashing/sha256_threads.ts";
import type { Connection } from "./connection.ts";
import { CacheDirectory } from "./fs_part_cache.ts";
import type { PartFile } from "./fs_spill.ts";
import { FilePart, MemoryPart } from "./held_part.ts";
import type { PartDescriptor, PartedManifest } from "./manifest.ts";
import { downloadPart, partDownloadBuffers, type PartDownloadContext } from "./part_download.ts";
import { ProgressTracker } from "./progress.ts";
import { once } from "./once.ts";
import { type KeptPart, ReaderCache } from "./reader_cache.ts";
import { resolveManifest } from "./resolve_manifest.ts";
import type { TransferJob } from "./transfer_job.ts";

/** Parts kept by default. */
export const DEFAULT_CACHE_PARTS = 2;

/** Bytes of one chunk of a part held in memory, as a read hands it out. */
const CHUNK_BYTES = 1 << 20;

/** What opening a reader needs, already validated. */
export interface ReaderJob extends TransferJob {
  /** Parts kept at most. */
  cacheParts: number;
  /** Keep parts in this directory instead of memory. */
  cacheDirectory?: string;
  /** Bytes of parts held in memory at most; the others wait in a temporary directory. */
  memoryWindowBytes: number;
  /** Where that temporary directory is made (default: the system's temporary directory). */
  spillDirectory?: string;
}

/**
 * A reader of any byte range of one artifact, from {@linkcode PartedClient.open}. Close it
 * (or `await using` it) to let its parts and connections go.
 *
 * @example Reading a safetensors header: its 8-byte length, then the JSON
 * ```ts
 * import { fromStream, PartedClient } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * using client = new PartedClient({ plainHttp: true });
 * const json = new TextEncoder().encode('{"w":{}}');
 * const file = new Uint8Array(8 + json.byteLength + 100);
 * new DataView(file.buffer).setBigUint64(0, BigInt(json.byteLength), true);
 * file.set(json, 8);
 * await client.push(`${registry.host}/m/w:v1`, fromStream(new Blob([file]).stream()), { partSize: 16 });
 * await using reader = await client.open(`${registry.host}/m/w:v1`);
 * const length = new DataView((await reader.readAt(0, 8)).buffer).getBigUint64(0, true);
 * const header = new TextDecoder().decode(await reader.readAt(8, Number(length)));
 * console.log(header, reader.bytesFetched); // '{"w":{}}' 16
 * ```
 */
export class ArtifactReader {
  /** The file's size in bytes. */
  readonly size: number;
  /** The manifest digest (what a tag resolved to). */
  readonly digest: string;
  /** The part size: the granularity of fetching and verification. */
  readonly partSize: number;
  readonly #manifest: PartedManifest;
  readonly #job: ReaderJob;
  readonly #connection: Connection;
  readonly #directory: CacheDirectory | undefined;
  readonly #threads: Sha256Threads;
  readonly #progress: ProgressTracker;
  readonly #buffers = partDownloadBuffers();
  readonly #controller = new AbortController();
  readonly #signal: AbortSignal;
  readonly #cache: ReaderCache;
  /** Parts being fetched, with the number of reads waiting for each. */
  readonly #fetching = new Map<number, { part: Promise<KeptPart>; reads: number }>();
  #closed = false;

  private constructor(
    job: ReaderJob,
    connection: Connection,
    resolved: { manifest: PartedManifest; digest: string },
    directory: CacheDirectory | undefined,
  ) {
    this.#job = job;
    this.#connection = connection;
    this.#manifest = resolved.manifest;
    this.digest = resolved.digest;
    this.size = resolved.manifest.fileSize;
    this.partSize = resolved.manifest.partSize;
    this.#directory = directory;
    this.#cache = new ReaderCache(job.cacheParts, job.memoryWindowBytes, job.spillDirectory);
    this.#threads = job.hashing(1, "download");
    this.#progress = new ProgressTracker(this.size, resolved.manifest.parts.length, "downloading");
    this.#signal = job.signal === undefined
      ? this.#controller.signal
      : AbortSignal.any([job.signal, this.#controller.signal]);
  }

  /** Resolves the manifest of `job` and opens a reader on it. */
  static async open(job: ReaderJob, connection: Connection): Promise<ArtifactReader> {
    job.signal?.throwIfAborted();
    const resolved = await resolveManifest(connection, job.reference, {
      signal: job.signal,
      policy: job.policy,
      clock: job.clock,
    });
    const directory = job.cacheDirectory === undefined
      ? undefined
      : await CacheDirectory.open(job.cacheDirectory, job.cacheParts);
    return new ArtifactReader(job, connection, resolved, directory);
  }

  /** Part bytes received from the registry by this reader so far. */
  get bytesFetched(): number {
    return this.#progress.snapshot.wireBytes;
  }

  /**
   * The `length` bytes from `offset`. Every part they touch is fetched whole (or taken from
   * the cache) and verified first.
   *
   * @throws {RangeError} The range is negative or goes past the end of the file.
   */
  async readAt(offset: number, length: number): Promise<Uint8Array> {
    const parts = this.#touched(offset, length);
    const out = new Uint8Array(length);
    await Promise.all(parts.map(async ({ part, from, count }) => {
      let at = part.offset + from - offset;
      const read = await this.#read(part, from, count);
      try {
        for await (const chunk of read.chunks) {
          out.set(chunk, at);
          at += chunk.byteLength;
        }
      } finally {
        read.done();
      }
    }));
    return out;
  }

  /**
   * The `length` bytes from `offset` (default: to the end of the file) as a stream, part by
   * part, each part verified before its first byte is enqueued.
   *
   * @throws {RangeError} The range is negative or goes past the end of the file.
   */
  stream(offset = 0, length: number = this.size - offset): ReadableStream<Uint8Array> {
    const parts = this.#touched(offset, length);
    let next = 0;
    let current: { read: PartRead; chunks: AsyncIterator<Uint8Array> } | undefined;
    let cancelled = false;
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        for (;;) {
          if (current === undefined) {
            if (next >= parts.length) return controller.close();
            const { part, from, count } = parts[next++];
            const read = await this.#read(part, from, count);
            // Cancelled while the part was on its way: the read ends before it began.
            if (cancelled) return read.done();
            current = { read, chunks: read.chunks[Symbol.asyncIterator]() };
          }
          const { value, done } = await current.chunks.next();
          if (!done) return controller.enqueue(value);
          current.read.done();
          current = undefined;
        }
      },
      cancel: () => {
        cancelled = true;
        current?.read.done();
      },
    }, { highWaterMark: 0 });
  }

  /**
   * Stops the reader's requests and lets its parts go: a cache directory keeps its files, the
   * temporary directory of parts that did not fit in memory is removed.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#controller.abort(new DOMException("the reader was closed", "AbortError"));
    // The fetches stopped remove their files (a partial file in the cache directory).
    await Promise.allSettled([...this.#fetching.values()].map((fetching) => fetching.part));
    this.#threads.close();
    this.#progress.close();
    await this.#cache.close();
  }

  /** Same as {@linkcode ArtifactReader.close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The parts `[offset, offset + length)` touches, and which of their bytes. */
  #touched(
    offset: number,
    length: number,
  ): { part: PartDescriptor; from: number; count: number }[] {
    if (this.#closed) throw new TypeError("ArtifactReader: the reader is closed");
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new RangeError(`offset must be a non-negative integer, not ${offset}`);
    }
    if (!Number.isSafeInteger(length) || length < 0) {
      throw new RangeError(`length must be a non-negative integer, not ${length}`);
    }
    if (offset + length > this.size) {
      throw new RangeError(
        `range ${offset}+${length} goes past the end of the file (${this.size} bytes)`,
      );
    }
    const touched = [];
    for (const part of this.#manifest.parts) {
      const from = Math.max(offset, part.offset);
      const to = Math.min(offset + length, part.offset + part.size);
      if (from < to) touched.push({ part, from: from - part.offset, count: to - from });
    }
    return touched;
  }

  /**
   * A read of the bytes `[from, from + count)` of `part`, once the whole part verified. The
   * part is in use until the read's `done` (called once its chunks end, or by the caller that
   * stops reading them).
   */
  async #read(part: PartDescriptor, from: number, count: number): Promise<PartRead> {
    // A read under way when the reader closes ends with the reader's reason.
    this.#signal.throwIfAborted();
    const kept = await this.#part(part);
    const done = once(() => kept.done());
    const signal = this.#signal;
    const cache = this.#cache;
    const { held } = kept;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      try {
        if ("bytes" in held) {
          // Copies (the caller may write into what it gets), a chunk at a time: a read of a
          // whole part does not hold the part twice.
          for (let at = from; at < from + count; at += CHUNK_BYTES) {
            signal.throwIfAborted();
            yield held.bytes.slice(at, Math.min(at + CHUNK_BYTES, from + count));
          }
          return;
        }
        let got = 0;
        for await (const chunk of held.file.chunks(from, count)) {
          signal.throwIfAborted();
          got += chunk.byteLength;
          yield chunk;
        }
        // A kept file read short: never a stream that ends early as if it were complete, and
        // the part is fetched again by the next read.
        if (got !== count) {
          cache.drop(part.index, kept);
          throw new FileEndedError(
            `part ${part.index}: its kept file ended early (changed on disk)`,
          );
        }
      } finally {
        done();
      }
    }
    return { chunks: chunks(), done };
  }

  /**
   * The verified part: from the cache, else fetched (once, however many reads ask). A temporary
   * file is in use by the read from the moment the part is found or fetched (in the same step
   * that puts it in the cache): a read of another part cannot push it out first.
   */
  #part(part: PartDescriptor): Promise<KeptPart> {
    const cached = this.#cache.get(part.index);
    if (cached !== undefined) {
      const kept = usedBy(cached, 1);
      // The cache directory trims by time of use: a part read again counts as used now.
      if (!("file" in kept.held) || this.#directory === undefined) return Promise.resolve(kept);
      return this.#directory.touch(kept.held.file.path).then(() => kept);
    }
    let fetching = this.#fetching.get(part.index);
    if (fetching === undefined) {
      const started = {
        reads: 0,
        part: this.#load(part).then((loaded) => {
          this.#cache.add(part.index, usedBy(loaded, started.reads));
          return loaded;
        }).finally(() => this.#fetching.delete(part.index)),
      };
      this.#fetching.set(part.index, fetching = started);
    }
    fetching.reads++;
    return fetching.part;
  }

  /**
   * Takes the part from the cache directory (hashed again, through the handle it is then read
   * through: the bytes checked are the bytes read) or fetches and verifies it.
   */
  async #load(part: PartDescriptor): Promise<KeptPart> {
    const directory = this.#directory;
    if (directory !== undefined) {
      const found = await directory.openKept(part.digest, part.size);
      if (found !== undefined) {
        const digest = await this.#hashKept(found, part.size).catch(() => undefined);
        if (digest === part.digest) return this.#cache.inCacheDirectory(found);
        await found.close();
        this.#signal.throwIfAborted();
        if (digest !== undefined) await directory.forget(found.path);
      }
    }
    const context = {
      repo: this.#connection.repo,
      progress: this.#progress,
      hashThreads: this.#threads,
      buffers: this.#buffers,
      signal: this.#signal,
      policy: this.#job.policy,
      clock: this.#job.clock,
    };
    if (directory === undefined) return await this.#fetchHeld(context, part);
    const file = await directory.create(part.digest);
    try {
      await downloadPart({ ...context, partial: new FilePart(part.offset, file) }, part);
    } catch (err) {
      await file.remove();
      throw err;
    }
    await directory.keep(file, part.digest);
    return this.#cache.inCacheDirectory(file);
  }

  /** The digest of the `size` bytes of an open kept file (a pass over local bytes). */
  async #hashKept(file: PartFile, size: number): Promise<string> {
    const hash = openStreamHash(size, this.#threads);
    try {
      for await (const chunk of file.chunks(0, size)) {
        this.#signal.throwIfAborted();
        await hash.update(chunk);
      }
      if (hash.bytes !== size) {
        throw new FileEndedError("a kept part file is shorter than its part");
      }
      return await hash.digest();
    } finally {
      hash.close();
    }
  }

  /** Fetches and verifies `part` into memory if it fits the window, else a temporary file. */
  async #fetchHeld(
    context: Omit<PartDownloadContext, "partial">,
    part: PartDescriptor,
  ): Promise<KeptPart> {
    if (this.#cache.reserveMemory(part.size)) {
      try {
        const held = new MemoryPart(part.offset, part.size);
        await downloadPart({ ...context, partial: held }, part);
        return this.#cache.inMemory(held.bytes);
      } catch (err) {
        this.#cache.releaseMemory(part.size);
        throw err;
      }
    }
    const file = await this.#cache.spillFile(part.index);
    try {
      await downloadPart({ ...context, partial: new FilePart(part.offset, file) }, part);
    } catch (err) {
      await file.remove();
      throw err;
    }
    return this.#cache.inTemporaryFile(file);
  }
}

/** A read of one part: its chunks, and `done` to end it early (it ends by itself at the end). */
interface PartRead {
  chunks: AsyncIterable<Uint8Array>;
  done: () => void;
}

/** `part`, with `reads` more reads using it. */
function usedBy(part: KeptPart, reads: number): KeptPart {
  for (let i = 0; i < reads; i++) part.use();
  return part;
}

/**
 * Options of {@linkcode PartedClient.open}.
 *
 * @example Parts kept in a directory across runs
 * ```ts
 * import type { OpenOptions } from "@ocipart/ocipart";
 * const options: OpenOptions = { cacheDirectory: "./.ocipart-cache", cacheParts: 8 };
 * console.log(options.cacheParts); // 8
 * ```
 */
export interface OpenOptions {
  /**
   * The most verified parts kept for later reads (the least recently used go first): in
   * memory as far as `memoryWindowBytes` allows, else in temporary files; in `cacheDirectory`,
   * that many files.
   *
   * @default 2
   */
  cacheParts?: number;
  /**
   * Bytes of parts held in memory at once, kept or being fetched. A part that does not fit
   * (the default part size is 512 MiB) waits in a file of a temporary directory instead,
   * removed when the reader closes. Unused with `cacheDirectory`.
   *
   * @default 268435456 (256 MiB)
   */
  memoryWindowBytes?: number;
  /**
   * The directory in which that temporary directory is made. Default: the system's temporary
   * directory.
   */
  spillDirectory?: string;
  /**
   * Keep verified parts as files in this directory (created if needed) instead of memory;
   * another reader, in this process or a later one, takes them from there after hashing them
   * again once.
   *
   * @default none: parts are kept in memory
   */
  cacheDirectory?: string;
  /** Stops the manifest request and every part fetch of the reader. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode PartedClient.read}.
 *
 * @example The 8 bytes at the start of the file
 * ```ts
 * import type { ReadOptions } from "@ocipart/ocipart";
 * const options: ReadOptions = { offset: 0, length: 8 };
 * console.log(options.length); // 8
 * ```
 */
export interface ReadOptions extends OpenOptions {
  /** The first byte to read. Default 0. */
  offset?: number;
  /** The number of bytes to read. Default: to the end of the file. */
  length?: number;
}

/**
 * A stream of a range of the reader `opening` will give, which closes the reader at its end.
 *
 * @example
 * ```ts ignore
 * const stream = rangeStream(ArtifactReader.open(job, connection), 0, 8);
 * ```
 */
export function rangeStream(
  opening: Promise<ArtifactReader>,
  offset: number,
  length: number | undefined,
): ReadableStream<Uint8Array> {
  opening.catch(() => {});
  let inner: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const close = async () => await (await opening.catch(() => undefined))?.close();
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      try {
        if (inner === undefined) {
          const reader = await opening;
          inner = reader.stream(offset, length ?? Math.max(0, reader.size - offset)).getReader();
        }
        const { value, done } = await inner.read();
        if (!done) return controller.enqueue(value);
        await close();
        controller.close();
      } catch (err) {
        await close();
        throw err;
      }
    },
    cancel: async (reason) => {
      await inner?.cancel(reason);
      await close();
    },
  }, { highWaterMark: 0 });
}
