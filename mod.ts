/**
 * Move very large files and blobs through OCI registries.
 *
 * @example Classifying an error
 * ```ts
 * import { findError, NotFoundError } from "./mod.ts";
 * const err: unknown = new NotFoundError("GET manifest: status 404");
 * console.log(findError(err, NotFoundError) !== undefined); // true
 * ```
 *
 * @module
 */
export * from "./src/errors/mod.ts";
export * from "./src/transport/mod.ts";
export * from "./src/blob/mod.ts";
export * from "./src/parted/mod.ts";
export * from "./src/auth/mod.ts";
