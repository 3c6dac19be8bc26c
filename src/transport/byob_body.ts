/**
 * Bring-your-own-buffer reads of a response body through the transport's wrapping layers.
 *
 * The layers (error mapping, stall watchdog) wrap bodies in default streams, which is what
 * keeps a default reader fastest. A consumer that owns its buffers (a pull writing into pooled
 * buffers) can instead reach the runtime's byte stream below every layer with
 * {@linkcode openByob}; each layer still applies its per-read rules to every read.
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

const BYOB = Symbol("ocipart.byobSource");

type Provider = () => ByobSource | undefined;

/**
 * Opens a bring-your-own-buffer read over `stream`, locking it, when the stream or the layer
 * below it supports one; otherwise returns undefined and leaves the stream untouched.
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
  const provider = (stream as unknown as Record<symbol, Provider | undefined>)[BYOB];
  if (provider !== undefined) return provider();
  let reader: ReadableStreamBYOBReader;
  try {
    reader = stream.getReader({ mode: "byob" });
  } catch {
    return undefined;
  }
  return { read: (view) => reader.read(view), cancel: (reason) => reader.cancel(reason) };
}

/** What a layer does around each read of the body below it. */
export interface RelayRules {
  /** Runs one read of the layer below, mapping its outcome as the layer's default reads do. */
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
}

/**
 * Lets {@linkcode openByob} reach through `wrapper`, a layer's default stream over `source`.
 * The wrapper must not have read `source` yet (take its reader on first pull), and is locked
 * when the bring-your-own-buffer read is opened, so the two can never both read.
 *
 * @example Marking a relay
 * ```ts
 * import { openByob, relayByob } from "./byob_body.ts";
 * const source = new ReadableStream<Uint8Array>({ type: "bytes", pull: () => {} });
 * const wrapper = new ReadableStream<Uint8Array>({ pull: async () => {} });
 * relayByob(wrapper, source, { read: (next) => next() });
 * console.log(openByob(wrapper) !== undefined); // true
 * ```
 */
export function relayByob(
  wrapper: ReadableStream<Uint8Array>,
  source: ReadableStream<Uint8Array>,
  rules: RelayRules,
): void {
  const provider: Provider = () => {
    const inner = openByob(source);
    if (inner === undefined) return undefined;
    wrapper.getReader();
    rules.opened?.(inner);
    return {
      read: (view) => rules.read(() => inner.read(view)),
      cancel: (reason) => {
        rules.cancel?.(reason);
        return inner.cancel(reason);
      },
    };
  };
  Object.defineProperty(wrapper, BYOB, { value: provider });
}

/**
 * A layer's body over `source`: a default stream (the fastest for ordinary readers) that applies
 * `rules` to every read, takes its reader of `source` only on first read, and lets
 * {@linkcode openByob} reach through it with the same rules.
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
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const wrapper = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (reader === undefined) {
        reader = source.getReader();
        rules.opened?.(reader);
      }
      const current = reader;
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await rules.read(() => current.read());
      } catch (err) {
        controller.error(err);
        return;
      }
      if (result.done) controller.close();
      else controller.enqueue(result.value);
    },
    cancel(reason) {
      rules.cancel?.(reason);
      return (reader ?? source).cancel(reason);
    },
  }, { highWaterMark: 0 });
  relayByob(wrapper, source, rules);
  return wrapper;
}
