/**
 * One bandwidth cap for a whole client: a token bucket that every request body and every
 * response body of the client's transports draws from, in both directions, whatever the number
 * of workers. Waits are abortable, so a cancelled transfer still ends at once.
 *
 * @module
 */
import { type Clock, systemClock } from "./clock.ts";
import type { Fetch } from "./fetch.ts";

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

/** The largest slice of a body that waits for its share at once (smooths the flow). */
const MAX_SLICE = 64 * 1024;

/**
 * A token bucket shared by all the bodies of a client. Takers are served first come first
 * served; a taker whose signal aborts while it waits leaves at once without taking its share.
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
  /** The size of the slices bodies are cut into. */
  readonly slice: number;
  readonly #clock: Clock;
  readonly #burst: number;
  #tokens: number;
  #last: number;
  #queue: Promise<void> = Promise.resolve();

  /** Creates a full bucket holding a tenth of a second's worth (the burst). */
  constructor(limit: RateLimit, clock: Clock = systemClock) {
    const rate = limit.bytesPerSecond;
    if (!Number.isFinite(rate) || rate <= 0) {
      throw new RangeError("rate limit: bytesPerSecond must be a positive number");
    }
    this.bytesPerSecond = rate;
    this.#clock = clock;
    this.slice = Math.max(1, Math.min(MAX_SLICE, Math.floor(rate / 10)));
    this.#burst = this.slice;
    this.#tokens = this.#burst;
    this.#last = clock.now();
  }

  /** Waits until `bytes` may pass (in turn with the other takers); rejects when `signal` aborts. */
  take(bytes: number, signal?: AbortSignal): Promise<void> {
    const turn = this.#queue.then(() => this.#spend(bytes, signal));
    this.#queue = turn.catch(() => {});
    if (signal === undefined) return turn;
    // Waiting in line ends with the signal too, not when the takers ahead are served.
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      turn.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  async #spend(bytes: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return;
    const now = this.#clock.now();
    const earned = ((now - this.#last) / 1000) * this.bytesPerSecond;
    this.#tokens = Math.min(this.#burst, this.#tokens + earned);
    this.#last = now;
    // Spend now and sleep off the debt: the next taker starts from what is left.
    this.#tokens -= bytes;
    if (this.#tokens < 0) {
      await this.#clock.sleep((-this.#tokens / this.bytesPerSecond) * 1000, signal);
    }
  }
}

/**
 * `transport` with every request and response body drawn through `limiter`. A request without
 * a body and a response without a body pass as they are.
 *
 * @example Capping a transport
 * ```ts
 * import { RateLimiter, withRateLimit } from "./rate_limit.ts";
 * const limiter = new RateLimiter({ bytesPerSecond: 1_000_000 });
 * const capped = withRateLimit(() => Promise.resolve(new Response("hello")), limiter);
 * console.log(await (await capped(new Request("http://127.0.0.1/"))).text()); // "hello"
 * ```
 */
export function withRateLimit(transport: Fetch, limiter: RateLimiter): Fetch {
  return async (request) => {
    const signal = request.signal;
    const outgoing = request.body === null ? request : new Request(
      request.url,
      {
        method: request.method,
        headers: request.headers,
        body: request.body.pipeThrough(limitedStream(limiter, signal)),
        signal,
        redirect: request.redirect,
        duplex: "half",
      } as RequestInit & { duplex: "half" },
    );
    const response = await transport(outgoing);
    if (response.body === null || NULL_BODY_STATUSES.has(response.status)) return response;
    return new Response(response.body.pipeThrough(limitedStream(limiter, signal)), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** Statuses a `Response` may not be built with a body for. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** A pass-through that lets each slice go once the limiter allows it. */
function limitedStream(
  limiter: RateLimiter,
  signal: AbortSignal,
): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    async transform(chunk, controller) {
      for (let offset = 0; offset < chunk.byteLength; offset += limiter.slice) {
        const slice = chunk.subarray(offset, offset + limiter.slice);
        await limiter.take(slice.byteLength, signal);
        controller.enqueue(slice);
      }
    },
  });
}
