/**
 * The transport shape both libraries use.
 *
 * @module
 */

/**
 * A fetch-shaped transport: takes a complete `Request`, resolves to its `Response`. It must not
 * follow redirects (return the 3xx as is). `globalThis.fetch` bound with `redirect: "manual"`,
 * an authenticated wrapper, or the package's default `HttpTransport` fit.
 *
 * @example Wrapping a transport to log methods
 * ```ts
 * import type { Fetch } from "@ocipart/ocipart";
 * const logging = (inner: Fetch): Fetch => (request) => {
 *   console.log(request.method);
 *   return inner(request);
 * };
 * ```
 */
export type Fetch = (request: Request) => Promise<Response>;
