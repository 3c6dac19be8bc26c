/**
 * Reads the retained HTTP status of an error.
 *
 * @module
 */
import { causeChain } from "./find_error.ts";
import { OciError } from "./oci_error.ts";

/**
 * Returns the first HTTP status retained anywhere in the `cause` chain, or `undefined`.
 *
 * @example The status below a wrapped error
 * ```ts
 * import { statusCode } from "@ocipart/ocipart";
 * import { HttpStatusError } from "@ocipart/ocipart/errors";
 * const err = new Error("wrapped", { cause: new HttpStatusError("HEAD blob", { status: 404 }) });
 * console.log(statusCode(err)); // 404
 * ```
 */
export function statusCode(err: unknown): number | undefined {
  for (const link of causeChain(err)) {
    if (link instanceof OciError && link.status !== undefined) return link.status;
  }
  return undefined;
}
