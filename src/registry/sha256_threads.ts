/**
 * Running sha256 hashes computed on worker threads, so receiving, writing and hashing a download
 * use separate cores. Buffers are transferred to the thread (no copy) and handed back once hashed.
 * A thread keeps the process alive only while it owes an answer, so a transfer abandoned without
 * being closed never holds the process open. Where threads are unavailable the hash runs inline
 * with the same interface.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import * as workerThreads from "node:worker_threads";
import { OciError } from "../errors/oci_error.ts";

// CommonJS: the form `node:worker_threads` evaluates on every runtime that has it.
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const hashes = new Map();
parentPort.on("message", (data) => {
  const { id, op } = data;
  if (op === "update") {
    let hash = hashes.get(id);
    if (hash === undefined) {
      hash = createHash("sha256");
      hashes.set(id, hash);
    }
    hash.update(new Uint8Array(data.buffer, 0, data.length));
    parentPort.postMessage({ id, op: "recycle", buffer: data.buffer }, [data.buffer]);
  } else if (op === "reset" || op === "close") {
    hashes.delete(id);
  } else if (op === "digest") {
    const hash = hashes.get(id) ?? createHash("sha256");
    parentPort.postMessage({ id, op: "digest", digest: "sha256:" + hash.copy().digest("hex") });
  }
});
`;

/** A running hash whose updates take ownership of their buffer. */
export interface RunningHash {
  /**
   * Hashes the first `length` bytes of `buffer`, taking ownership of it: the buffer is given back
   * through the `onRecycle` callback once hashed and must not be touched until then.
   */
  update(buffer: ArrayBuffer, length: number): void;
  /** Forgets everything hashed so far. */
  reset(): void;
  /** `sha256:<hex>` of everything hashed so far (after every earlier update). */
  digest(): Promise<string>;
  /** Releases the hash; pending digests reject. */
  close(): void;
}

interface Entry {
  thread: Thread;
  onRecycle: (buffer: ArrayBuffer) => void;
  digests: { resolve: (d: string) => void; reject: (e: unknown) => void }[];
}

interface Thread {
  worker: workerThreads.Worker;
  /** Answers the thread still owes (recycled buffers and digests). */
  owed: number;
  /** Running hashes bound to the thread. */
  hashes: number;
}

/**
 * A small set of hashing threads, started one at a time as concurrent hashes need them: `open()`
 * binds a running hash to an idle thread, starts another while fewer than `count` run, and
 * otherwise shares the least busy one.
 *
 * @example Hashing on a thread
 * ```ts
 * import { Sha256Threads } from "./sha256_threads.ts";
 * const threads = new Sha256Threads(1);
 * const hash = threads.open(() => {});
 * hash.update(new TextEncoder().encode("abc").buffer, 3);
 * console.log(await hash.digest());
 * // "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 * threads.close();
 * ```
 */
export class Sha256Threads {
  readonly #threads: Thread[] = [];
  readonly #count: number;
  #closed = false;
  #unavailable = false;
  readonly #entries = new Map<number, Entry>();
  #nextId = 0;
  #failed: unknown = undefined;

  /**
   * At most `count` threads, each started when first needed (none where unavailable); `0`
   * hashes on this thread.
   */
  constructor(count: number) {
    this.#count = Math.max(1, count);
    this.#unavailable = count === 0;
  }

  #pick(): Thread | undefined {
    let least: Thread | undefined;
    for (const thread of this.#threads) {
      if (least === undefined || thread.hashes < least.hashes) least = thread;
    }
    if (least?.hashes === 0 || this.#threads.length >= this.#count) return least;
    if (this.#closed || this.#unavailable) return least;
    const worker = createWorker();
    if (worker === undefined) {
      this.#unavailable = true;
      return least;
    }
    const thread: Thread = { worker, owed: 0, hashes: 0 };
    worker.on("message", (data) => this.#receive(thread, data));
    worker.on("error", () => {
      this.#fail(new OciError("hashing thread failed", { retryable: false }));
    });
    worker.unref();
    this.#threads.push(thread);
    return thread;
  }

  /** A running hash; `onRecycle` receives every buffer back once hashed. */
  open(onRecycle: (buffer: ArrayBuffer) => void): RunningHash {
    const thread = this.#pick();
    if (thread === undefined) return inlineHash(onRecycle);
    thread.hashes++;
    const id = this.#nextId++;
    const entry: Entry = { thread, onRecycle, digests: [] };
    this.#entries.set(id, entry);
    return {
      update: (buffer, length) => {
        owe(thread, 1);
        thread.worker.postMessage({ id, op: "update", buffer, length }, [buffer]);
      },
      reset: () => thread.worker.postMessage({ id, op: "reset" }),
      digest: () => {
        if (this.#failed !== undefined) return Promise.reject(this.#failed);
        return new Promise((resolve, reject) => {
          entry.digests.push({ resolve, reject });
          owe(thread, 1);
          thread.worker.postMessage({ id, op: "digest" });
        });
      },
      close: () => {
        if (!this.#entries.delete(id)) return;
        thread.hashes--;
        thread.worker.postMessage({ id, op: "close" });
        for (const d of entry.digests.splice(0)) {
          d.reject(new OciError("hash closed", { retryable: false }));
        }
      },
    };
  }

  /** Terminates the threads; pending digests reject. */
  close(): void {
    this.#closed = true;
    for (const { worker } of this.#threads) worker.terminate().catch(() => {});
    this.#threads.length = 0;
    this.#fail(new OciError("hashing stopped", { retryable: false }));
  }

  #receive(
    thread: Thread,
    data: { id: number; op: string; buffer?: ArrayBuffer; digest?: string },
  ): void {
    owe(thread, -1);
    const entry = this.#entries.get(data.id);
    if (entry === undefined) return;
    if (data.op === "recycle") entry.onRecycle(data.buffer!);
    else if (data.op === "digest") entry.digests.shift()?.resolve(data.digest!);
  }

  #fail(err: unknown): void {
    this.#failed ??= err;
    for (const entry of this.#entries.values()) {
      for (const d of entry.digests.splice(0)) d.reject(err);
    }
  }
}

/** Holds the process open exactly while the thread owes an answer. */
function owe(thread: Thread, delta: number): void {
  const before = thread.owed;
  thread.owed = Math.max(0, before + delta);
  if (before === 0 && thread.owed > 0) thread.worker.ref();
  else if (before > 0 && thread.owed === 0) thread.worker.unref();
}

function createWorker(): workerThreads.Worker | undefined {
  if (typeof workerThreads.Worker !== "function") return undefined;
  try {
    return new workerThreads.Worker(WORKER_SOURCE, { eval: true });
  } catch {
    return undefined;
  }
}

function inlineHash(onRecycle: (buffer: ArrayBuffer) => void): RunningHash {
  let hash: Hash = createHash("sha256");
  return {
    update(buffer, length) {
      hash.update(new Uint8Array(buffer, 0, length));
      queueMicrotask(() => onRecycle(buffer));
    },
    reset() {
      hash = createHash("sha256");
    },
    digest: () => Promise.resolve(`sha256:${hash.copy().digest("hex")}`),
    close() {},
  };
}
