/**
 * Response bodies through the transport's layers (error mapping, stall watchdog, exchange
 * observer, bandwidth cap), each applying its rules to every read.
 *
 * A layer over a readable byte stream (the runtime's download body) is itself a readable byte
 * stream, so the body the stack hands up keeps what the runtime offers: a reader from
 * `body.getReader({ mode: "byob" })` reads into the caller's own buffers, each read passing down
 * through every layer into the runtime's body (no copy, no garbage chunk per read), while a
 * default reader gets the chunks as they arrive. A layer over any other stream is a default
 * stream, as fast as it can be for a default reader. Layers put over a body nobody has read yet
 * become one stream with their rules stacked, so a read costs one stream's machinery however
 * many layers there are.
 *
 * @module
 */

/** A bring-your-own-buffer read of a body. */
export interface ByobSource {
  /** Reads into `view` (whose buffer is transferred); the result's view is the filled part. */
  read(view: Uint8Array): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Stops the body. */
  cancel(reason?: unknown): Promise<void>;
}

/**
 * Opens a bring-your-own-buffer read over `stream`, locking it, when it is a readable byte
 * stream; otherwise returns undefined and leaves the stream untouched.
 *
 * @example Reading into one buffer
 * ```ts
 * import { openByob } from "./byob_body.ts";
 * const body = new ReadableStream<Uint8Array>({
 *   type: "bytes",
 *   start(controller) {
 *     controller.enqueue(new TextEncoder().encode("abc"));
 *     controller.close();
 *   },
 * });
 * const { value } = await openByob(body)!.read(new Uint8Array(16));
 * console.log(value?.byteLength); // 3
 * ```
 */
export function openByob(stream: ReadableStream<Uint8Array>): ByobSource | undefined {
  if (stream.locked) return undefined;
  let reader: ReadableStreamBYOBReader;
  try {
    reader = stream.getReader({ mode: "byob" });
  } catch {
    return undefined;
  }
  return { read: (view) => reader.read(view), cancel: (reason) => reader.cancel(reason) };
}

/** Whether `stream` is a readable byte stream (checked without keeping it locked). */
function isByteStream(stream: ReadableStream<Uint8Array>): boolean {
  if (stream.locked) return false;
  try {
    stream.getReader({ mode: "byob" }).releaseLock();
    return true;
  } catch {
    return false;
  }
}

/** What a layer does around each read of the body below it. */
export interface RelayRules {
  /** Runs one read of the layer below, mapping its outcome as the layer's reads do. */
  read(
    next: () => Promise<ReadableStreamReadResult<Uint8Array>>,
  ): Promise<ReadableStreamReadResult<Uint8Array>>;
  /**
   * Called with the reader of the layer below once it is taken, default or bring-your-own-buffer
   * (a watchdog may need to cancel it).
   */
  opened?(reader: { cancel(reason?: unknown): Promise<void> }): void;
  /** Called when the consumer cancels. */
  cancel?(reason: unknown): void;
  /**
   * The most bytes one read may pass (a bandwidth cap's slice): a bring-your-own-buffer read
   * asks the layer below for at most this many, a larger chunk of a default read is handed on
   * in pieces, each through `read`. Default: no limit.
   */
  maxRead?: number;
}

/** A relay nobody has read yet: a layer over it takes over its source and rules. */
interface Unread {
  source: ReadableStream<Uint8Array>;
  rules: RelayRules;
  started: boolean;
}

const relays = new WeakMap<ReadableStream<Uint8Array>, Unread>();

/**
 * A layer's body over `source` that applies `rules` to every read and takes its reader of `source`
 * only on first read: a readable byte stream when `source` is one (see the module doc), else a
 * default stream. Over another relay that nobody has read yet, the layers become one stream: the
 * new relay reads the other's source with both sets of rules (the other's nearest the source), and
 * the other stays locked, so a read costs one stream's machinery however many layers there are.
 *
 * @example Mapping read errors
 * ```ts
 * import { relayBody } from "./byob_body.ts";
 * const body = relayBody(new Response("abc").body!, {
 *   read: (next) => next().catch((err) => Promise.reject(new Error("read failed", { cause: err }))),
 * });
 * console.log(await new Response(body).text()); // "abc"
 * ```
 */
export function relayBody(
  source: ReadableStream<Uint8Array>,
  rules: RelayRules,
): ReadableStream<Uint8Array> {
  const below = relays.get(source);
  if (below !== undefined && !below.started && !source.locked) {
    relays.delete(source);
    source.getReader();
    return relayBody(below.source, layered(below.rules, rules));
  }
  const entry: Unread = { source, rules, started: false };
  const start = () => entry.started = true;
  const relayed = isByteStream(source)
    ? byteRelay(source, rules, start)
    : defaultRelay(source, rules, start);
  relays.set(relayed, entry);
  return relayed;
}

/** The rules of `outer` around those of `inner`, as if each had its own stream. */
function layered(inner: RelayRules, outer: RelayRules): RelayRules {
  const maxRead = Math.min(inner.maxRead ?? Infinity, outer.maxRead ?? Infinity);
  return {
    read: (next) => outer.read(() => inner.read(next)),
    opened: (reader) => {
      inner.opened?.(reader);
      outer.opened?.(reader);
    },
    cancel: (reason) => {
      outer.cancel?.(reason);
      inner.cancel?.(reason);
    },
    ...(maxRead === Infinity ? {} : { maxRead }),
  };
}

