/**
 * The one place where a failure gets its sentinel, at the public boundary of both clients.
 *
 * @module
 */
import { findError, isAbortError } from "./find_error.ts";
import { HttpStatusError } from "./kinds.ts";
import { OciError, type OciErrorOptions } from "./oci_error.ts";
import { NotFoundError, SentinelError, TooLargeError, UnauthorizedError } from "./sentinels.ts";

/** Options of {@linkcode attachSentinel}. */
export interface AttachSentinelOptions {
  /** The part the failure belongs to: its message is prefixed with `part <index>: `. */
  partIndex?: number;
  /** The sentinel of a 413; `TooLargeError` unless a client names a subclass. */
  tooLarge?: new (message: string, options: OciErrorOptions) => TooLargeError;
}

/**
 * Attaches the sentinel a registry-origin status implies in front of `err`: 404 →
 * `NotFoundError`, 401/403 → `UnauthorizedError`, 413 → `TooLargeError` (or the client's
 * subclass). An abort, a chain that already carries a sentinel, an answer from another origin
 * (storage, a redirect target), a status that was only retried (not the one that decided the
 * outcome) and every other status are returned unchanged.
 *
 * @example A registry 404 becomes NotFoundError
 * ```ts
 * import { attachSentinel } from "./attach_sentinel.ts";
 * import { HttpStatusError, NotFoundError } from "./mod.ts";
 * const err = attachSentinel(new HttpStatusError("GET blob", { status: 404 }));
 * console.log(err instanceof NotFoundError, (err as Error).message);
 * // true "not found: GET blob: status 404"
 * ```
 */
export function attachSentinel(err: unknown, options: AttachSentinelOptions = {}): unknown {
  if (isAbortError(err) || findError(err, SentinelError) !== undefined) return err;
  const http = findError(err, HttpStatusError);
  if (http === undefined || http.offOrigin || http.retryable === true) return err;
  const text = err instanceof OciError ? err.message : http.message;
  const message = options.partIndex === undefined ? text : `part ${options.partIndex}: ${text}`;
  const sentinelOptions = { cause: err, status: http.status };
  switch (http.status) {
    case 404:
      return new NotFoundError(message, sentinelOptions);
    case 401:
    case 403:
      return new UnauthorizedError(message, sentinelOptions);
    case 413:
      return new (options.tooLarge ?? TooLargeError)(message, sentinelOptions);
    default:
      return err;
  }
}
