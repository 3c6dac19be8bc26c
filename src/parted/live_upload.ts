/**
 * A part sent before its digest is known: an upload session PATCHed from a file as the part's
 * bytes are there, and committed with the part's digest once it is known. A push from a stream
 * sends the part being cut while it arrives; a push of a file sends parts while they are still
 * being hashed. Sent this way, a part's upload starts with its first bytes instead of after its
 * digest, which is what a link capped per connection waits for.
 *
 * It is a shortcut, never the only way: a session the registry refuses, a chunk it answers
 * wrongly, or any failure before the commit abandons the session, and the part is uploaded the
 * usual way (existence check, one PUT from its file, the retry budget). A part found present
 * once its digest is known is not committed: the chunk on its way is stopped, the session
 * abandoned, and the part counts as present.
 *
 * @module
 */
import type { RemoteRepository } from "../remote/repository.ts";
import {
  cancelUpload,
  completeUpload,
  openUpload,
  patchUpload,
  type UploadSession,
} from "../remote/uploads.ts";
import { fileBody } from "../transport/file_body.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { ProgressTracker } from "./progress.ts";
import { type Deferred, deferred } from "../transport/deferred.ts";

/**
 * Bytes a chunk waits for before it is sent (at least; the registry may ask for more), and the
 * size of a trial's first chunk.
 */
export const LIVE_CHUNK_BYTES: number = 16 << 20;

/**
 * Whether a part is sent before its digest is known: after a part the registry lacked (a
 * rerun, whose parts are present, sends nothing before asking), until a part is found present
 * or a session fails. For the part being cut from a stream (`wanted`), the first session is a
 * trial: no other starts before the registry has taken one of its chunks, so a registry without
 * chunked uploads is asked once. Parts already whole in a file (`wantedWhole`) all go at once,
 * each sending its first chunk alone until the registry has taken one. A push whose part size is
 * under two chunks never sends this way: a part's bytes arrive within about one chunk's time.
 *
 * @example
 * ```ts
 * import { LIVE_CHUNK_BYTES, LiveChoice } from "./live_upload.ts";
 * const choice = new LiveChoice(512 << 20);
 * choice.missing();
 * console.log(choice.wanted, new LiveChoice(LIVE_CHUNK_BYTES).wanted); // true false
 * choice.trying();
 * console.log(choice.wanted); // false: the trial's first chunk is not taken yet
 * choice.taken();
 * console.log(choice.wanted); // true
 * ```
 */
export class LiveChoice {
  readonly #partSizeFits: boolean;
  #missing = false;
  #refused = false;
  #trying = false;
  #taken = false;

  /** The choice of a push of parts of `partSize` bytes. */
  constructor(partSize: number) {
    this.#partSizeFits = partSize >= 2 * LIVE_CHUNK_BYTES;
  }

