/**
 * The push body: normalization of the accepted shapes, an exact-length reader that rejects
 * short and trailing input before the last byte leaves, and the staged request body.
 *
 * @module
 */
import { BodyLengthError } from "../errors/kinds.ts";

/**
 * What `push` accepts as the blob's bytes. `Uint8Array`, `Blob` and a stream factory are
 * re-readable (a failed attempt restarts from byte zero); a bare `ReadableStream` allows one
 * attempt only.
 *
 * @example The accepted shapes
 * ```ts
 * import type { PushBody } from "@ocipart/ocipart";
 * const bytes = new TextEncoder().encode("hello");
 * const bodies: PushBody[] = [
 *   bytes, // re-readable
 *   new Blob([bytes]), // re-readable
 *   () => new Blob([bytes]).stream(), // re-readable: a new stream per attempt
 *   new Blob([bytes]).stream(), // one attempt only
 * ];
 * console.log(bodies.length); // 4
 * ```
 */
export type PushBody =
  | Uint8Array
  | Blob
  | (() => ReadableStream<Uint8Array>)
  | ReadableStream<Uint8Array>;

/** Largest piece handed to the transport at once. */
export const BATCH_SIZE: number = 256 * 1024;

/** How many batches are read ahead of the transport per request (1 MiB active). */
export const STAGED_BATCHES = 4;

/** A push body that can be opened as streams. */
export interface UploadSource {
  /** True when a new attempt can read the bytes again from zero. */
  readonly replayable: boolean;
  /** True when any byte range can be opened directly (`Uint8Array`, `Blob`). */
  readonly randomAccess: boolean;
  /** The size, when the body knows it. */
  readonly knownSize: number | undefined;
  /** True once the body was opened at least once. */
  readonly opened: boolean;
  /**
   * Opens the bytes from `start` (only random-access bodies accept a non-zero start) to `end`.
   * `owned` says whether the stream was made here (and may be cancelled) or is the caller's.
   */
  open(start?: number, end?: number): { stream: ReadableStream<Uint8Array>; owned: boolean };
}

/**
 * Normalizes a push body.
 *
 * @throws {TypeError} `body` is none of the accepted shapes.
 *
 * @example
 * ```ts
 * import { toUploadSource } from "./upload_source.ts";
 * const source = toUploadSource(new Uint8Array(3));
 * console.log(source.replayable, source.knownSize); // true 3
 * ```
 */
export function toUploadSource(body: PushBody): UploadSource {
  if (body instanceof Uint8Array) {
    let opened = false;
    return {
      replayable: true,
      randomAccess: true,
      knownSize: body.byteLength,
      get opened() {
        return opened;
      },
      open(start = 0, end = body.byteLength) {
        opened = true;
        const view = body.subarray(start, end);
        return {
          owned: true,
          stream: new ReadableStream<Uint8Array>({
            start(controller) {
              if (view.byteLength > 0) controller.enqueue(view);
              controller.close();
            },
          }),
        };
      },
    };
  }
  if (body instanceof Blob) {
    let opened = false;
    return {
      replayable: true,
      randomAccess: true,
      knownSize: body.size,
      get opened() {
        return opened;
      },
      open(start = 0, end = body.size) {
        opened = true;
        return { owned: true, stream: body.slice(start, end).stream() };
      },
    };
  }
  if (body instanceof ReadableStream) {
    let opened = false;
    return {
      replayable: false,
      randomAccess: false,
      knownSize: undefined,
      get opened() {
        return opened;
      },
      open(start = 0) {
        if (opened || start !== 0) throw new TypeError("push: a ReadableStream body is one-shot");
        opened = true;
        return { owned: false, stream: body };
      },
    };
  }
  if (typeof body === "function") {
    let opened = false;
    return {
      replayable: true,
      randomAccess: false,
      knownSize: undefined,
      get opened() {
        return opened;
      },
      open(start = 0) {
        if (start !== 0) throw new TypeError("push: a stream factory opens at byte zero only");
        opened = true;
        const stream = body();
        if (!(stream instanceof ReadableStream)) {
          throw new TypeError("push: the body factory must return a ReadableStream");
        }
        return { owned: true, stream };
      },
    };
  }
  throw new TypeError("push: body must be a Uint8Array, a Blob, a ReadableStream or a factory");
}

/**
 * Reads exactly `size` bytes from a stream in pieces. The piece that reaches `size` is only
 * returned after the source proved it ends there, so trailing input is rejected before the
 * last byte is handed on (and hence before any commit). Short input is rejected too. Both are
 * a `BodyLengthError`, kept in {@linkcode ExactReader.failure}.
 *
 * @example
 * ```ts
 * import { ExactReader } from "./upload_source.ts";
 * const stream = new Blob([new Uint8Array(5)]).stream();
 * const reader = new ExactReader(stream, 5, true, "PUT blob upload");
 * console.log((await reader.read(3))?.length, (await reader.read(3))?.length); // 3 2
 * await reader.close();
 * ```
 */
