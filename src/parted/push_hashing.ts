/**
 * Where a push's digests are computed, and in what order: each part's digest (the blob the
 * registry stores) and the whole file's (the manifest's annotation).
 *
 * - **Threads from the start** (a core slower than the inline rate, or `hashThreads` set): the
 *   file digest goes first on one thread and the parts, in file order, on the others. Once a
 *   part must be uploaded (`uploading()`), the part digests take every thread and the file digest
 *   resumes after them, so the last part's upload starts after half a pass instead of a whole one:
 *   what a push on a link capped per connection waits for.
 * - **On the calling thread first** (the default on a fast core): one core hashes both digests
 *   faster than a registry takes the parts, so threads would cost a second runtime each (about 15
 *   MiB) and buy no time. Parts are hashed one at a time, in file order. The file digest rides
 *   along, taking the bytes of the part being read: one read of the file for both digests (each
 *   read of a gigabyte from the page cache costs about 0.16 CPU-s). Only while the parts'
 *   hashing is ahead of the uploads (the caller says when: for a push, no worker waits for a part
 *   and one is ready for the next worker that frees): the second pass would otherwise hold an
 *   upload back (riding from the first part cost a link capped per connection 0.5 s of a 6.9 s
 *   push), so a ride stops at the next read once the uploads catch up. Fallen behind, the file
 *   digest catches up between parts, in pieces, under the same rule, and reads alone what it still
 *   lacks after the last part. The reads are saved where uploads are slower than one core's
 *   hashing (more parts than workers on a capped or distant registry). Where threads could take
 *   the parts (more than one core, a file of 16 MiB or more), the second part waits, at most a
 *   second, for the registry to say whether it has the first (the file digest catches up
 *   meanwhile). Present (`present()`: a re-push, or a resumed one): hashing is what
 *   the push waits for, so the parts left move to `hashThreads - 1` threads and the file digest
 *   goes on here, beside them.
 *
 * A file under 16 MiB hashes on the calling thread whatever the setting.
 *
 * @module
 */
import type { FileHash, Sha256Threads } from "../hashing/sha256_threads.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { planParts } from "./plan.ts";
import { abortable } from "../transport/abortable.ts";
import { hashingFor, threadsFor, type TransferJob } from "./transfer_job.ts";
import { deferred } from "../transport/deferred.ts";
import { createHash, type Hash } from "node:crypto";
import { hashRangeInto } from "../hashing/hash_range.ts";

/** Pieces of the whole-file digest: part digests can overtake it between two pieces. */
const WHOLE_PIECE_BYTES = 64 * 1024 * 1024;

/**
 * Pieces of the calling thread's whole-file digest catching up between parts: a part's digest,
 * once wanted, waits at most one piece (about 10 ms) for it.
 */
const CATCH_UP_BYTES = 16 * 1024 * 1024;

/**
 * The longest the second part's hash waits for the registry's word on the first: a HEAD that
 * fails and is retried must not hold every other part back.
 */
const VERDICT_WAIT_MS = 1000;

/** What a push hashes. */
export interface PushHashSource {
  /** The source file. */
  path: string;
  /** Its size in bytes, as planned. */
  size: number;
  /** Its parts. */
  plan: ReturnType<typeof planParts>;
}

/**
 * The hashing of one push's file; see the module documentation. `run()` hands each part's
 * digest on in file order and resolves to the file's digest. The caller tells it what the
 * registry said of each part (`uploading()` before sending one, `present()` for one it holds);
 * without a word on the first part, the second waits a second.
 *
 * @example
 * ```ts ignore
 * const hashing = new PushHashing(job, { path, size, plan }, signal);
 * const fileDigest = await hashing.run((part) => {
 *   queue.push(part); // a worker asks the registry, then calls uploading() or present()
 * });
 * hashing.close();
 * ```
 */
