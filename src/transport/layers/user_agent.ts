/**
 * The package's version and the `User-Agent` every request of both clients carries.
 *
 * @module
 */
import { requestWith } from "../request_signal.ts";

/**
 * The package version; kept equal to `deno.json`'s `version` (a test checks it).
 *
 * @example The version a program reports
 * ```ts
 * import { VERSION } from "@ocipart/ocipart";
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
export const USER_AGENT: string = `ocipart/${VERSION}`;

/**
 * `request` carrying {@linkcode USER_AGENT}, or `request` itself when it names a `User-Agent`
 * of its own; its body passes on as the same stream, so transports still recognise it.
 *
 * @example
 * ```ts
 * import { namedRequest, USER_AGENT } from "./user_agent.ts";
 * const request = namedRequest(new Request("http://127.0.0.1/"));
 * console.log(request.headers.get("user-agent") === USER_AGENT); // true
 * ```
 */
export function namedRequest(request: Request): Request {
  if (request.headers.has("user-agent")) return request;
  const headers = new Headers(request.headers);
  headers.set("user-agent", USER_AGENT);
  return requestWith(
    request,
    request.body === null
      ? { headers }
      : { headers, body: request.body, duplex: "half" } as RequestInit,
  );
}
