/**
 * Maps a failed transfer's error to the parted sentinels.
 *
 * @module
 */
import { findError, isAbortError } from "../errors/find_error.ts";
import { HttpStatusError } from "../errors/kinds.ts";
import { OciError } from "../errors/oci_error.ts";
import {
  NotFoundError,
  PartTooLargeError,
  SentinelError,
  UnauthorizedError,
} from "../errors/sentinels.ts";

/**
 * Attaches the sentinel a registry status calls for in front of `err`: 404 → `NotFoundError`,
 * 401/403 → `UnauthorizedError`, 413 → `PartTooLargeError` (naming `partIndex` when known).
 * An error that already carries a sentinel, an abort, an answer from another origin (storage,
 * a redirect target) and every other status are returned unchanged.
 *
 * @example
 * ```ts
 * import { attachSentinel } from "./sentinel.ts";
 * import { HttpStatusError } from "../errors/kinds.ts";
 * const err = attachSentinel(new HttpStatusError("GET manifest", { status: 404 }));
 * console.log((err as Error).message); // "not found: GET manifest: status 404"
 * ```
 */
export function attachSentinel(err: unknown, partIndex?: number): unknown {
  if (isAbortError(err) || findError(err, SentinelError) !== undefined) return err;
  const status = findError(err, HttpStatusError);
  if (status === undefined || status.offOrigin) return err;
  // Only a status that decided the outcome counts: one hidden under a retried failure does not.
  if (status.retryable === true) return err;
  const message = err instanceof OciError ? err.message : status.message;
  const part = partIndex === undefined ? "" : `part ${partIndex}: `;
  switch (status.status) {
    case 404:
      return new NotFoundError(`${part}${message}`, { cause: err });
    case 401:
    case 403:
      return new UnauthorizedError(`${part}${message}`, { cause: err });
    case 413:
      return new PartTooLargeError(`${part}${message}`, { cause: err });
    default:
      return err;
  }
}