export class PushHashing {
  readonly #source: PushHashSource;
  readonly #signal: AbortSignal;
  readonly #first: Sha256Threads;
  /** Where part digests run now. */
  #parts: Sha256Threads;
  /**
   * The threads parts move to once hashing is what the push waits for; none when there is none to
   * move to, or the parts left are all asked for.
   */
  #later: (() => Sha256Threads) | undefined;
  #moved: Sha256Threads | undefined;
  /**
   * The whole-file digest on threads; none for a single part, whose digest is the file's, nor
   * when it is hashed on this thread (`#along`).
   */
  readonly #whole: FileHash | undefined;
  /** The whole-file digest on this thread: its running hash and the bytes it has taken. */
  readonly #along: { hash: Hash; at: number } | undefined;
  /** Ends at the first part found missing or present. */
  readonly #firstVerdict = deferred<void>();

  /** Hashing for `source`, stopped by `signal`; threads as `job` allows. */
  constructor(job: TransferJob, source: PushHashSource, signal: AbortSignal) {
    this.#source = source;
    this.#signal = signal;
    const split = source.plan.length > 1;
    this.#first = hashingFor(job, source.size, split ? 2 : 1, "push");
    this.#parts = this.#first;
    // Inline first: the file digest keeps this thread; parts may move to the other cores.
    const spare = threadsFor(source.size, job.hashThreads - 1);
    this.#later = this.#first.inlineOnly && split && spare > 0
      ? () => hashingFor(job, source.size, spare)
      : undefined;
    const here = split && this.#first.inlineOnly;
    this.#along = here ? { hash: createHash("sha256"), at: 0 } : undefined;
    this.#whole = split && !here ? this.#first.openFileHash() : undefined;
  }

  /**
   * Hashes the file: each part's digest goes to `onPart` in file order as soon as it is known;
   * resolves to the file's digest. `partWanted()` says whether a part's digest is wanted now
   * or soon (on this thread, the file digest then stays out of the way).
   */
  async run(
    onPart: (part: PartDescriptor) => void,
    partWanted: () => boolean = () => true,
  ): Promise<string> {
    const whole = this.#whole === undefined ? undefined : this.#hashWhole(this.#whole);
    whole?.catch(() => {});
    const here = await this.#hashPartsHere(onPart, partWanted);
    // What the file digest on this thread still lacks, beside the parts left on threads.
    const along = this.#along === undefined ? undefined : this.#finishAlong(this.#along);
    along?.catch(() => {});
    const digests = await this.#hashPartsLeft(here, onPart);
    if (along !== undefined) return await along;
    return whole === undefined ? digests[0] : await whole;
  }

  /** A part must be uploaded: from now on, part digests go before the file digest. */
  uploading(): void {
    this.#firstVerdict.resolve();
    this.#whole?.defer();
  }

  /** A part was present: the parts left move to threads, where threads may run. */
  present(): void {
    this.#firstVerdict.resolve();
    if (this.#later === undefined) return;
    this.#moved = this.#parts = this.#later();
    this.#later = undefined;
  }

  /** Stops the hashing and its threads. */
  close(): void {
    this.#whole?.close();
    this.#first.close();
    this.#moved?.close();
  }

  /**
   * The part digests in file order, one at a time while they run on this thread (so the parts
   * left can still move; after the first, until the registry said whether it has it).
   */
  async #hashPartsHere(
    onPart: (part: PartDescriptor) => void,
    partWanted: () => boolean,
  ): Promise<string[]> {
    const { path, plan } = this.#source;
    const digests: string[] = [];
    try {
      for (let next = 0; next < plan.length && this.#parts.inlineOnly; next++) {
        const part = plan[next];
        digests.push(
          this.#along === undefined
            ? await this.#parts.hashRange(path, part.offset, part.size, this.#signal)
            : await this.#hashPartAlong(this.#along, part, partWanted),
        );
        onPart({ ...part, digest: digests[next] });
        if (next === 0 && this.#later !== undefined) await this.#awaitFirstVerdict(part.size);
      }
    } finally {
      // Every part left is asked for next, where it runs now: nothing moves any more.
      this.#later = undefined;
    }
    return digests;
  }

  /** Every part after those in `digests` at once, which the threads take in order. */
  async #hashPartsLeft(
    digests: string[],
    onPart: (part: PartDescriptor) => void,
  ): Promise<string[]> {
    const { path, plan } = this.#source;
    const from = digests.length;
    const asked = plan.slice(from).map((part) =>
      this.#parts.hashRange(path, part.offset, part.size, this.#signal)
    );
    for (const p of asked) p.catch(() => {});
    for (const [i, digest] of asked.entries()) {
      digests.push(await digest);
      onPart({ ...plan[from + i], digest: digests[from + i] });
    }
    return digests;
  }

