/**
 * The sentinel error classes of both clients (docs/protocol.md#errors-and-exit-codes). A
 * sentinel is attached in front of the error already built (`cause`), so the original stays
 * reachable and at most one sentinel appears in a chain.
 *
 * @module
 */
import { OciError, type OciErrorOptions } from "./oci_error.ts";

/**
 * Common base of the sentinel classes; {@linkcode findError} with this class finds whichever
 * sentinel a chain carries.
 *
 * @example Finding any sentinel
 * ```ts
 * import { findError, NotFoundError, SentinelError } from "@ocipart/ocipart";
 * const err = new Error("wrapped", { cause: new NotFoundError("GET manifest: status 404") });
 * console.log(findError(err, SentinelError)?.code); // "ERR_NOT_FOUND"
 * ```
 */
export class SentinelError extends OciError {
  /** Creates a sentinel with a message prefixed by its meaning. */
  constructor(prefix: string, message: string, options: OciErrorOptions = {}) {
    super(message === "" ? prefix : `${prefix}: ${message}`, options);
  }
}

/**
 * The registry answered 404 for the manifest or blob a request names. Never about a local file.
 *
 * @example Matching
 * ```ts
 * import { findError, NotFoundError } from "@ocipart/ocipart";
 * const err = new NotFoundError("GET manifest: status 404");
 * if (findError(err, NotFoundError)) console.log(err.code); // "ERR_NOT_FOUND"
 * ```
 */
export class NotFoundError extends SentinelError {
  /** Stable identifier: `"ERR_NOT_FOUND"`. */
  override readonly code: string = "ERR_NOT_FOUND";
  /** Creates the sentinel in front of `options.cause`. */
  constructor(message = "", options: OciErrorOptions = {}) {
    super("not found", message, { retryable: false, ...options });
  }
}

/**
 * The registry refused the transfer: 401 (wants credentials) or 403 (credentials do not reach
 * the repository, or a proxy refused).
 *
 * @example Matching
 * ```ts
 * import { UnauthorizedError } from "@ocipart/ocipart";
 * const err = new UnauthorizedError("PUT manifest: status 401");
 * console.log(err.message); // "unauthorized: PUT manifest: status 401"
 * ```
 */
export class UnauthorizedError extends SentinelError {
  /** Stable identifier: `"ERR_UNAUTHORIZED"`. */
  override readonly code: string = "ERR_UNAUTHORIZED";
  /** Creates the sentinel in front of `options.cause`. */
  constructor(message = "", options: OciErrorOptions = {}) {
    super("unauthorized", message, { retryable: false, ...options });
  }
}

/**
 * The registry answered 413 for an upload.
 *
 * @example Matching
 * ```ts
 * import { TooLargeError } from "@ocipart/ocipart";
 * const err = new TooLargeError("PUT blob upload: status 413");
 * console.log(err.code); // "ERR_TOO_LARGE"
 * ```
 */
export class TooLargeError extends SentinelError {
  /** Stable identifier: `"ERR_TOO_LARGE"`. */
  override readonly code: string = "ERR_TOO_LARGE";
  /** Creates the sentinel in front of `options.cause`. */
  constructor(message = "", options: OciErrorOptions = {}, prefix = "too large") {
    super(prefix, message, { retryable: false, ...options });
  }
}

/**
 * The registry answered 413 for a part of a parted push; the message names the part index.
 * It is also a {@linkcode TooLargeError}.
 *
 * @example Matching
 * ```ts
 * import { PartTooLargeError, TooLargeError } from "@ocipart/ocipart";
 * const err = new PartTooLargeError("part 3: PUT blob upload: status 413");
 * console.log(err instanceof TooLargeError, err.code); // true "ERR_PART_TOO_LARGE"
 * ```
 */
export class PartTooLargeError extends TooLargeError {
  /** Stable identifier: `"ERR_PART_TOO_LARGE"`. */
  override readonly code: string = "ERR_PART_TOO_LARGE";
  /** Creates the sentinel in front of `options.cause`. */
  constructor(message = "", options: OciErrorOptions = {}) {
    super(message, options, "part too large");
  }
}

/**
 * Bytes did not hash to the expected digest. The message names the part (parted) or the
 * operation (blob), never the digest.
 *
 * @example Matching
 * ```ts
 * import { DigestMismatchError } from "@ocipart/ocipart";
 * const err = new DigestMismatchError("part 0");
 * console.log(err.message); // "digest mismatch: part 0"
 * ```
 */
export class DigestMismatchError extends SentinelError {
  /** Stable identifier: `"ERR_DIGEST_MISMATCH"`. */
  override readonly code: string = "ERR_DIGEST_MISMATCH";
  /** Creates the sentinel. */
  constructor(message = "", options: OciErrorOptions = {}) {
    super("digest mismatch", message, { retryable: false, ...options });
  }
}

/**
 * The reference resolves to something that is not a parted artifact: an image, another
 * artifact, another artifactType or a manifest media type that is not an OCI image manifest.
 *
 * @example Matching
 * ```ts
 * import { NotPartedArtifactError } from "@ocipart/ocipart";
 * const err = new NotPartedArtifactError("artifactType differs");
 * console.log(err.code); // "ERR_NOT_PARTED_ARTIFACT"
 * ```
 */
export class NotPartedArtifactError extends SentinelError {
  /** Stable identifier: `"ERR_NOT_PARTED_ARTIFACT"`. */
  override readonly code: string = "ERR_NOT_PARTED_ARTIFACT";
  /** Creates the sentinel. */
  constructor(message = "", options: OciErrorOptions = {}) {
    super("not a parted artifact", message, { retryable: false, ...options });
  }
}