/**
 * Hands on a default read's chunks no larger than `maxRead`, each piece through the rules. For a
 * byte stream, which takes over the whole buffer of what it is given, every piece but the last
 * of a chunk is a copy.
 */
class Pieces {
  #rest: Uint8Array | undefined;
  readonly #max: number;
  readonly #copy: boolean;

  constructor(max = Infinity, copy = false) {
    this.#max = max;
    this.#copy = copy;
  }

  /** One read through `rules`: the rest of the last chunk, else a new one from `next`. */
  read(
    rules: RelayRules,
    next: () => Promise<ReadableStreamReadResult<Uint8Array>>,
  ): Promise<ReadableStreamReadResult<Uint8Array>> {
    return rules.read(async () => {
      let chunk = this.#rest;
      this.#rest = undefined;
      if (chunk === undefined) {
        const result = await next();
        if (result.done) return result;
        chunk = result.value;
      }
      if (chunk.byteLength <= this.#max) return { done: false, value: chunk };
      this.#rest = chunk.subarray(this.#max);
      const piece = chunk.subarray(0, this.#max);
      return { done: false, value: this.#copy ? piece.slice() : piece };
    });
  }
}

function defaultRelay(
  source: ReadableStream<Uint8Array>,
  rules: RelayRules,
  start: () => void,
): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const pieces = new Pieces(rules.maxRead);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (reader === undefined) {
        start();
        reader = source.getReader();
        rules.opened?.(reader);
      }
      const current = reader;
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await pieces.read(rules, () => current.read());
      } catch (err) {
        controller.error(err);
        return;
      }
      if (result.done) controller.close();
      else controller.enqueue(result.value);
    },
    cancel(reason) {
      start();
      rules.cancel?.(reason);
      return (reader ?? source).cancel(reason);
    },
  }, { highWaterMark: 0 });
}

type Reader = ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>;

/** Bytes asked for when a default read meets a bring-your-own-buffer reader of the source. */
const DEFAULT_READ_SIZE = 64 * 1024;

/**
 * A byte stream over the byte stream `source`. Its reader of `source` is of the kind the first
 * read asks for: a bring-your-own-buffer read passes the caller's view down (narrowed to
 * `maxRead`) and hands the filled view back, a default read hands on the source's chunks (whole
 * buffers its queue owned, so passing them on copies nothing).
 */
function byteRelay(
  source: ReadableStream<Uint8Array>,
  rules: RelayRules,
  start: () => void,
): ReadableStream<Uint8Array> {
  let reader: Reader | undefined;
  const pieces = new Pieces(rules.maxRead, true);
  const max = rules.maxRead ?? Infinity;
  const open = (byob: boolean): Reader => {
    start();
    reader = byob ? source.getReader({ mode: "byob" }) : source.getReader();
    rules.opened?.(reader);
    return reader;
  };
  return new ReadableStream({
    type: "bytes",
    async pull(controller: ReadableByteStreamController) {
      const request = controller.byobRequest;
      const current = reader ?? open(request !== null);
      try {
        if (current instanceof ReadableStreamBYOBReader) {
          await readInto(current, request, controller, rules, max);
          return;
        }
        let result = await pieces.read(rules, () => current.read());
        // A byte stream takes no empty chunk: read on past them.
        while (!result.done && result.value.byteLength === 0) {
          result = await pieces.read(rules, () => current.read());
        }
        if (result.done) {
          controller.close();
          request?.respond(0);
        } else controller.enqueue(result.value);
      } catch (err) {
        controller.error(err);
      }
    },
    cancel(reason) {
      start();
      rules.cancel?.(reason);
      return (reader ?? source).cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/** One read of the source's bring-your-own-buffer reader, into the caller's view if there is one. */
async function readInto(
  reader: ReadableStreamBYOBReader,
  request: ReadableStreamBYOBRequest | null,
  controller: ReadableByteStreamController,
  rules: RelayRules,
  max: number,
): Promise<void> {
  const view = request?.view ?? null;
  const want = Math.min(view?.byteLength ?? DEFAULT_READ_SIZE, max);
  let into: Uint8Array = view === null
    ? new Uint8Array(want)
    : new Uint8Array(view.buffer, view.byteOffset, want);
  let result = await rules.read(() => reader.read(into));
  // An empty read is no answer to the caller's: read again into the same (returned) buffer.
  while (!result.done && result.value.byteLength === 0) {
    into = new Uint8Array(result.value.buffer, result.value.byteOffset, want);
    result = await rules.read(() => reader.read(into));
  }
  if (!result.done) {
    if (request === null) controller.enqueue(result.value);
    else request.respondWithNewView(result.value);
    return;
  }
  controller.close();
  if (request === null) return;
  // The caller's buffer went down with the read and must come back, even empty.
  if (result.value === undefined) throw new TypeError("body read: the source kept the buffer");
  request.respondWithNewView(result.value);
}
