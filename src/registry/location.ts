/**
 * Upload-session `Location` resolution and the commit digest parameter.
 *
 * @module
 */
import { LocationError } from "../errors/kinds.ts";

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
// Spaces, control characters and backslashes are refused outright: the URL parser would
// silently strip or reinterpret them, so what is requested would differ from what was sent.
// deno-lint-ignore no-control-regex
const FORBIDDEN = /[\u0000-\u0020\u007f\\]/;

/** Returns the authority after a leading `//`, or undefined when `rest` has none. */
function authorityOf(rest: string): string | undefined {
  if (!rest.startsWith("//")) return undefined;
  const after = rest.slice(2);
  const end = after.search(/[/?#]/);
  return end < 0 ? after : after.slice(0, end);
}

/**
 * Resolves an upload `Location` header against the URL of the request that returned it: a
 * relative reference (`/v2/...`, `./x`, `?q`) or an absolute `http:`/`https:` URL on any
 * origin. The fragment is dropped. Rejected, with a {@linkcode LocationError} whose `rule` is:
 *
 * - `missing`: no header; `empty`: an empty or blank value;
 * - `malformed`: unparseable, or with spaces, control characters or backslashes;
 * - `hostless`: an absolute or scheme-relative URL with no host (`http:///x`, `http:x`);
 * - `credentials`: userinfo in the URL (`https://u:p@h/x`);
 * - `unsupported-scheme`: anything but `http:` and `https:` (`ftp:`, `file:`, `data:`);
 * - `https-to-http`: an `http:` location answered to an `https:` request.
 *
 * The error never contains any part of the location.
 *
 * @example Resolving a relative session location
 * ```ts
 * import { resolveLocation } from "./location.ts";
 * const base = new URL("https://registry.example/v2/org/data/blobs/uploads/");
 * const url = resolveLocation("/v2/org/data/blobs/uploads/abc?_state=x", base, "POST blob upload");
 * console.log(url.href); // "https://registry.example/v2/org/data/blobs/uploads/abc?_state=x"
 * ```
 */
export function resolveLocation(value: string | null, base: URL, operation: string): URL {
  if (value === null) throw new LocationError(operation, "missing");
  if (value.trim() === "") throw new LocationError(operation, "empty");
  if (FORBIDDEN.test(value)) throw new LocationError(operation, "malformed");
  const scheme = SCHEME.exec(value);
  let authority: string | undefined;
  if (scheme !== null) {
    const name = scheme[1]!.toLowerCase();
    if (name !== "http" && name !== "https") {
      throw new LocationError(operation, "unsupported-scheme");
    }
    authority = authorityOf(value.slice(scheme[0].length));
    // `http:x` would silently resolve against the base; `http:///x` would take `x` as host.
    if (authority === undefined || authority === "") {
      throw new LocationError(operation, "hostless");
    }
  } else {
    authority = authorityOf(value);
    if (authority === "") throw new LocationError(operation, "hostless");
  }
  if (authority !== undefined && authority.includes("@")) {
    throw new LocationError(operation, "credentials");
  }
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    // The parser's own message quotes the input: never chain it.
    throw new LocationError(operation, "malformed");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new LocationError(operation, "unsupported-scheme");
  }
  if (url.hostname === "") throw new LocationError(operation, "hostless");
  if (url.username !== "" || url.password !== "") {
    throw new LocationError(operation, "credentials");
  }
  if (base.protocol === "https:" && url.protocol === "http:") {
    throw new LocationError(operation, "https-to-http");
  }
  url.hash = "";
  return url;
}

function isDigestParameter(segment: string): boolean {
  const equals = segment.indexOf("=");
  const name = equals < 0 ? segment : segment.slice(0, equals);
  if (name === "digest") return true;
  if (!name.includes("%")) return false;
  try {
    return decodeURIComponent(name) === "digest";
  } catch {
    return false;
  }
}

/**
 * Returns a copy of `url` whose query carries `digest=<digest>` for the commit PUT. An existing
 * `digest` parameter is replaced in place (any repeats removed); otherwise the parameter is
 * appended. Every other query byte (signatures, session state, their encoding and order) is
 * kept exactly: the query is never re-serialised.
 *
 * @example Committing to a signed location
 * ```ts
 * import { withDigestQuery } from "./location.ts";
 * const url = new URL("https://storage.example/up?X-Amz-Signature=a%2Fb&_state=x%3D%3D");
 * console.log(withDigestQuery(url, "sha256:" + "0".repeat(64)).search.startsWith(
 *   "?X-Amz-Signature=a%2Fb&_state=x%3D%3D&digest=sha256%3A",
 * )); // true
 * ```
 */
export function withDigestQuery(url: URL, digest: string): URL {
  const result = new URL(url.href);
  const parameter = `digest=${encodeURIComponent(digest)}`;
  const query = result.search.slice(1);
  if (query === "") {
    result.search = `?${parameter}`;
    return result;
  }
  const segments = query.split("&");
  let replaced = false;
  const kept: string[] = [];
  for (const segment of segments) {
    if (!isDigestParameter(segment)) {
      kept.push(segment);
    } else if (!replaced) {
      kept.push(parameter);
      replaced = true;
    }
  }
  if (!replaced) kept.push(parameter);
  result.search = `?${kept.join("&")}`;
  return result;
}