  /**
   * Waits for the registry's word on the first part (at most a second); no part is handed on
   * meanwhile, so the file digest on this thread catches up to `firstEnd`.
   */
  async #awaitFirstVerdict(firstEnd: number): Promise<void> {
    // Ended however the wait ends, so that its timer never outlives it.
    const waitOver = new AbortController();
    const verdict = withinVerdictWait(
      this.#firstVerdict.promise,
      AbortSignal.any([this.#signal, waitOver.signal]),
    );
    try {
      let heard = false;
      verdict.then(() => (heard = true), () => {});
      if (this.#along !== undefined) await this.#catchUp(this.#along, firstEnd, () => heard);
      await abortable(verdict, this.#signal);
    } finally {
      waitOver.abort();
    }
  }

  /**
   * One part's digest on this thread, the file digest (once it has caught up to the part) taking
   * the same bytes for as long as no part is wanted.
   */
  async #hashPartAlong(
    along: { hash: Hash; at: number },
    part: { offset: number; size: number },
    partWanted: () => boolean,
  ): Promise<string> {
    const { path } = this.#source;
    const signal = this.#signal;
    await this.#catchUp(along, part.offset, partWanted);
    const hash = createHash("sha256");
    let riding = along.at === part.offset;
    await hashRangeInto(
      {
        update(bytes: Uint8Array) {
          hash.update(bytes);
          riding &&= !partWanted();
          if (!riding) return;
          along.hash.update(bytes);
          along.at += bytes.byteLength;
        },
      },
      path,
      part.offset,
      part.size,
      signal,
    );
    return `sha256:${hash.digest("hex")}`;
  }

  /** Feeds the file digest on this thread up to `end`, piece by piece, until `stop()` says so. */
  async #catchUp(along: { hash: Hash; at: number }, end: number, stop: () => boolean) {
    while (along.at < end && !stop()) {
      const size = Math.min(CATCH_UP_BYTES, end - along.at);
      await hashRangeInto(along.hash, this.#source.path, along.at, size, this.#signal);
      along.at += size;
    }
  }

  /** The bytes the file digest on this thread still lacks, then its digest. */
  async #finishAlong(along: { hash: Hash; at: number }): Promise<string> {
    const { path, size } = this.#source;
    if (along.at < size) {
      await hashRangeInto(along.hash, path, along.at, size - along.at, this.#signal);
    }
    return `sha256:${along.hash.digest("hex")}`;
  }

  /**
   * Feeds the file to `whole` (on a thread) piece by piece, one piece queued behind the running
   * one, so that part digests can overtake it between two pieces once it is deferred.
   */
  async #hashWhole(whole: FileHash): Promise<string> {
    const { path, size } = this.#source;
    const signal = this.#signal;
    const queued: Promise<void>[] = [];
    for (let offset = 0; offset < size; offset += WHOLE_PIECE_BYTES) {
      const piece = whole.add(path, offset, Math.min(WHOLE_PIECE_BYTES, size - offset), signal);
      // A piece that fails while another is awaited must not surface as an unhandled rejection.
      piece.catch(() => {});
      queued.push(piece);
      if (queued.length > 1) await queued.shift();
    }
    await Promise.all(queued);
    return await whole.digest();
  }
}

/**
 * `verdict`, or the end of {@linkcode VERDICT_WAIT_MS}, whichever comes first; an abort clears
 * the timer, so a stopped push leaves none to hold the process.
 */
function withinVerdictWait(verdict: Promise<void>, signal: AbortSignal): Promise<void> {
  // Stopped already: no timer to start (its abort listener would never run).
  if (signal.aborted) return Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, VERDICT_WAIT_MS)));
  const stop = () => clearTimeout(timer);
  signal.addEventListener("abort", stop, { once: true });
  return Promise.race([verdict, waited]).finally(() => {
    stop();
    signal.removeEventListener("abort", stop);
  });
}
