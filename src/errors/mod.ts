/**
 * Error classes with stable `code`s shared by both libraries, and the helpers that inspect
 * them: {@linkcode findError} (walks `cause`, like Go's `errors.As`), {@linkcode statusCode},
 * {@linkcode retryable}.
 *
 * Sentinel classes: {@linkcode NotFoundError}, {@linkcode UnauthorizedError},
 * {@linkcode TooLargeError} (with {@linkcode PartTooLargeError}), {@linkcode DigestMismatchError},
 * {@linkcode NotPartedArtifactError}. At most one sentinel appears in a chain.
 *
 * @example Matching a sentinel
 * ```ts
 * import { findError, NotFoundError } from "@ocipart/ocipart/errors";
 * const err: unknown = new Error("pull", { cause: new NotFoundError("GET manifest: status 404") });
 * if (findError(err, NotFoundError)) console.log("no such artifact");
 * ```
 *
 * @module
 */
export * from "./oci_error.ts";
export * from "./sentinels.ts";
export * from "./kinds.ts";
export { causeChain, type ErrorClass, findError } from "./find_error.ts";
export { statusCode } from "./status_code.ts";
export { retryable, type RetryClassification } from "./retryable.ts";
