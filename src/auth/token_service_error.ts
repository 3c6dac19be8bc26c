/**
 * The error of a token service that could not be reached.
 *
 * @module
 */
import { NetworkError } from "../errors/kinds.ts";
import type { OciErrorOptions } from "../errors/oci_error.ts";

/**
 * The token service a registry's challenge named could not be reached (its name does not
 * resolve, the connection was refused, its certificate is not trusted): a failure of the
 * registry's authentication service, not of the registry. The transport's error is the `cause`,
 * whose reason and retry classification it keeps; the message never names the realm, which is
 * text the registry chose.
 *
 * @example Telling a token service's failure from the registry's
 * ```ts
 * import { TokenServiceError } from "@ocipart/ocipart/auth";
 * import { findError } from "@ocipart/ocipart";
 * const err = new TokenServiceError({ cause: new Error("getaddrinfo ENOTFOUND"), retryable: false });
 * console.log(findError(err, TokenServiceError)?.message);
 * // "token request: the registry's token service could not be reached"
 * ```
 */
export class TokenServiceError extends NetworkError {
  /** Wraps the transport's failure (`cause`), keeping its retry classification. */
  constructor(options: OciErrorOptions = {}) {
    super("token request: the registry's token service could not be reached", options);
  }
}
