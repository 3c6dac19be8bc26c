/**
 * The package's version and the `User-Agent` every request of both clients carries.
 *
 * @module
 */
import type { Fetch } from "./fetch.ts";

/**
 * The package version; kept equal to `deno.json`'s `version` (a test checks it).
 *
 * @example
 * ```ts
 * import { VERSION } from "./user_agent.ts";
 * console.log(/^\d+\.\d+\.\d+/.test(VERSION)); // true
 * ```
 */
export const VERSION = "0.1.0";

/**
 * The `User-Agent` of the package's requests: `ocipart/<version>`.
 *
 * @example
 * ```ts
 * import { USER_AGENT } from "./user_agent.ts";
 * console.log(USER_AGENT.startsWith("ocipart/")); // true
 * ```
 */
export const USER_AGENT = `ocipart/${VERSION}`;

/**
 * Wraps `fetch` so that every request carries {@linkcode USER_AGENT} unless it already names
 * a `User-Agent` of its own (a caller's choice wins).
 *
 * @example
 * ```ts
 * import { USER_AGENT, withUserAgent } from "./user_agent.ts";
 * const echo = withUserAgent((request) =>
 *   Promise.resolve(new Response(request.headers.get("user-agent")))
 * );
 * console.log(await (await echo(new Request("http://127.0.0.1/"))).text() === USER_AGENT); // true
 * ```
 */
export function withUserAgent(fetch: Fetch): Fetch {
  return (request) => {
    if (request.headers.has("user-agent")) return fetch(request);
    const headers = new Headers(request.headers);
    headers.set("user-agent", USER_AGENT);
    // The body is passed on as the same stream so that transports still recognise it.
    return fetch(
      new Request(
        request,
        request.body === null
          ? { headers }
          : { headers, body: request.body, duplex: "half" } as RequestInit,
      ),
    );
  };
}
