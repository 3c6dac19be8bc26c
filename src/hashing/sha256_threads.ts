/**
 * The one pool of hashing threads both libraries use: running sha256 hashes (so receiving,
 * writing and hashing a download use separate cores), file ranges (a push's part digests, a
 * pull's resume pass), and file hashes fed range by range (a push's whole-file digest, which
 * other ranges may overtake between its pieces). Threads start one at a time, only when work
 * needs them. Buffers are transferred to a thread (no copy) and handed back once hashed. A
 * thread keeps the process alive only while it owes an answer, so a transfer abandoned without
 * being closed never holds the process open. An abort drops queued ranges without starting a
 * thread and tells a running one to stop at its next read. Where threads are unavailable the work
 * runs inline with the same interface.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import * as workerThreads from "node:worker_threads";
import { LocalFileError } from "../errors/kinds.ts";
import { OciError } from "../errors/oci_error.ts";
import {
  hashRangeInline,
  hashRangeInto,
  type InlineRangeScan,
  scanRangeInline,
  ShortFileError,
} from "./hash_range.ts";
import { HASH_WORKER_SOURCE } from "./hash_worker_source.ts";

/**
 * How many hashing threads a transfer may use by default: one per core (the runtime's count, 2
 * where it gives none). The one default of both clients.
 *
 * @example
 * ```ts
 * import { coreCount } from "./sha256_threads.ts";
 * console.log(coreCount() >= 1); // true
 * ```
 */
export function coreCount(): number {
  return globalThis.navigator?.hardwareConcurrency ?? 2;
}

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

/**
 * A running hash fed with file ranges, hashed in order on one thread; the queued ranges of other
 * work can run between its pieces.
 */
export interface FileHash {
  /** Queues `size` bytes of the file at `path` from `offset`, after every earlier piece. */
  add(path: string, offset: number, size: number, signal?: AbortSignal): Promise<void>;
  /**
   * From now on, queued ranges of other work run before this hash's remaining pieces (until
   * then its pieces go first on its thread).
   */
  defer(): void;
  /** `sha256:<hex>` of every piece added; rejects when one failed. */
  digest(): Promise<string>;
  /** Releases the hash. */
  close(): void;
}

/**
 * A hashed file range and its written prefix (see `scanWrittenPrefix`): the bytes from the
 * range's start to the first all-zero block, without the zeros that end the block before.
 */
export interface RangeScan {
  /** `sha256:<hex>` of the whole range. */
  readonly digest: string;
  /** Bytes of the written prefix. */
  readonly prefix: number;
  /**
   * The running hash of exactly the prefix, to continue with the bytes after it (at most once;
   * `onRecycle` as for `open`). It lives where the range was hashed.
   */
  continueHash(onRecycle: (buffer: ArrayBuffer) => void): RunningHash;
  /** Drops the prefix's hash when it is not continued. */
  release(): void;
}

/** Where a scanned range left its prefix's hash: on a thread, or inline. */
interface ScanHolder {
  /** The running-hash id the thread keeps the prefix's hash under. */
  readonly fork: number;
  prefix?: number;
  thread?: Thread;
  inline?: InlineRangeScan;
}

interface Entry {
  thread: Thread;
  onRecycle: (buffer: ArrayBuffer) => void;
  digests: { resolve: (d: string) => void; reject: (e: unknown) => void }[];
}

interface RangeJob {
  id: number;
  path: string;
  offset: number;
  size: number;
  signal: AbortSignal | undefined;
  resolve: (digest: string) => void;
  reject: (err: unknown) => void;
  settled: boolean;
  onAbort: () => void;
  /** The thread a piece of a file hash must run on (its running hash lives there). */
  thread?: Thread;
  /** The running hash a piece feeds, instead of answering a digest of its own. */
  into?: number;
  /** Higher runs first; equal ranks run in submission order. */
  rank: () => number;
  /** Told the byte count of each read hashed, as the range runs. */
  onBytes?: (bytes: number) => void;
  /** A scan for the written prefix, whose outcome lands here. */
  scan?: ScanHolder;
}

interface Thread {
  worker: workerThreads.Worker;
  /** Answers the thread still owes (recycled buffers, digests, ranges). */
  owed: number;
  /** Running hashes bound to the thread. */
  hashes: number;
  /** The range the thread is reading, until it answers (a thread reads one range at a time). */
  range: RangeJob | undefined;
}

interface RangeAnswer {
  id: number;
  bytes?: number;
  digest?: string;
  prefix?: number;
  fork?: number;
  error?: string;
  code?: string;
  cancelled?: boolean;
}