  /** Whether the part being cut should be sent now. */
  get wanted(): boolean {
    return this.#partSizeFits && this.#missing && !this.#refused &&
      (this.#taken || !this.#trying);
  }

  /**
   * Whether parts already whole in a file may be sent now, trial or not: a registry without
   * chunked uploads then gets one chunk from each part on its way (`offerWhole`), never a whole
   * part, and the waiting for a trial's answer costs no part its start.
   */
  get wantedWhole(): boolean {
    return this.#partSizeFits && this.#missing && !this.#refused;
  }

  /** Whether the registry took a chunk of this push (the trial is over). */
  get proven(): boolean {
    return this.#taken;
  }

  /** A session starts. */
  trying(): void {
    this.#trying = true;
  }

  /** The registry took a chunk. */
  taken(): void {
    this.#taken = true;
    this.#changed();
  }

  /** The registry lacked a part. */
  missing(): void {
    this.#missing = true;
    this.#changed();
  }

  /** The registry had a part: the next ones are asked for first again. */
  present(): void {
    this.#missing = false;
    // A trial that ended on a part found present proved nothing either way.
    if (!this.#taken) this.#trying = false;
    this.#changed();
  }

  /** A session failed: the rest of the push uploads the usual way. */
  refused(): void {
    this.#refused = true;
    this.#changed();
  }

  /** Resolves at the next change of the choice (for a part waiting for its digest). */
  changed(): Promise<void> {
    this.#change ??= deferred<void>();
    return this.#change.promise;
  }

  #change: Deferred<void> | undefined;

  #changed(): void {
    this.#change?.resolve();
    this.#change = undefined;
  }
}

/** What a part sent while it is cut needs. */
export interface LiveUploadContext {
  /** The registry operations of the target repository. */
  repo: RemoteRepository;
  /** The file holding the part. */
  path: string;
  /** Where the part starts in the file (default 0: a part file of its own). */
  offset?: number;
  /** The part's index. */
  index: number;
  /** Counts wire bytes and the bytes of the part's attempt. */
  progress: ProgressTracker;
  /** Stops every request of the session. */
  signal: AbortSignal;
  /** Called before the session is opened (e.g. to renew a token about to expire). */
  beforeUpload: (signal: AbortSignal) => Promise<void>;
  /**
   * Told when a chunk was taken, when the registry lacked the part, and when the session failed
   * (not when the signal stopped it).
   */
  choice: LiveChoice;
  /** Called when the registry turned out to lack the part (before the rest is sent). */
  onMissing?: () => void;
}

/** How a part sent while it was cut ended: committed, found present, or to upload again. */
export type LiveOutcome = "uploaded" | "exists" | "fallback";

/**
 * One part's session, fed with `offer` as its file grows and ended with `complete` (or
 * `abandon`). At most one request of it is on its way at a time.
 *
 * @example
 * ```ts ignore
 * import { LiveUpload } from "./live_upload.ts";
 * const live = new LiveUpload(context);
 * live.offer(32 << 20); // the part file holds 32 MiB: a chunk goes
 * const outcome = await live.complete(part); // "uploaded", "exists" or "fallback"
 * ```
 */
export class LiveUpload {
  readonly #context: LiveUploadContext;
  /** Stops the session's own requests when it is abandoned (a chunk on its way too). */
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #opened: Promise<void>;
  #session: UploadSession | undefined;
  #written = 0;
  /** Bytes of the part already in its file beyond those offered (a part of a file). */
  #whole = 0;
  #sent = 0;
  #sending: Promise<void> | undefined;
  #failed = false;
  /** No more chunks go on their own: the part is whole, or the session was given up. */
  #ended = false;
  #abandoned = false;

  /** Opens the session now; a refusal only leaves the part to the usual upload. */
  constructor(context: LiveUploadContext) {
    this.#context = context;
    this.#signal = AbortSignal.any([context.signal, this.#stop.signal]);
    context.choice.trying();
    this.#opened = this.#open();
  }

