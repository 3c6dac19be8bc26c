/**
 * The one wrapper from whatever a transport or a body stream threw to a library error.
 *
 * @module
 */
import { isAbortError } from "./find_error.ts";
import { NetworkError } from "./kinds.ts";
import { OciError } from "./oci_error.ts";

/**
 * Classifies a failure of `operation`: when `signal` ended, its reason; an error a library
 * layer already built (an `OciError`) or an abort, unchanged; anything else (a caller's fetch
 * throws `TypeError`, a body stream errors) a retryable `NetworkError` "`<operation>: <what>`"
 * whose raw text stays in `cause`, never in the message.
 *
 * @example A raw body failure becomes a retryable NetworkError
 * ```ts
 * import { asNetworkFailure } from "./network_failure.ts";
 * const err = asNetworkFailure("GET blob", new TypeError("reset"), undefined, "body read failed");
 * console.log((err as Error).message); // "GET blob: body read failed"
 * ```
 */
export function asNetworkFailure(
  operation: string,
  err: unknown,
  signal?: AbortSignal,
  what = "request failed",
): unknown {
  if (signal?.aborted) return signal.reason;
  if (err instanceof OciError || isAbortError(err)) return err;
  return new NetworkError(`${operation}: ${what}`, { cause: err });
}
