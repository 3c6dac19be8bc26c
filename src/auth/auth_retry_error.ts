/**
 * The error an authenticated transport raises when a refused request carried a body.
 *
 * @module
 */
import { OciError, type OciErrorOptions } from "../errors/oci_error.ts";

/**
 * A request with a body was refused (401, or 403 with a challenge) and the credential has been
 * renewed, but the body cannot be produced twice, so the request is not replayed here. It is
 * retryable: the caller's retry loop rebuilds the request (a part PUT re-streamed from disk),
 * which then carries the renewed credential. `status` keeps the refusal's status.
 *
 * @example Letting a retry loop rebuild the request
 * ```ts
 * import { AuthRetryError } from "@ocipart/ocipart/auth";
 * import { retryable } from "@ocipart/ocipart";
 * const err = new AuthRetryError("PUT", { status: 401 });
 * console.log(err.code, retryable(err).retryable); // "ERR_AUTH_RETRY" true
 * ```
 */
export class AuthRetryError extends OciError {
  /** Always `"ERR_AUTH_RETRY"`. */
  override readonly code: string = "ERR_AUTH_RETRY";
  /** Creates the retryable error for a request of `method`. */
  constructor(method: string, options: OciErrorOptions = {}) {
    super(
      `${method} request: credential renewed after a refusal; the request must be sent again`,
      { retryable: true, ...options },
    );
  }
}
