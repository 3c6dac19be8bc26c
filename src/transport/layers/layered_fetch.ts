/**
 * The layers every request of a client's route passes, applied in one call: the User-Agent,
 * the stall watchdog and the bandwidth cap, in that order on the way out (the answer's body is
 * capped, then watched, on the way back). One call instead of one wrapper per layer keeps a
 * request's path short and says the order in one place.
 *
 * @module
 */
import type { Fetch } from "../fetch.ts";
import { limitedRequest, limitedResponse, type RateLimiter } from "./rate_limit.ts";
import { validateStallTimeout, watchExchange } from "./stall_guard.ts";
import { namedRequest } from "./user_agent.ts";

/** What {@linkcode layeredFetch} applies. */
export interface FetchLayers {
  /** Fail an exchange that moves no bytes for this long (ms; 0 or `Infinity`: never). */
  stallTimeoutMs?: number;
  /** The client's one bandwidth cap, shared by all its routes; none by default. */
  limiter?: RateLimiter;
}

/**
 * `inner` behind the layers: every request names the package (unless it names itself), a
 * silent exchange fails after the stall timeout (one attempt of the retry budget instead of a
 * hang), and bodies in both directions draw from the cap. Bodies keep their fast paths.
 *
 * @throws {RangeError} An invalid `stallTimeoutMs`.
 *
 * @example A pool behind the layers
 * ```ts
 * import { layeredFetch } from "./layered_fetch.ts";
 * const echo = (request: Request) => Promise.resolve(new Response(request.headers.get("user-agent")));
 * const fetch = layeredFetch(echo, { stallTimeoutMs: 5_000 });
 * console.log((await (await fetch(new Request("http://127.0.0.1/"))).text()).startsWith("ocipart/"));
 * // true
 * ```
 */
export function layeredFetch(inner: Fetch, layers: FetchLayers): Fetch {
  const timeout = validateStallTimeout(layers.stallTimeoutMs);
  const watched = timeout !== 0 && timeout !== Infinity;
  const { limiter } = layers;
  return async (request) => {
    const exchange = watched ? watchExchange(namedRequest(request), timeout) : undefined;
    let sent = exchange?.request ?? namedRequest(request);
    if (limiter !== undefined) sent = limitedRequest(sent, limiter);
    let response: Response;
    try {
      response = await inner(sent);
    } catch (err) {
      throw exchange === undefined ? err : exchange.failed(err);
    }
    if (limiter !== undefined) response = limitedResponse(response, limiter, sent.signal);
    return exchange === undefined ? response : exchange.answered(response);
  };
}
