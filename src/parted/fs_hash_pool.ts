/**
 * Hashing file ranges off the calling thread: a small pool of Web Workers, each reading its
 * range with double-buffered 4 MiB reads and hashing it with `node:crypto`. Hashing on the
 * calling thread gives no parallelism, and a Worker can be stopped at once on cancellation.
 * Where Workers are unavailable, the ranges are hashed inline.
 *
 * @module
 */
import { open } from "node:fs/promises";
import { createHash } from "node:crypto";
import { LocalFileError } from "../errors/kinds.ts";

/** The file ended before the range did: the file shrank. */
export class ShortFileError extends LocalFileError {
  override readonly code: string = "ERR_LOCAL_FILE";
  /** Creates the error. */
  constructor() {
    super("local file: file ended before the hashed range");
  }
}

const WORKER_SOURCE = `
import { open } from "node:fs/promises";
import { createHash } from "node:crypto";
const CHUNK = 4 << 20;
const buffers = [new Uint8Array(CHUNK), new Uint8Array(CHUNK)];
self.onmessage = async (event) => {
  const { id, path, offset, size } = event.data;
  try {
    const handle = await open(path, "r");
    try {
      const hash = createHash("sha256");
      const end = offset + size;
      let position = offset;
      let index = 0;
      let pending = size > 0 ? handle.read(buffers[0], 0, Math.min(CHUNK, size), position) : null;
      while (pending !== null) {
        const { bytesRead } = await pending;
        if (bytesRead === 0) {
          self.postMessage({ id, error: "short" });
          return;
        }
        const current = buffers[index];
        position += bytesRead;
        index = 1 - index;
        pending = position < end
          ? handle.read(buffers[index], 0, Math.min(CHUNK, end - position), position)
          : null;
        hash.update(current.subarray(0, bytesRead));
      }
      self.postMessage({ id, digest: "sha256:" + hash.digest("hex") });
    } finally {
      await handle.close();
    }
  } catch (err) {
    self.postMessage({ id, error: "io", code: String(err?.code ?? "") });
  }
};
`;

interface Job {
  id: number;
  path: string;
  offset: number;
  size: number;
  resolve: (digest: string) => void;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
}

interface Slot {
  worker: Worker;
  job: Job | undefined;
}

let workerUrl: string | undefined;

function createWorker(): Worker | undefined {
  if (typeof globalThis.Worker !== "function") return undefined;
  try {
    workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    return new Worker(workerUrl, { type: "module" });
  } catch {
    return undefined;
  }
}

/**
 * A pool of at most `size` hashing threads. `hash()` queues a range; ranges run in submission
 * order on the first free thread. An aborted job's thread is terminated (replaced lazily), so
 * cancellation is immediate.
 *
 * @example
 * ```ts ignore
 * import { HashPool } from "./fs_hash_pool.ts";
 * const pool = new HashPool(2);
 * console.log(await pool.hash("./data.bin", 0, 1024));
 * pool.close();
 * ```
 */
export class HashPool {
  readonly #size: number;
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  #nextId = 0;
  #closed = false;
  #inline = false;

  /** Creates a pool of at most `size` threads (started lazily); `0` hashes on this thread. */
  constructor(size: number) {
    this.#size = Math.max(1, size);
    this.#inline = size === 0;
  }

