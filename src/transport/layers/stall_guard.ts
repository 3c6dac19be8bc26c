/**
 * The stall watchdog: a transport wrapper that fails an exchange which moves no bytes for too
 * long, so a silent peer costs one attempt of the retry budget instead of hanging forever.
 *
 * @module
 */
// node:timers for unref(): a watchdog alone must not hold the process open (a pending read does).
import { clearTimeout as nodeClearTimeout, setTimeout as nodeSetTimeout } from "node:timers";
import { StallError } from "../../errors/kinds.ts";
import { relayBody } from "../byob_body.ts";
import { withBody } from "../response_body.ts";
import { fileBody, fileBodyRange } from "../file_body.ts";
import { requestWith, signalOf } from "../request_signal.ts";

/** The stall timeout of both clients when none is given: 60 s without progress. */
export const DEFAULT_STALL_TIMEOUT_MS = 60_000;

/**
 * Validates a stall timeout: a non-negative number of milliseconds, or `Infinity`.
 *
 * @example
 * ```ts
 * import { validateStallTimeout } from "./stall_guard.ts";
 * console.log(validateStallTimeout(undefined)); // 60000
 * ```
 *
 * @throws {RangeError} A negative, NaN or non-number timeout.
 */
export function validateStallTimeout(value: number | undefined): number {
  if (value === undefined) return DEFAULT_STALL_TIMEOUT_MS;
  if (typeof value !== "number" || Number.isNaN(value) || value < 0) {
    throw new RangeError(
      `stallTimeoutMs must be a non-negative number of milliseconds, not ${String(value)}`,
    );
  }
  return value;
}

/** One exchange under the watchdog (see {@linkcode watchExchange}). */
export interface WatchedExchange {
  /** The request to send: its body and its wait for the answer move the clock. */
  readonly request: Request;
  /** What to throw when sending failed: the stall, if that was the cause, else `err`. */
  failed(err: unknown): unknown;
  /** The answer, with a body whose reads are watched while someone waits for them. */
  answered(response: Response): Response;
}

/**
 * Starts the watchdog of one exchange of `request`: `timeout` ms without progress fails it with
 * a retryable {@linkcode StallError}. Progress is the transport taking a request-body chunk, the
 * response headers arriving, or a response-body chunk arriving. The clock only runs while the
 * network is what the exchange waits for: not while the request body's own source is producing
 * a chunk, and not while nobody reads the response body. On a stall the request's signal is
 * aborted with the `StallError` (which closes the connection) and a response body being read
 * errors with it. Bodies made by `fileBody()` keep the default transport's direct file path:
 * there a chunk written to the socket is the progress. The caller (`layeredFetch`) sends
 * `request` of the result and reports how that ended.
 *
 * @example Watching one exchange
 * ```ts
 * import { watchExchange } from "./stall_guard.ts";
 * const exchange = watchExchange(new Request("http://127.0.0.1/"), 5_000);
 * const answer = exchange.answered(new Response("ok"));
 * console.log(await answer.text()); // "ok"
 * ```
 */
export function watchExchange(request: Request, timeout: number): WatchedExchange {
  const abort = new AbortController();
  const operation = `${request.method} request`;
  const watch = new Watch(timeout, (err) => abort.abort(err), operation);
  const signal = AbortSignal.any([signalOf(request), abort.signal]);
  const guarded = watchedRequest(request, signal, watch);
  watch.arm();
  return {
    request: guarded,
    failed(err) {
      watch.stop();
      return watch.failure ?? err;
    },
    answered(response) {
      watch.stop();
      if (response.body === null) return response;
      const onStall = (err: StallError) => abort.abort(err);
      return withBody(response, watchedResponseBody(response.body, timeout, operation, onStall));
    },
  };
}

