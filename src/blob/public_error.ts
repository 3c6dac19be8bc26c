/**
 * The one place where blob-library errors get their sentinel, at the API boundary.
 *
 * @module
 */
import { findError, isAbortError } from "../errors/find_error.ts";
import { HttpStatusError } from "../errors/kinds.ts";
import {
  NotFoundError,
  SentinelError,
  TooLargeError,
  UnauthorizedError,
} from "../errors/sentinels.ts";

/**
 * Attaches the sentinel that a registry-origin status implies in front of `err`: 404 →
 * `NotFoundError`, 401/403 → `UnauthorizedError`, 413 → `TooLargeError`. Off-origin statuses,
 * aborts and chains that already carry a sentinel are returned unchanged.
 *
 * @example
 * ```ts
 * import { toPublicError } from "./public_error.ts";
 * import { HttpStatusError, NotFoundError } from "../errors/mod.ts";
 * const err = toPublicError(new HttpStatusError("GET blob", { status: 404 }));
 * console.log(err instanceof NotFoundError); // true
 * ```
 */
export function toPublicError(err: unknown): unknown {
  if (isAbortError(err) || findError(err, SentinelError) !== undefined) return err;
  const http = findError(err, HttpStatusError);
  if (http === undefined || http.offOrigin) return err;
  const message = err instanceof Error ? err.message : http.message;
  const options = { cause: err, status: http.status };
  switch (http.status) {
    case 404:
      return new NotFoundError(message, options);
    case 401:
    case 403:
      return new UnauthorizedError(message, options);
    case 413:
      return new TooLargeError(message, options);
    default:
      return err;
  }
}
