/**
 * Classification of a response body that failed while it was read.
 *
 * @module
 */
import { NetworkError } from "../errors/kinds.ts";
import { OciError } from "../errors/oci_error.ts";

/**
 * Returns `err` when it already classifies itself, otherwise a retryable `NetworkError` for
 * `operation` with `err` as cause: a body that broke mid-stream is worth resuming.
 *
 * @example
 * ```ts
 * import { bodyError } from "./body_error.ts";
 * console.log(bodyError(new Error("reset"), "GET blob").message); // "GET blob: response body failed"
 * ```
 */
export function bodyError(err: unknown, operation: string): Error {
  if (err instanceof OciError && err.retryable !== undefined) return err;
  return new NetworkError(`${operation}: response body failed`, { cause: err });
}