export class ExactReader {
  /** The length failure, once one happened. */
  failure: BodyLengthError | undefined;
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #owned: boolean;
  #size: number;
  #operation: string;
  #position = 0;
  #pending: Uint8Array = new Uint8Array();
  #ended = false;
  #inflight: Promise<unknown> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  /** Wraps `stream`; `owned` streams are cancelled on close, the caller's are released. */
  constructor(stream: ReadableStream<Uint8Array>, size: number, owned: boolean, operation: string) {
    this.#reader = stream.getReader();
    this.#owned = owned;
    this.#size = size;
    this.#operation = operation;
  }

  /** Bytes handed out so far. */
  get position(): number {
    return this.#position;
  }

  /**
   * Returns the next piece of at most `max` bytes that does not cross `limit` (defaults to the
   * size), or `undefined` once `limit` is reached. Calls are serialized.
   */
  read(max: number, limit: number = this.#size): Promise<Uint8Array | undefined> {
    const next = this.#queue.then(() => this.#read(max, limit));
    this.#queue = next.catch(() => {});
    return next;
  }

  /** Proves the source ends exactly at the size (needed when nothing is read, e.g. size 0). */
  finish(): Promise<void> {
    const next = this.#queue.then(async () => {
      if (this.failure) throw this.failure;
      if (this.#position !== this.#size) throw this.#fail("body shorter than declared size");
      await this.#confirmEnd();
    });
    this.#queue = next.catch(() => {});
    return next;
  }

  /**
   * Waits for an in-flight source read to return, then cancels an owned stream or releases the
   * caller's stream.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#inflight?.catch(() => {});
    try {
      if (this.#owned) await this.#reader.cancel();
      else this.#reader.releaseLock();
    } catch {
      // Closing a source that already failed changes nothing.
    }
  }

  async #read(max: number, limit: number): Promise<Uint8Array | undefined> {
    if (this.failure) throw this.failure;
    if (this.#closed) throw new TypeError("upload source is closed");
    const end = Math.min(limit, this.#size);
    if (this.#position >= end) return undefined;
    while (this.#pending.byteLength === 0) {
      const chunk = await this.#next();
      if (chunk === undefined) throw this.#fail("body shorter than declared size");
      this.#pending = chunk;
    }
    const n = Math.min(max, end - this.#position, this.#pending.byteLength);
    const piece = this.#pending.subarray(0, n);
    this.#pending = this.#pending.subarray(n);
    if (this.#position + n === this.#size) await this.#confirmEnd();
    this.#position += n;
    return piece;
  }

  async #confirmEnd(): Promise<void> {
    if (this.#pending.byteLength > 0) throw this.#fail("body longer than declared size");
    for (;;) {
      const chunk = await this.#next();
      if (chunk === undefined) return;
      if (chunk.byteLength > 0) throw this.#fail("body longer than declared size");
    }
  }

  async #next(): Promise<Uint8Array | undefined> {
    if (this.#ended) return undefined;
    const read = this.#reader.read();
    this.#inflight = read;
    const { done, value } = await read;
    if (done) {
      this.#ended = true;
      return undefined;
    }
    if (!(value instanceof Uint8Array)) {
      throw new TypeError("push: the body stream must yield Uint8Array chunks");
    }
    return value;
  }

  #fail(rule: string): BodyLengthError {
    this.failure ??= new BodyLengthError(`${this.#operation}: ${rule}`);
    return this.failure;
  }
}

/**
 * A request body that hands the transport pieces of at most {@linkcode BATCH_SIZE} bytes taken
 * from `reader` up to `limit`, reading at most {@linkcode STAGED_BATCHES} batches ahead.
 * `onConsumed` is called with each piece's length when the transport takes it (read-ahead does
 * not count).
 *
 * @example
 * ```ts
 * import { ExactReader, stagedBody } from "./upload_source.ts";
 * const reader = new ExactReader(new Blob([new Uint8Array(10)]).stream(), 10, true, "PUT");
 * let sent = 0;
 * await new Response(stagedBody(reader, 10, (n) => (sent += n))).arrayBuffer();
 * console.log(sent); // 10
 * ```
 */
export function stagedBody(
  reader: ExactReader,
  limit: number,
  onConsumed: (bytes: number) => void,
): ReadableStream<Uint8Array> {
  const queue: Promise<Uint8Array | undefined>[] = [];
  let exhausted = false;
  let cancelled = false;
  const refill = () => {
    while (!exhausted && !cancelled && queue.length < STAGED_BATCHES) {
      const piece = reader.read(BATCH_SIZE, limit);
      piece.then((value) => {
        if (value === undefined) exhausted = true;
      }, () => {
        exhausted = true;
      });
      queue.push(piece);
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      refill();
      const next = queue.shift();
      const value = next === undefined ? undefined : await next;
      if (value === undefined) {
        controller.close();
        return;
      }
      onConsumed(value.byteLength);
      controller.enqueue(value);
      refill();
    },
    cancel() {
      cancelled = true;
      for (const pending of queue) pending.catch(() => {});
      queue.length = 0;
    },
  }, { highWaterMark: 0 });
}