  /**
   * The sha256 digest (`sha256:<hex>`) of `size` bytes of `path` from `offset`. Rejects with
   * `ShortFileError` when the file ends first, `LocalFileError` when it cannot be read, and the
   * signal's reason on abort.
   */
  hash(path: string, offset: number, size: number, signal?: AbortSignal): Promise<string> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#closed) return Promise.reject(new LocalFileError("local file: hashing stopped"));
    if (this.#inline) return hashRangeInline(path, offset, size, signal);
    return new Promise<string>((resolve, reject) => {
      const job: Job = { id: this.#nextId++, path, offset, size, resolve, reject, signal };
      if (signal !== undefined) {
        signal.addEventListener("abort", () => this.#abort(job), { once: true });
      }
      this.#queue.push(job);
      this.#pump();
    });
  }

  /** Terminates every thread; queued and running jobs reject. */
  close(): void {
    this.#closed = true;
    for (const slot of this.#slots) {
      slot.worker.terminate();
      slot.job?.reject(new LocalFileError("local file: hashing stopped"));
    }
    this.#slots.length = 0;
    for (const job of this.#queue.splice(0)) {
      job.reject(new LocalFileError("local file: hashing stopped"));
    }
  }

  #abort(job: Job): void {
    const queued = this.#queue.indexOf(job);
    if (queued >= 0) {
      this.#queue.splice(queued, 1);
      job.reject(job.signal?.reason);
      return;
    }
    const slot = this.#slots.find((s) => s.job === job);
    if (slot === undefined) return;
    slot.worker.terminate();
    this.#slots.splice(this.#slots.indexOf(slot), 1);
    job.reject(job.signal?.reason);
    this.#pump();
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => s.job === undefined);
      if (slot === undefined && this.#slots.length < this.#size) {
        const worker = createWorker();
        if (worker === undefined) {
          this.#goInline();
          return;
        }
        slot = { worker, job: undefined };
        this.#slots.push(slot);
        this.#listen(slot);
      }
      if (slot === undefined) return;
      const job = this.#queue.shift()!;
      slot.job = job;
      slot.worker.postMessage({ id: job.id, path: job.path, offset: job.offset, size: job.size });
    }
  }

  #listen(slot: Slot): void {
    slot.worker.onmessage = (event: MessageEvent) => {
      const job = slot.job;
      const data = event.data as { id: number; digest?: string; error?: string; code?: string };
      if (job === undefined || job.id !== data.id) return;
      slot.job = undefined;
      if (data.digest !== undefined) job.resolve(data.digest);
      else if (data.error === "short") job.reject(new ShortFileError());
      else {
        job.reject(
          new LocalFileError("local file: read failed", { cause: new Error(data.code ?? "") }),
        );
      }
      this.#pump();
    };
    slot.worker.onerror = (event: Event) => {
      event.preventDefault();
      const job = slot.job;
      slot.worker.terminate();
      this.#slots.splice(this.#slots.indexOf(slot), 1);
      job?.reject(new LocalFileError("local file: hashing thread failed"));
      this.#pump();
    };
  }

  #goInline(): void {
    this.#inline = true;
    for (const job of this.#queue.splice(0)) {
      hashRangeInline(job.path, job.offset, job.size, job.signal).then(job.resolve, job.reject);
    }
  }
}

/** Read size of the inline path: the caller's signal is checked after every read. */
const INLINE_CHUNK = 256 * 1024;

/**
 * Hashes a file range on the calling thread with double-buffered 256 KiB reads, checking
 * `signal` after every read.
 *
 * @example
 * ```ts ignore
 * import { hashRangeInline } from "./fs_hash_pool.ts";
 * console.log(await hashRangeInline("./data.bin", 0, 10));
 * ```
 */
export async function hashRangeInline(
  path: string,
  offset: number,
  size: number,
  signal?: AbortSignal,
): Promise<string> {
  signal?.throwIfAborted();
  let handle;
  try {
    handle = await open(path, "r");
  } catch (err) {
    throw new LocalFileError("local file: open failed", { cause: err });
  }
  try {
    const hash = createHash("sha256");
    const buffers = [new Uint8Array(INLINE_CHUNK), new Uint8Array(INLINE_CHUNK)];
    const end = offset + size;
    let position = offset;
    let index = 0;
    let pending = size > 0
      ? handle.read(buffers[0], 0, Math.min(INLINE_CHUNK, size), position)
      : undefined;
    while (pending !== undefined) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await pending);
      } catch (err) {
        throw new LocalFileError("local file: read failed", { cause: err });
      }
      signal?.throwIfAborted();
      if (bytesRead === 0) throw new ShortFileError();
      const current = buffers[index];
      position += bytesRead;
      index = 1 - index;
      pending = position < end
        ? handle.read(buffers[index], 0, Math.min(INLINE_CHUNK, end - position), position)
        : undefined;
      hash.update(current.subarray(0, bytesRead));
    }
    return `sha256:${hash.digest("hex")}`;
  } finally {
    await handle.close().catch(() => {});
  }
}