const stopped = () => new LocalFileError("local file: hashing stopped");

/**
 * A small set of hashing threads, started one at a time as work needs them. `open()` binds a
 * running hash to an idle thread, starts another while fewer than `count` run, and otherwise
 * shares the least busy one. `hashRange()` queues a file range; ranges run in submission order,
 * one per thread at a time.
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
  readonly #queue: RangeJob[] = [];
  /** Queued pieces of file hashes, in order (each runs only on its hash's thread). */
  readonly #pinned: RangeJob[] = [];
  readonly #ranges = new Map<number, RangeJob>();
  /** The running hashes `open` bound to a thread, with their ids there. */
  readonly #bound = new WeakMap<RunningHash, { id: number; thread: Thread }>();
  #nextId = 0;
  #failed: unknown = undefined;

  readonly #inlineRunning: boolean;

  /**
   * At most `count` threads, each started when first needed (none where unavailable); `0`
   * hashes on this thread. With `inlineRunning`, running hashes (`open`) are computed on this
   * thread all the same, and only file ranges go to threads.
   */
  constructor(count: number, options: { inlineRunning?: boolean } = {}) {
    this.#count = Math.max(1, count);
    this.#unavailable = count === 0;
    this.#inlineRunning = options.inlineRunning === true || count === 0;
  }

  /** Whether every hash runs on the calling thread (no thread is started, or can be). */
  get inlineOnly(): boolean {
    return this.#unavailable && this.#threads.length === 0;
  }

  /** Whether running hashes are computed on threads (their buffers are then held longer). */
  get threadedRunning(): boolean {
    return !this.#inlineRunning;
  }

  // Inline, file ranges are hashed one at a time in the order asked, as one thread's queue
  // would: a push's part digests arrive part after part (not all at the end of one interleaved
  // pass), and a verify or resume pass hashes one part at a time.
  #inlineTurn: Promise<void> = Promise.resolve();

  /** Runs `work` on this thread once the inline work asked before it has ended. */
  #inline<T>(signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    const previous = this.#inlineTurn;
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    this.#inlineTurn = previous.then(() => mine);
    return (async () => {
      try {
        await turnOrAbort(previous, signal);
        if (this.#closed) throw stopped();
        return await work();
      } finally {
        done();
      }
    })();
  }

  /**
   * A running hash; `onRecycle` receives every buffer back once hashed. With `alongside` (a hash
   * `open` returned), every update also feeds `alongside`, where it lives: one hand-over and one
   * pass through the cache for two digests of the same bytes (a part's and its file's).
   */
  open(onRecycle: (buffer: ArrayBuffer) => void, alongside?: RunningHash): RunningHash {
    if (alongside !== undefined) {
      const bound = this.#bound.get(alongside);
      if (bound !== undefined) {
        return this.#bind(this.#nextId++, bound.thread, onRecycle, bound.id);
      }
      const other = inlineHashes.get(alongside);
      if (other === undefined) throw new TypeError("open: alongside is not a hash open returned");
      return inlineHash(onRecycle, createHash("sha256"), other);
    }
    if (this.#inlineRunning) return inlineHash(onRecycle);
    const least = this.#leastBusy(this.#threads);
    const thread = least?.hashes === 0 ? least : this.#start() ?? least;
    if (thread === undefined) return inlineHash(onRecycle);
    return this.#bind(this.#nextId++, thread, onRecycle);
  }

  /**
   * The running hash `id` on `thread` (created there by its first message); its updates also
   * feed the hash `also` there, when given.
   */
  #bind(
    id: number,
    thread: Thread,
    onRecycle: (buffer: ArrayBuffer) => void,
    also?: number,
  ): RunningHash {
    thread.hashes++;
    const entry: Entry = { thread, onRecycle, digests: [] };
    this.#entries.set(id, entry);
    const hash: RunningHash = {
      update: (buffer, length) => {
        owe(thread, 1);
        thread.worker.postMessage({ id, op: "update", buffer, length, also }, [buffer]);
      },
      reset: () => thread.worker.postMessage({ id, op: "reset" }),
      digest: () => this.#digest(id, entry),
      close: () => this.#close(id, entry),
    };
    this.#bound.set(hash, { id, thread });
    return hash;
  }

  /**
   * The sha256 digest (`sha256:<hex>`) of `size` bytes of the file at `path` from `offset`.
   * `onBytes`, when given, is told the byte count of each read as it is hashed (progress of a
   * long range). Rejects with `ShortFileError` when the file ends first, `LocalFileError` when it
   * cannot be read, and the signal's reason on abort (at once, queued or running).
   */
  hashRange(
    path: string,
    offset: number,
    size: number,
    signal?: AbortSignal,
    onBytes?: (bytes: number) => void,
  ): Promise<string> {
    if (this.#unavailable && this.#threads.length === 0) {
      return this.#inline(signal, () => hashRangeInline(path, offset, size, signal, onBytes));
    }
    return this.#enqueue({ path, offset, size, signal, rank: () => 0, onBytes });
  }

  /**
   * Hashes a range as {@linkcode hashRange} does and, in the same read, finds its written prefix
   * and keeps that prefix's running hash (see {@linkcode RangeScan}): a download continues a
   * part from the bytes an interrupted one wrote.
   */
  async scanRange(
    path: string,
    offset: number,
    size: number,
    signal?: AbortSignal,
  ): Promise<RangeScan> {
    if (this.#unavailable && this.#threads.length === 0) {
      return inlineScan(
        await this.#inline(signal, () => scanRangeInline(path, offset, size, signal)),
      );
    }
    const scan: ScanHolder = { fork: this.#nextId++ };
    const digest = await this.#enqueue({ path, offset, size, signal, rank: () => 0, scan });
    if (scan.inline !== undefined) return inlineScan(scan.inline);
    const thread = scan.thread!;
    let taken = false;
    return {
      digest,
      prefix: scan.prefix!,
      continueHash: (onRecycle) => {
        if (taken) throw new TypeError("scanRange: the prefix's hash was already taken");
        taken = true;
        return this.#bind(scan.fork, thread, onRecycle);
      },
      release: () => {
        if (taken) return;
        taken = true;
        thread.worker.postMessage({ id: scan.fork, op: "close" });
      },
    };
  }

  /**
   * A {@linkcode FileHash} on a thread of its own where one can start (else the least busy one;
   * on this thread where none can), whose pieces run before other queued ranges until
   * `defer()`: a push hashes the whole file this way and lets part digests overtake it once
   * parts are being uploaded.
   */
  openFileHash(): FileHash {
    const thread = this.#start() ?? this.#leastBusy(this.#threads);
    if (thread === undefined) return inlineFileHash((signal, work) => this.#inline(signal, work));
    thread.hashes++;
    const id = this.#nextId++;
    const entry: Entry = { thread, onRecycle: () => {}, digests: [] };
    this.#entries.set(id, entry);
    let rank = 1;
    let last: Promise<unknown> = Promise.resolve();
    let failure: { error: unknown } | undefined;
    return {
      add: (path, offset, size, signal) => {
        const piece = this.#enqueue({
          path,
          offset,
          size,
          signal,
          thread,
          into: id,
          rank: () => rank,
        });
        last = piece;
        piece.catch((error) => failure ??= { error });
        return piece.then(() => {});
      },
      defer: () => {
        rank = -1;
        this.#pump();
      },
      digest: async () => {
        await last.catch(() => {});
        if (failure !== undefined) throw failure.error;
        return await this.#digest(id, entry);
      },
      close: () => this.#close(id, entry),
    };
  }

  /** Asks the thread of a running hash for its digest (after every earlier message). */
  #digest(id: number, entry: Entry): Promise<string> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      entry.digests.push({ resolve, reject });
      owe(entry.thread, 1);
      entry.thread.worker.postMessage({ id, op: "digest" });
    });
  }

  /** Releases a running hash on its thread; its pending digests reject. */
  #close(id: number, entry: Entry): void {
    if (!this.#entries.delete(id)) return;
    entry.thread.hashes--;
    entry.thread.worker.postMessage({ id, op: "close" });
    for (const d of entry.digests.splice(0)) {
      d.reject(new OciError("hash closed", { retryable: false }));
    }
  }

  #enqueue(
    work: Pick<
      RangeJob,
      "path" | "offset" | "size" | "signal" | "thread" | "into" | "rank" | "onBytes" | "scan"
    >,
  ): Promise<string> {
    const { signal } = work;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#closed) return Promise.reject(stopped());
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    return new Promise<string>((resolve, reject) => {
      const job: RangeJob = {
        ...work,
        id: this.#nextId++,
        resolve,
        reject,
        settled: false,
        onAbort: () => this.#abortRange(job),
      };
      signal?.addEventListener("abort", job.onAbort, { once: true });
      (job.thread === undefined ? this.#queue : this.#pinned).push(job);
      this.#pump();
    });
  }

  /** Terminates the threads; pending digests and ranges reject. */
  close(): void {
    this.#closed = true;
    for (const { worker } of this.#threads) worker.terminate().catch(() => {});
    this.#threads.length = 0;
    for (const job of [...this.#queue.splice(0), ...this.#pinned.splice(0)]) {
      settle(job, stopped());
    }
    for (const job of this.#ranges.values()) settle(job, stopped());
    this.#ranges.clear();
    this.#fail(new OciError("hashing stopped", { retryable: false }));
  }

  #leastBusy(threads: readonly Thread[]): Thread | undefined {
    let least: Thread | undefined;
    for (const thread of threads) {
      if (least === undefined || thread.hashes < least.hashes) least = thread;
    }
    return least;
  }

  /** Starts one more thread while fewer than `count` run; undefined when none can start. */
  #start(): Thread | undefined {
    if (this.#threads.length >= this.#count || this.#closed || this.#unavailable) return undefined;
    const worker = createWorker();
    if (worker === undefined) {
      this.#unavailable = true;
      return undefined;
    }
    const thread: Thread = { worker, owed: 0, hashes: 0, range: undefined };
    worker.on("message", (data) => this.#receive(thread, data));
    worker.on("error", () => {
      // A dead thread answers nothing: forget it, so nothing more is sent to it.
      this.#threads.splice(this.#threads.indexOf(thread), 1);
      this.#fail(new OciError("hashing thread failed", { retryable: false }));
    });
    worker.unref();
    this.#threads.push(thread);
    return thread;
  }

  /** Hands queued ranges to threads free of one, starting threads only for live work. */
  #pump(): void {
    for (;;) {
      const pick = this.#pick();
      if (pick === undefined) {
        if (this.#threads.length === 0 && this.#queue.length > 0) this.#runInline();
        return;
      }
      const { job, thread } = pick;
      thread.range = job;
      this.#ranges.set(job.id, job);
      owe(thread, 1);
      const { id, path, offset, size, into } = job;
      const report = job.onBytes !== undefined;
      const fork = job.scan?.fork;
      thread.worker.postMessage({ id, op: "range", path, offset, size, into, fork, report });
    }
  }

  /**
   * The queued range to run now and its thread: the first piece of a file hash whose thread is
   * free when it ranks above other work (or nothing else can run), else the oldest other range;
   * undefined when none can run.
   */
  #pick(): { job: RangeJob; thread: Thread } | undefined {
    // Only the head matters for the queue; a settled range further back is dropped on its turn.
    while (this.#queue[0]?.settled) this.#queue.shift();
    dropSettled(this.#pinned);
    const free = this.#threads.filter((t) => t.range === undefined);
    const canStart = this.#threads.length < this.#count && !this.#closed && !this.#unavailable;
    const piece = this.#pinned.find((job) => free.includes(job.thread!));
    const plain = free.length > 0 || canStart ? this.#queue[0] : undefined;
    if (piece !== undefined && (plain === undefined || piece.rank() > plain.rank())) {
      this.#pinned.splice(this.#pinned.indexOf(piece), 1);
      return { job: piece, thread: piece.thread! };
    }
    if (plain === undefined) return undefined;
    const thread = this.#leastBusy(free) ?? this.#start();
    if (thread === undefined) return undefined;
    this.#queue.shift();
    return { job: plain, thread };
  }

  #abortRange(job: RangeJob): void {
    if (job.settled) return;
    settle(job, job.signal?.reason);
    const thread = this.#threads.find((t) => t.range === job);
    thread?.worker.postMessage({ id: job.id, op: "cancel" });
  }

  #runInline(): void {
    for (const job of this.#queue.splice(0)) {
      if (job.settled) continue;
      const { path, offset, size, signal, scan } = job;
      const hashed = scan === undefined
        ? hashRangeInline(path, offset, size, signal, job.onBytes)
        : scanRangeInline(path, offset, size, signal).then((found) => {
          scan.inline = found;
          return found.digest;
        });
      hashed.then((digest) => settle(job, undefined, digest), (err) => settle(job, err));
    }
  }

  #receive(thread: Thread, data: { id: number; op: string } & Record<string, unknown>): void {
    if (data.op === "hashed") {
      // Progress of a running range: owes no answer.
      const job = this.#ranges.get(data.id);
      if (job !== undefined && !job.settled) job.onBytes?.(data.bytes as number);
      return;
    }
    owe(thread, -1);
    if (data.op === "range") {
      this.#receiveRange(thread, data as RangeAnswer);
      return;
    }
    const entry = this.#entries.get(data.id);
    if (entry === undefined) return;
    if (data.op === "recycle") entry.onRecycle(data.buffer as ArrayBuffer);
    else if (data.op === "digest") entry.digests.shift()?.resolve(data.digest as string);
  }

  #receiveRange(thread: Thread, data: RangeAnswer): void {
    if (thread.range?.id === data.id) thread.range = undefined;
    const job = this.#ranges.get(data.id);
    this.#ranges.delete(data.id);
    if (data.fork !== undefined) {
      // A prefix's hash nobody waits for any more is dropped at once.
      if (job?.scan === undefined || job.settled) {
        thread.worker.postMessage({ id: data.fork, op: "close" });
      } else {
        job.scan.prefix = data.prefix;
        job.scan.thread = thread;
      }
    }
    if (job !== undefined) {
      if (data.digest !== undefined) settle(job, undefined, data.digest);
      else if (data.error === "short") settle(job, new ShortFileError());
      else {
        const cause = Object.assign(new Error(data.code ?? ""), { code: data.code });
        settle(job, new LocalFileError("local file: read failed", { cause }));
      }
    }
    this.#pump();
  }

  #fail(err: unknown): void {
    this.#failed ??= err;
    for (const entry of this.#entries.values()) {
      for (const d of entry.digests.splice(0)) d.reject(err);
    }
    const queued = [...this.#queue.splice(0), ...this.#pinned.splice(0)];
    for (const job of [...this.#ranges.values(), ...queued]) settle(job, err);
    this.#ranges.clear();
  }
}

/** Removes ranges already settled (aborted while queued). */
function dropSettled(queue: RangeJob[]): void {
  for (let i = queue.length - 1; i >= 0; i--) if (queue[i].settled) queue.splice(i, 1);
}

/** Settles a range once: with `err` when given, else with `digest`. */
function settle(job: RangeJob, err: unknown, digest?: string): void {
  if (job.settled) return;
  job.settled = true;
  job.signal?.removeEventListener("abort", job.onAbort);
  if (digest !== undefined) job.resolve(digest);
  else job.reject(err);
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
    // The thread needs no environment: an empty one, so a process allowed to read only a few
    // variables (`--allow-env=HOME,…`) starts it without asking for the rest.
    return new workerThreads.Worker(HASH_WORKER_SOURCE, { eval: true, env: {} });
  } catch {
    return undefined;
  }
}

/** Runs file-range work on this thread in its turn (see `Sha256Threads`). */
type InlineLane = <T>(signal: AbortSignal | undefined, work: () => Promise<T>) => Promise<T>;

function inlineFileHash(lane: InlineLane): FileHash {
  const hash = createHash("sha256");
  let last: Promise<void> = Promise.resolve();
  return {
    add(path, offset, size, signal) {
      last = last.then(() => lane(signal, () => hashRangeInto(hash, path, offset, size, signal)));
      return last;
    },
    defer() {},
    digest: async () => {
      await last;
      return `sha256:${hash.copy().digest("hex")}`;
    },
    close() {},
  };
}

/** A scan made on this thread, with its prefix's hash continued here too. */
function inlineScan(found: InlineRangeScan): RangeScan {
  let taken = false;
  return {
    digest: found.digest,
    prefix: found.prefix,
    continueHash: (onRecycle) => {
      if (taken) throw new TypeError("scanRange: the prefix's hash was already taken");
      taken = true;
      return inlineHash(onRecycle, found.prefixHash);
    },
    release: () => {
      taken = true;
    },
  };
}

/** The hash state of each running hash computed on this thread (for `open`'s `alongside`). */
const inlineHashes = new WeakMap<RunningHash, () => Hash>();

function inlineHash(
  onRecycle: (buffer: ArrayBuffer) => void,
  initial: Hash = createHash("sha256"),
  alongside?: () => Hash,
): RunningHash {
  let hash: Hash = initial;
  const running: RunningHash = {
    update(buffer, length) {
      const bytes = new Uint8Array(buffer, 0, length);
      hash.update(bytes);
      alongside?.().update(bytes);
      queueMicrotask(() => onRecycle(buffer));
    },
    reset() {
      hash = createHash("sha256");
    },
    digest: () => Promise.resolve(`sha256:${hash.copy().digest("hex")}`),
    close() {},
  };
  inlineHashes.set(running, () => hash);
  return running;
}

/** `turn`, or the signal's reason at once when it aborts first. */
function turnOrAbort(turn: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return turn;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    turn.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}
