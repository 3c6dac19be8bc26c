/**
 * Expected-status checks with bounded error bodies, and the identity-encoding rule.
 *
 * @module
 */
import { ContentEncodingError, HttpStatusError, ProtocolError } from "../errors/kinds.ts";
import { isRetryableStatus } from "../errors/retryable.ts";

import { discard } from "./discard.ts";
import { parseRetryAfter } from "./retry_after.ts";
/** How many bytes of an error body {@linkcode expectStatus} keeps by default. */
export const ERROR_BODY_LIMIT = 4096;

/** Options of {@linkcode expectStatus}. */
export interface ExpectStatusOptions {
  /**
   * The response came from another origin than the registry (object storage, a CDN): 401,
   * 403, 404 and 410 become retryable, and the body is dropped unread because it may echo a
   * signed URL.
   */
  offOrigin?: boolean;
  /** How many bytes of the error body to keep; default {@linkcode ERROR_BODY_LIMIT}. */
  bodyLimit?: number;
  /** Wall-clock epoch milliseconds to resolve an HTTP-date Retry-After against. */
  nowMs?: number;
}

/**
 * Reads at most `limit` bytes of a response body and cancels the rest, so an error answer of
 * any size costs bounded memory and time. A body that fails while being read yields the bytes
 * read so far; reading an error body is best effort.
 *
 * @example Keeping the start of an error body
 * ```ts
 * import { readBoundedBody } from "./status.ts";
 * const body = await readBoundedBody(new Response("x".repeat(10_000)), 16);
 * console.log(body.byteLength); // 16
 * ```
 */
export async function readBoundedBody(
  response: Response,
  limit: number = ERROR_BODY_LIMIT,
): Promise<Uint8Array> {
  if (response.body === null || response.bodyUsed) return new Uint8Array();
  const out = new Uint8Array(Math.max(0, limit));
  let length = 0;
  const reader = response.body.getReader();
  try {
    while (length < limit) {
      const { done, value } = await reader.read();
      if (done) return out.slice(0, length);
      const take = Math.min(value.byteLength, limit - length);
      out.set(value.subarray(0, take), length);
      length += take;
    }
  } catch {
    return out.slice(0, length);
  }
  reader.cancel().catch(() => {});
  return out.slice(0, length);
}

/**
 * Resolves when `response.status` is one of `expected` and leaves the body untouched.
 * Otherwise rejects, after releasing the body:
 *
 * - an unexpected 2xx is never promoted to success: {@linkcode ProtocolError};
 * - any other status: {@linkcode HttpStatusError} with `status`, `retryable` from
 *   `isRetryableStatus(status, offOrigin)`, `retryAfterMs` from Retry-After, and at most
 *   `bodyLimit` bytes of the body in `body` (never in the message). A 416 body is never read
 *   (registries send malformed ones), nor is an off-origin body.
 *
 * @example Checking a blob HEAD
 * ```ts
 * import { expectStatus } from "./status.ts";
 * await expectStatus(new Response(null, { status: 200 }), [200], "HEAD blob");
 * try {
 *   await expectStatus(new Response("no", { status: 404 }), [200], "HEAD blob");
 * } catch (err) {
 *   console.log((err as Error).message); // "HEAD blob: status 404"
 * }
 * ```
 */
export async function expectStatus(
  response: Response,
  expected: readonly number[],
  operation: string,
  options: ExpectStatusOptions = {},
): Promise<void> {
  const status = response.status;
  if (expected.includes(status)) return;
  if (status >= 200 && status <= 299) {
    discard(response);
    throw new ProtocolError(`${operation}: unexpected status ${status}`, { status });
  }
  const offOrigin = options.offOrigin ?? false;
  let body: Uint8Array;
  if (status === 416 || offOrigin) {
    discard(response);
    body = new Uint8Array();
  } else {
    body = await readBoundedBody(response, options.bodyLimit ?? ERROR_BODY_LIMIT);
  }
  throw new HttpStatusError(operation, {
    status,
    body,
    offOrigin,
    retryable: isRetryableStatus(status, offOrigin),
    retryAfterMs: parseRetryAfter(response.headers.get("retry-after"), options.nowMs ?? Date.now()),
  });
}

/**
 * Throws unless the response is identity-encoded (no `Content-Encoding`, or `identity`):
 * the hashed bytes must equal the stored bytes. The refused body is released.
 *
 * @throws {ContentEncodingError} Any other content coding; not retryable.
 *
 * @example Refusing a gzipped blob
 * ```ts
 * import { requireIdentityEncoding } from "./status.ts";
 * const gz = new Response("x", { headers: { "content-encoding": "gzip" } });
 * try {
 *   requireIdentityEncoding(gz, "GET blob");
 * } catch (err) {
 *   console.log((err as Error).name); // "ContentEncodingError"
 * }
 * ```
 */
export function requireIdentityEncoding(response: Response, operation: string): void {
  const value = response.headers.get("content-encoding");
  if (value === null) return;
  const codings = value.split(",").map((c) => c.trim().toLowerCase()).filter((c) => c !== "");
  if (codings.every((c) => c === "identity")) return;
  discard(response);
  throw new ContentEncodingError(operation);
}

/**
 * The OCI error codes (`{"errors":[{"code":"DIGEST_INVALID",…}]}`) of the error body an
 * `HttpStatusError` kept; empty when the body is absent or not that JSON.
 *
 * @example Reading the codes of a refusal
 * ```ts
 * import { registryErrorCodes } from "./status.ts";
 * import { HttpStatusError } from "../errors/mod.ts";
 * const body = new TextEncoder().encode('{"errors":[{"code":"DIGEST_INVALID"}]}');
 * console.log(registryErrorCodes(new HttpStatusError("PUT blob upload", { status: 400, body })));
 * // [ "DIGEST_INVALID" ]
 * ```
 */
export function registryErrorCodes(err: HttpStatusError): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(err.body));
  } catch {
    return [];
  }
  const errors = (parsed as { errors?: unknown } | null)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors.flatMap((e) => typeof e?.code === "string" ? [e.code as string] : []);
}
