/**
 * Running sha256 hashes computed on Web Worker threads, so a download's receiving, writing and
 * hashing use separate cores. Buffers are transferred to the worker (no copy) and handed back
 * once hashed. Where Workers are unavailable the hash runs inline with the same interface.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { OciError } from "../errors/oci_error.ts";

const WORKER_SOURCE = `
import { createHash } from "node:crypto";
const hashes = new Map();
self.onmessage = ({ data }) => {
  const { id, op } = data;
  if (op === "update") {
    let hash = hashes.get(id);
    if (hash === undefined) {
      hash = createHash("sha256");
      hashes.set(id, hash);
    }
    hash.update(new Uint8Array(data.buffer, 0, data.length));
    self.postMessage({ id, op: "recycle", buffer: data.buffer }, [data.buffer]);
  } else if (op === "reset" || op === "close") {
    hashes.delete(id);
  } else if (op === "digest") {
    const hash = hashes.get(id) ?? createHash("sha256");
    self.postMessage({ id, op: "digest", digest: "sha256:" + hash.copy().digest("hex") });
  }
};
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
  onRecycle: (buffer: ArrayBuffer) => void;
  digests: { resolve: (d: string) => void; reject: (e: unknown) => void }[];
}

let workerUrl: string | undefined;

/**
 * A small set of hashing threads; `open()` gives a running hash bound to one of them (round
 * robin), so many downloads share a few threads.
 *
 * @example
 * ```ts ignore
 * import { HashThreads } from "./hash_offload.ts";
 * const threads = new HashThreads(1);
 * const hash = threads.open(() => {});
 * const buffer = new TextEncoder().encode("abc").buffer;
 * hash.update(buffer, 3);
 * console.log(await hash.digest());
 * threads.close();
 * ```
 */
export class HashThreads {
  readonly #workers: Worker[] = [];
  readonly #count: number;
  #started = false;
  readonly #entries = new Map<number, Entry>();
  #next = 0;
  #nextId = 0;
  #failed: unknown = undefined;

  /** Creates up to `count` threads, on first use (none where Workers are unavailable). */
  constructor(count: number) {
    this.#count = Math.max(1, count);
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    for (let i = 0; i < this.#count; i++) {
      const worker = createWorker();
      if (worker === undefined) break;
      worker.onmessage = (event: MessageEvent) => this.#receive(event.data);
      worker.onerror = (event: Event) => {
        event.preventDefault();
        this.#fail(new OciError("hashing thread failed", { retryable: false }));
      };
      this.#workers.push(worker);
    }
  }

  /** A running hash; `onRecycle` receives every buffer back once hashed. */
  open(onRecycle: (buffer: ArrayBuffer) => void): RunningHash {
    this.#start();
    if (this.#workers.length === 0) return inlineHash(onRecycle);
    const worker = this.#workers[this.#next++ % this.#workers.length]!;
    const id = this.#nextId++;
    const entry: Entry = { onRecycle, digests: [] };
    this.#entries.set(id, entry);
    return {
      update: (buffer, length) => {
        worker.postMessage({ id, op: "update", buffer, length }, [buffer]);
      },
      reset: () => worker.postMessage({ id, op: "reset" }),
      digest: () => {
        if (this.#failed !== undefined) return Promise.reject(this.#failed);
        return new Promise((resolve, reject) => {
          entry.digests.push({ resolve, reject });
          worker.postMessage({ id, op: "digest" });
        });
      },
      close: () => {
        worker.postMessage({ id, op: "close" });
        this.#entries.delete(id);
        for (const d of entry.digests.splice(0)) {
          d.reject(new OciError("hash closed", { retryable: false }));
        }
      },
    };
  }

  /** Terminates the threads. */
  close(): void {
    this.#started = true;
    for (const worker of this.#workers) worker.terminate();
    this.#workers.length = 0;
    this.#fail(new OciError("hashing stopped", { retryable: false }));
  }

  #receive(data: { id: number; op: string; buffer?: ArrayBuffer; digest?: string }): void {
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

function createWorker(): Worker | undefined {
  if (typeof globalThis.Worker !== "function") return undefined;
  try {
    workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    return new Worker(workerUrl, { type: "module" });
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