/** `request` on `signal`, its body watched by `watch` (a file range kept as one). */
function watchedRequest(request: Request, signal: AbortSignal, watch: Watch): Request {
  const source = request.body;
  const range = fileBodyRange(source);
  if (source === null) return requestWith(request, { signal });
  if (range !== undefined) {
    // The transport streams this range from the file itself. The same range is made again
    // with a hook that moves the clock as chunks reach the socket; the original was never
    // read and is released.
    const watched = fileBody(range.path, range.offset, range.length, {
      onBytes: (bytes) => {
        watch.arm();
        range.onBytes?.(bytes);
      },
    });
    source.cancel().catch(() => {});
    return requestWith(request, { signal, body: watched, duplex: "half" } as RequestInit);
  }
  return requestWith(request, {
    signal,
    body: watchedRequestBody(source, watch),
    duplex: "half",
  } as RequestInit);
}

/**
 * One timer at a time. Progress only moves the deadline and a pause only clears a flag, so a
 * busy stream costs no timer churn; `stop()` clears the timer at every end of the exchange.
 */
class Watch {
  readonly #timeout: number;
  readonly #onStall: (err: StallError) => void;
  readonly #operation: string;
  #timer: ReturnType<typeof nodeSetTimeout> | undefined;
  #deadline = 0;
  #armed = false;
  #stopped = false;
  failure: StallError | undefined;

  constructor(timeout: number, onStall: (err: StallError) => void, operation: string) {
    this.#timeout = timeout;
    this.#onStall = onStall;
    this.#operation = operation;
  }

  /** Starts (or restarts) the clock from now. */
  arm(): void {
    if (this.#stopped) return;
    this.#armed = true;
    this.#deadline = performance.now() + this.#timeout;
    if (this.#timer === undefined) this.#schedule(this.#timeout);
  }

  /** Stops the clock until the next `arm()`. */
  pause(): void {
    this.#armed = false;
  }

  /** Stops the clock for good and releases the timer. */
  stop(): void {
    this.#stopped = true;
    this.#armed = false;
    if (this.#timer !== undefined) nodeClearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(delay: number): void {
    this.#timer = nodeSetTimeout(() => {
      this.#timer = undefined;
      if (!this.#armed || this.#stopped) return;
      const left = this.#deadline - performance.now();
      if (left > 0) {
        this.#schedule(left);
        return;
      }
      this.stop();
      this.failure = new StallError(
        `${this.#operation}: no progress for ${formatDuration(this.#timeout)}`,
      );
      this.#onStall(this.failure);
    }, Math.max(1, Math.ceil(delay)));
    this.#timer.unref();
  }
}

function watchedRequestBody(
  source: ReadableStream<Uint8Array>,
  watch: Watch,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // The transport asked for more: the network has moved. The source's own read time is
      // not the network's fault, so the clock stops while it runs.
      watch.pause();
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (err) {
        watch.stop();
        controller.error(err);
        return;
      }
      // Sent bytes (or the end of the body) now wait on the network: the answer must follow.
      watch.arm();
      if (result.done) controller.close();
      else controller.enqueue(result.value);
    },
    cancel(reason) {
      watch.stop();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

function watchedResponseBody(
  source: ReadableStream<Uint8Array>,
  timeout: number,
  operation: string,
  onStall: (err: StallError) => void,
): ReadableStream<Uint8Array> {
  // Taken on first read, so a bring-your-own-buffer consumer can still reach the source.
  let reader: { cancel(reason?: unknown): Promise<void> } | undefined;
  // Its own watch: it runs only while the caller waits for a chunk, never while nobody reads.
  // On a stall, cancelling the reader settles the pending read; no promise outlives a read
  // (racing every read against one long-lived promise would keep every chunk reachable).
  const watch = new Watch(timeout, (err) => {
    onStall(err);
    reader?.cancel(err).catch(() => {});
  }, operation);
  const watched = async (
    next: () => Promise<ReadableStreamReadResult<Uint8Array>>,
  ): Promise<ReadableStreamReadResult<Uint8Array>> => {
    watch.arm();
    let result: ReadableStreamReadResult<Uint8Array>;
    try {
      result = await next();
    } catch (err) {
      watch.stop();
      throw watch.failure ?? err;
    }
    if (watch.failure !== undefined) throw watch.failure;
    if (result.done) watch.stop();
    else watch.pause();
    return result;
  };
  return relayBody(source, {
    read: watched,
    opened: (taken) => reader = taken,
    cancel: () => watch.stop(),
  });
}

function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