  /** The part's file now holds `written` bytes: sends them once a chunk's worth waits. */
  offer(written: number): void {
    this.#written = written;
    if (this.#sending !== undefined || this.#failed || this.#ended) return;
    if (this.#written - this.#sent < this.#chunkBytes()) return;
    this.#sending = this.#sendWritten().finally(() => {
      this.#sending = undefined;
      this.offer(Math.max(this.#written, this.#whole));
    });
  }

  /**
   * The whole part of `size` bytes is in the file already (a push of a file): sends it, the
   * trial's first chunk alone before the rest, so a registry without chunked uploads is sent one
   * chunk, not a part.
   */
  offerWhole(size: number): void {
    this.#whole = size;
    this.offer(this.#context.choice.proven ? size : Math.min(size, LIVE_CHUNK_BYTES));
  }

  /**
   * Commits the session once the part is whole (`part.size` bytes written, `part.digest`
   * known): asks the registry for the part first (a chunk may still be on its way), then sends
   * the bytes not sent yet and the digest. `"exists"` when the registry already has the part
   * (the session is abandoned, its chunk stopped), `"fallback"` when the session failed.
   * Rejects only with the signal's reason.
   */
  async complete(part: PartDescriptor): Promise<LiveOutcome> {
    const { repo, signal } = this.#context;
    this.#written = part.size;
    this.#ended = true;
    try {
      if (!this.#failed && await repo.exists(part.digest, signal)) {
        this.abandon();
        return "exists";
      }
    } catch {
      if (signal.aborted) throw signal.reason;
      this.#fail();
      return "fallback";
    }
    if (!this.#failed) {
      this.#context.choice.missing();
      this.#context.onMissing?.();
    }
    while (this.#sending !== undefined) await this.#sending;
    await this.#opened;
    signal.throwIfAborted();
    if (this.#failed || this.#session === undefined) return "fallback";
    try {
      await this.#sendWritten();
      if (this.#failed || this.#session === undefined) return "fallback";
      await completeUpload(repo, this.#session, part.digest, 0, undefined, signal);
      return "uploaded";
    } catch {
      if (signal.aborted) throw signal.reason;
      this.#fail();
      return "fallback";
    }
  }

  /** Ends the session without a commit (best effort, in the background). */
  abandon(): void {
    this.#ended = true;
    this.#abandoned = true;
    const session = this.#session;
    this.#session = undefined;
    this.#stop.abort();
    if (session !== undefined) {
      void cancelUpload(this.#context.repo, session.location, this.#context.signal);
    }
  }

  async #open(): Promise<void> {
    const { repo } = this.#context;
    const signal = this.#signal;
    try {
      await this.#context.beforeUpload(signal);
      const session = await openUpload(repo, signal);
      if (this.#abandoned) {
        // Abandoned while it opened.
        void cancelUpload(repo, session.location, this.#context.signal);
        return;
      }
      this.#session = session;
    } catch {
      this.#fail();
    }
  }

  /** The fewest bytes a chunk other than the last carries. */
  #chunkBytes(): number {
    return Math.max(LIVE_CHUNK_BYTES, this.#session?.minimumChunk ?? 0);
  }

  /** PATCHes every byte written and not sent yet. */
  async #sendWritten(): Promise<void> {
    await this.#opened;
    const { repo, path, index, progress } = this.#context;
    const signal = this.#signal;
    const offset = this.#context.offset ?? 0;
    const session = this.#session;
    const start = this.#sent;
    const length = this.#written - start;
    if (session === undefined || this.#failed || length <= 0) return;
    // Only the last chunk may be shorter than the registry's minimum (known once it answered).
    if (!this.#ended && length < this.#chunkBytes()) return;
    let made = 0;
    try {
      const next = await patchUpload(repo, session, start, length, {
        make: () => {
          if (made++ > 0) {
            // A replayed chunk (a followed redirect, a refreshed token) counts from its start.
            progress.restartPart(index);
            progress.landed(index, start);
          }
          return fileBody(path, offset + start, length, {
            onBytes: (n) => {
              progress.addWire(n);
              progress.landed(index, n);
            },
          });
        },
        replayable: true,
      }, signal);
      if (this.#abandoned) {
        // Given up while the chunk went: a session the registry moved is ended too.
        if (next.location.href !== session.location.href) {
          void cancelUpload(repo, next.location, this.#context.signal);
        }
        return;
      }
      this.#session = next;
      this.#sent += length;
      this.#context.choice.taken();
    } catch {
      this.#fail();
    }
  }

  /** The session is given up: abandoned, and the part left to the usual upload. */
  #fail(): void {
    // A chunk stopped because the session was abandoned is no failure of the registry.
    if (this.#failed || this.#abandoned) return;
    this.#failed = true;
    if (this.#context.signal.aborted) return;
    this.#context.choice.refused();
    this.abandon();
  }
}

/**
 * Ends a part's upload: its live session when it has one, else (or when that failed) the usual
 * `upload`; tells `choice` what the registry turned out to hold.
 *
 * @example
 * ```ts ignore
 * const outcome = await finishPart(part, live, choice, () => uploadPart(context, part));
 * ```
 */
export async function finishPart(
  part: PartDescriptor,
  live: LiveUpload | undefined,
  choice: LiveChoice,
  upload: () => Promise<"skipped" | "uploaded">,
): Promise<"exists" | "uploaded"> {
  let outcome = live === undefined ? "fallback" : await live.complete(part);
  if (outcome === "fallback") outcome = await upload() === "skipped" ? "exists" : "uploaded";
  if (outcome === "exists") choice.present();
  return outcome;
}
