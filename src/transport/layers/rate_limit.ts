/**
 * One bandwidth cap for a whole client: a token bucket that every request body and every
 * response body of the client's transports draws from, in both directions, whatever the number
 * of workers. Waits are abortable, so a cancelled transfer still ends at once.
 *
 * The cap costs nothing until it binds: a body keeps its fast path (a file range is still
 * written from the file by the transport, a response body still reads into the caller's
 * buffers), chunks pass in pieces as large as the transport's own (1 MiB once the cap is 20 MiB/s
 * or more), and a piece the bucket can pay for passes without a timer or a queue. Only a taker
 * that finds the bucket in debt waits; one timer serves the waiters in turn, and the bucket keeps
 * what a late timer earned (up to a tenth of a second's worth), so the cap is reached however
 * coarse the timers are.
 *
 * @module
 */
import { type Clock, systemClock } from "../clock.ts";
import { relayBody } from "../byob_body.ts";
import { FILE_BODY_CHUNK_SIZE, fileBodyRange, rangeBody } from "../file_body.ts";
import { BODILESS_STATUSES, withBody } from "../response_body.ts";
import { requestWith, signalOf } from "../request_signal.ts";

/**
 * A bandwidth cap.
 *
 * @example Ten megabytes per second for everything a client sends and receives
 * ```ts
 * import type { RateLimit } from "@ocipart/ocipart";
 * const rateLimit: RateLimit = { bytesPerSecond: 10_000_000 };
 * // new PartedClient({ rateLimit }) or new BlobClient({ rateLimit })
 * console.log(rateLimit.bytesPerSecond); // 10000000
 * ```
 */
export interface RateLimit {
  /** Body bytes per second, both directions together, shared by every transfer of a client. */
  bytesPerSecond: number;
}

/** A piece carries at most this many seconds' worth of the cap, so a slow cap still flows. */
const SLICE_SECONDS = 0.05;
/** What an idle bucket holds: enough to absorb a timer that fires late. */
const CAPACITY_SECONDS = 0.1;

interface Waiter {
  bytes: number;
  resolve(): void;
  reject(reason: unknown): void;
  signal: AbortSignal | undefined;
  onAbort(): void;
}

const PASS: Promise<void> = Promise.resolve();

/**
 * A token bucket shared by all the bodies of a client. A taker passes at once while the bucket
 * is not in debt and nobody waits (spending may take it into debt by one piece); the others
 * wait in line, first come first served, and a waiter whose signal aborts leaves the line at once
 * without taking its share. The bucket starts empty, so no transfer runs ahead of the cap by more
 * than one piece.
 *
 * @example Two takers sharing 1 MB/s
 * ```ts
 * import { RateLimiter } from "./rate_limit.ts";
 * const limiter = new RateLimiter({ bytesPerSecond: 1_000_000 });
 * await Promise.all([limiter.take(1000), limiter.take(1000)]);
 * ```
 */
export class RateLimiter {
  /** The cap, bytes per second. */
  readonly bytesPerSecond: number;
  /** The most bytes one read or write passes at once (the transport's 1 MiB, or less). */
  readonly slice: number;
  readonly #clock: Clock;
  readonly #capacity: number;
  #tokens = 0;
  #last: number;
  readonly #line: Waiter[] = [];
  #timer: AbortController | undefined;

  /** Creates an empty bucket. */
  constructor(limit: RateLimit, clock: Clock = systemClock) {
    const rate = limit.bytesPerSecond;
    if (typeof rate !== "number" || !Number.isFinite(rate) || rate <= 0) {
      throw new RangeError(`rate limit: bytesPerSecond must be a positive number, not ${rate}`);
    }
    this.bytesPerSecond = rate;
    this.#clock = clock;
    this.slice = Math.max(1, Math.min(FILE_BODY_CHUNK_SIZE, Math.floor(rate * SLICE_SECONDS)));
    this.#capacity = Math.max(this.slice, rate * CAPACITY_SECONDS);
    this.#last = clock.now();
  }

  /** Waits until `bytes` may pass (in turn with the other takers); rejects when `signal` aborts. */
  take(bytes: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.#refill();
    if (this.#line.length === 0 && this.#tokens >= 0) {
      this.#tokens -= bytes;
      return PASS;
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { bytes, resolve, reject, signal, onAbort: () => this.#leave(waiter) };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.#line.push(waiter);
      this.#schedule();
    });
  }

