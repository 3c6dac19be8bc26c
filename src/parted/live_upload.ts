/**
 * A part of a push from a stream sent while it is cut: an upload session opened once the part
 * has bytes, PATCHed from the part's file as the bytes are written, and committed with the
 * part's digest once the part is whole. A stream's parts exist only as the producer writes
 * them; sent this way, a part's upload starts with its first bytes instead of after its last,
 * which is what a link capped per connection waits for.
 *
 * It is a shortcut, never the only way: a session the registry refuses, a chunk it answers
 * wrongly, or any failure before the commit abandons the session, and the part is uploaded the
 * usual way (existence check, one PUT from its file, the retry budget). A part found present
 * once it is whole is not committed: its session is abandoned and the part counts as present.
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

/** Bytes a chunk waits for before it is sent (at least; the registry may ask for more). */
export const LIVE_CHUNK_BYTES: number = 16 << 20;

/**
 * Whether the part being cut is sent while it arrives: after a part the registry lacked (a
 * rerun, whose parts are present, sends nothing before asking), until a part is found present
 * or a session fails. The first session is a trial: no other starts before the registry has
 * taken one of its chunks, so a registry without chunked uploads is asked once. A push whose
 * part size is under two chunks never sends this way: a part's bytes arrive within about one
 * chunk's time.
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

  /** A session starts. */
  trying(): void {
    this.#trying = true;
  }

  /** The registry took a chunk. */
  taken(): void {
    this.#taken = true;
  }

  /** The registry lacked a part. */
  missing(): void {
    this.#missing = true;
  }

  /** The registry had a part: the next ones are asked for first again. */
  present(): void {
    this.#missing = false;
    // A trial that ended on a part found present proved nothing either way.
    if (!this.#taken) this.#trying = false;
  }

  /** A session failed: the rest of the push uploads the usual way. */
  refused(): void {
    this.#refused = true;
  }
}

/** What a part sent while it is cut needs. */
export interface LiveUploadContext {
  /** The registry operations of the target repository. */
  repo: RemoteRepository;
  /** The part's file, holding the part from byte zero. */
  path: string;
  /** The part's index. */
  index: number;
  /** Counts wire bytes and the bytes of the part's attempt. */
  progress: ProgressTracker;
  /** Stops every request of the session. */
  signal: AbortSignal;
  /** Called before the session is opened (e.g. to renew a token about to expire). */
  beforeUpload: (signal: AbortSignal) => Promise<void>;
  /** Told when a chunk was taken and when the session failed (not when the signal stopped it). */
  choice: LiveChoice;
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
  readonly #opened: Promise<void>;
  #session: UploadSession | undefined;
  #written = 0;
  #sent = 0;
  #sending: Promise<void> | undefined;
  #failed = false;
  /** No more chunks go on their own: the part is whole, or the session was given up. */
  #ended = false;
  #abandoned = false;

  /** Opens the session now; a refusal only leaves the part to the usual upload. */
  constructor(context: LiveUploadContext) {
    this.#context = context;
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
      this.offer(this.#written);
    });
  }

  /**
   * Commits the session once the part is whole (`part.size` bytes written, `part.digest`
   * known): the bytes not sent yet, then the digest. `"exists"` when the registry already has
   * the part (the session is abandoned), `"fallback"` when the session failed. Rejects only
   * with the signal's reason.
   */
  async complete(part: PartDescriptor): Promise<LiveOutcome> {
    const { repo, signal } = this.#context;
    this.#written = part.size;
    this.#ended = true;
    while (this.#sending !== undefined) await this.#sending;
    await this.#opened;
    signal.throwIfAborted();
    if (this.#failed || this.#session === undefined) return "fallback";
    try {
      if (await repo.exists(part.digest, signal)) {
        this.abandon();
        return "exists";
      }
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
    if (session !== undefined) {
      void cancelUpload(this.#context.repo, session.location, this.#context.signal);
    }
  }

  async #open(): Promise<void> {
    const { repo, signal } = this.#context;
    try {
      await this.#context.beforeUpload(signal);
      const session = await openUpload(repo, signal);
      if (this.#abandoned) {
        // Abandoned while it opened.
        void cancelUpload(repo, session.location, signal);
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
    const { repo, path, index, progress, signal } = this.#context;
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
          return fileBody(path, start, length, {
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
          void cancelUpload(repo, next.location, signal);
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
    if (this.#failed) return;
    this.#failed = true;
    if (this.#context.signal.aborted) return;
    this.#context.choice.refused();
    this.abandon();
  }
}
