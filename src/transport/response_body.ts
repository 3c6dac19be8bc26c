/**
 * The one way a transport layer hands on an answer with a body of its own (watched, observed,
 * relayed): same status, headers and URL; and the statuses whose answers have no body at all.
 *
 * @module
 */

/**
 * Statuses whose answer has no body, whatever its head says: a client reads none after the head
 * and a `Response` with one of them is built with a null body (1xx answers never become a
 * `Response`).
 *
 * @example An answer that ends at its head
 * ```ts
 * import { BODILESS_STATUSES } from "./response_body.ts";
 * console.log(BODILESS_STATUSES.has(204), BODILESS_STATUSES.has(200)); // true false
 * ```
 */
export const BODILESS_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

/**
 * `response` with `body` in place of its own; the URL is kept (or set to `url`), since a
 * `Response` built by hand has none.
 *
 * @example A relayed body keeps the answer's status and URL
 * ```ts
 * import { withBody } from "./response_body.ts";
 * const answer = withBody(new Response("a", { status: 201 }), "b", "http://127.0.0.1/x");
 * console.log(answer.status, answer.url, await answer.text()); // 201 "http://127.0.0.1/x" "b"
 * ```
 */
export function withBody(
  response: Response,
  body: BodyInit | null,
  url: string = response.url,
): Response {
  const replaced = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  if (url !== "") Object.defineProperty(replaced, "url", { value: url });
  return replaced;
}
