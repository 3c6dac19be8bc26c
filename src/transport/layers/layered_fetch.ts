/**
 * The layers every request of a client's route passes, applied in one call: the credential
 * (when the route authenticates), the User-Agent, the stall watchdog and the bandwidth cap, in
 * that order on the way out (the answer's body is capped, then watched, on the way back). One
 * call instead of one wrapper per layer keeps a request's path short and says the order in one
 * place.
 *
 * The credential step is a function value the stack passes in ({@linkcode Authorize}): the
 * transport decides no credential and imports no credential code.
 *
 * @module
 */
import type { Fetch } from "../fetch.ts";
import { limitedRequest, limitedResponse, type RateLimiter } from "./rate_limit.ts";
import { validateStallTimeout, watchExchange } from "./stall_guard.ts";
import { namedRequest } from "./user_agent.ts";
import { signalOf } from "../request_signal.ts";

/** What {@linkcode layeredFetch} applies. */
export interface FetchLayers {
  /** Fail an exchange that moves no bytes for this long (ms; 0 or `Infinity`: never). */
  stallTimeoutMs?: number;
  /** The client's one bandwidth cap, shared by all its routes; none by default. */
  limiter?: RateLimiter;
  /** Sets each request's credential and answers a refusal; none by default. */
  authorize?: Authorize;
}

/**
 * Decides the credential of a request; the first round of the exchange. Called once per
 * request; the rounds after a refusal come from {@linkcode AuthorizedRound.next}.
 */
export type Authorize = (request: Request) => Promise<AuthorizedRound>;

/** One round of an authorized request. */
export interface AuthorizedRound {
  /** The request as sent this round, with its credential (its body is the caller's own). */
  request: Request;
  /**
   * Given this round's answer: the next round, when a refusal is worth another credential, or
   * undefined to hand the answer back. It releases a refused answer it does not hand back, and
   * may throw (a request whose body cannot be sent again).
   */
  next(response: Response): Promise<AuthorizedRound | undefined>;
}

/**
 * `inner` with each request's credential set by `authorize`, sent again with another one for
 * as long as `authorize` says a refusal is worth it.
 *
 * @example A fixed credential, asked for again after a refusal
 * ```ts
 * import { authorizedFetch, type AuthorizedRound } from "./layered_fetch.ts";
 * const registry = (request: Request) => {
 *   const status = request.headers.has("authorization") ? 200 : 401;
 *   return Promise.resolve(new Response(null, { status }));
 * };
 * const round = (request: Request, header?: string): AuthorizedRound => {
 *   const headers = new Headers(request.headers);
 *   if (header !== undefined) headers.set("authorization", header);
 *   const refused = (answer: Response) => answer.status === 401 && header === undefined;
 *   return {
 *     request: new Request(request, { headers }),
 *     next: (answer) => Promise.resolve(refused(answer) ? round(request, "Basic eDp5") : undefined),
 *   };
 * };
 * const fetch = authorizedFetch(registry, (request) => Promise.resolve(round(request)));
 * console.log((await fetch(new Request("http://127.0.0.1/v2/"))).status); // 200
 * ```
 */
export function authorizedFetch(inner: Fetch, authorize: Authorize): Fetch {
  return async (request) => {
    let round = await authorize(request);
    for (;;) {
      const response = await inner(round.request);
      const next = await round.next(response);
      if (next === undefined) return response;
      round = next;
    }
  };
}

/**
 * `inner` behind the layers: every request carries the credential `authorize` decides (each
 * round of a refusal is one exchange through the other layers), names the package (unless it
 * names itself), a silent exchange fails after the stall timeout (one attempt of the retry
 * budget instead of a hang), and bodies in both directions draw from the cap. Bodies keep their
 * fast paths.
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
  const { limiter, authorize } = layers;
  const layered: Fetch = async (request) => {
    const exchange = watched ? watchExchange(namedRequest(request), timeout) : undefined;
    let sent = exchange?.request ?? namedRequest(request);
    if (limiter !== undefined) sent = limitedRequest(sent, limiter);
    let response: Response;
    try {
      response = await inner(sent);
    } catch (err) {
      throw exchange === undefined ? err : exchange.failed(err);
    }
    if (limiter !== undefined) response = limitedResponse(response, limiter, signalOf(sent));
    return exchange === undefined ? response : exchange.answered(response);
  };
  return authorize === undefined ? layered : authorizedFetch(layered, authorize);
}