  #refill(): void {
    const now = this.#clock.now();
    const earned = ((now - this.#last) / 1000) * this.bytesPerSecond;
    this.#last = now;
    this.#tokens = Math.min(this.#capacity, this.#tokens + earned);
  }

  /** Serves the waiters the bucket can pay for, then sleeps until it is out of debt again. */
  #serve(): void {
    this.#refill();
    while (this.#line.length > 0 && this.#tokens >= 0) {
      const waiter = this.#line.shift()!;
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      this.#tokens -= waiter.bytes;
      waiter.resolve();
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#line.length === 0) return;
    const timer = this.#timer = new AbortController();
    const ms = (-this.#tokens / this.bytesPerSecond) * 1000;
    this.#clock.sleep(ms, timer.signal).then(() => {
      this.#timer = undefined;
      this.#serve();
    }, () => {});
  }

  #leave(waiter: Waiter): void {
    const at = this.#line.indexOf(waiter);
    if (at >= 0) this.#line.splice(at, 1);
    waiter.reject(waiter.signal?.reason);
    if (this.#line.length === 0) {
      // Nobody left to wake: a pending timer must not hold the process open.
      this.#timer?.abort();
      this.#timer = undefined;
    }
  }
}

/**
 * `response` with its body drawn through `limiter` (a byte stream stays one, a
 * bring-your-own-buffer read asks for at most one piece); a response without a body as it is.
 *
 * @example Capping an answer's body
 * ```ts
 * import { limitedResponse, RateLimiter } from "./rate_limit.ts";
 * const limiter = new RateLimiter({ bytesPerSecond: 1_000_000 });
 * const answer = limitedResponse(new Response("hello"), limiter, new AbortController().signal);
 * console.log(await answer.text()); // "hello"
 * ```
 */
export function limitedResponse(
  response: Response,
  limiter: RateLimiter,
  signal: AbortSignal,
): Response {
  if (response.body === null || BODILESS_STATUSES.has(response.status)) return response;
  const body = relayBody(response.body, {
    maxRead: limiter.slice,
    read: async (next) => {
      const result = await next();
      if (!result.done) await limiter.take(result.value.byteLength, signal);
      return result;
    },
  });
  return withBody(response, body);
}

/**
 * `request` with its body drawn through `limiter`, a file range kept as one (its chunks wait for
 * the cap before the transport writes them); a request without a body as it is.
 *
 * @example Capping a request's body
 * ```ts
 * import { limitedRequest, RateLimiter } from "./rate_limit.ts";
 * const limiter = new RateLimiter({ bytesPerSecond: 1_000_000 });
 * const request = new Request("http://127.0.0.1/", { method: "PUT", body: "hello" });
 * console.log(await limitedRequest(request, limiter).text()); // "hello"
 * ```
 */
export function limitedRequest(request: Request, limiter: RateLimiter): Request {
  const source = request.body;
  if (source === null) return request;
  const signal = signalOf(request);
  const range = fileBodyRange(source);
  let body: ReadableStream<Uint8Array>;
  if (range !== undefined) {
    // The same range again, its chunks cut to the cap's pieces and each held until it may pass;
    // the original was never read and is released.
    body = rangeBody({
      ...range,
      chunkSize: Math.min(range.chunkSize ?? FILE_BODY_CHUNK_SIZE, limiter.slice),
      pace: range.pace === undefined
        ? (bytes) => limiter.take(bytes, signal)
        : (bytes) => range.pace!(bytes).then(() => limiter.take(bytes, signal)),
    });
    source.cancel().catch(() => {});
  } else {
    body = source.pipeThrough(limitedStream(limiter, signal));
  }
  return requestWith(request, { body, duplex: "half" } as RequestInit);
}

/** A pass-through that lets each piece go once the limiter allows it. */
function limitedStream(
  limiter: RateLimiter,
  signal: AbortSignal,
): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    async transform(chunk, controller) {
      for (let offset = 0; offset < chunk.byteLength; offset += limiter.slice) {
        const piece = chunk.subarray(offset, offset + limiter.slice);
        await limiter.take(piece.byteLength, signal);
        controller.enqueue(piece);
      }
    },
  });
}
