/**
 * Error classes without a sentinel. Each has a stable `code` and a safe message.
 *
 * @module
 */
import { OciError, type OciErrorOptions } from "./oci_error.ts";

/**
 * Options of {@linkcode HttpStatusError}.
 *
 * @example A retryable status with the start of its body
 * ```ts
 * import { HttpStatusError, type HttpStatusErrorOptions } from "@ocipart/ocipart/errors";
 * const options: HttpStatusErrorOptions = {
 *   status: 503,
 *   retryable: true,
 *   body: new TextEncoder().encode('{"errors":[]}'),
 * };
 * console.log(new HttpStatusError("GET blob", options).message); // "GET blob: status 503"
 * ```
 */
export interface HttpStatusErrorOptions extends OciErrorOptions {
  /** The HTTP status the server answered. */
  status: number;
  /** At most a few KiB of the response body, kept for programs, never rendered. */
  body?: Uint8Array;
  /** True when the response came from another origin than the registry (storage, CDN). */
  offOrigin?: boolean;
}

/**
 * A server answered with a status the operation did not expect. The bounded body is kept in
 * `body` for programmatic inspection and never appears in `message`.
 *
 * @example Inspecting a status
 * ```ts
 * import { HttpStatusError } from "@ocipart/ocipart/errors";
 * const err = new HttpStatusError("HEAD blob", { status: 503, retryable: true });
 * console.log(err.message, err.status); // "HEAD blob: status 503" 503
 * ```
 */
export class HttpStatusError extends OciError {
  /** Stable identifier: `"ERR_HTTP_STATUS"`. */
  override readonly code: string = "ERR_HTTP_STATUS";
  /** The HTTP status the server answered. */
  declare readonly status: number;
  /** The fixed operation name, e.g. `"PUT blob upload"`. */
  readonly operation: string;
  /** The bounded response body (may be empty). Never rendered. */
  readonly body: Uint8Array;
  /** True when the answer came from an origin other than the registry. */
  readonly offOrigin: boolean;
  /** Creates the error for `operation` with a retained status. */
  constructor(operation: string, options: HttpStatusErrorOptions) {
    super(
      `${operation}: ${options.offOrigin ? "storage answered" : "status"} ${options.status}`,
      options,
    );
    this.operation = operation;
    this.body = options.body ?? new Uint8Array();
    this.offOrigin = options.offOrigin ?? false;
  }
}

/**
 * A connection failed, was reset, or a body could not be read: transient unless said otherwise.
 *
 * @example Wrapping a raw failure
 * ```ts
 * import { NetworkError } from "@ocipart/ocipart/errors";
 * const err = new NetworkError("GET blob: connection failed", { cause: new Error("reset") });
 * console.log(err.retryable); // true
 * ```
 */
export class NetworkError extends OciError {
  /** Stable identifier: `"ERR_NETWORK"`. */
  override readonly code: string = "ERR_NETWORK";
  /** Creates a transient error; the raw transport error goes in `cause`. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(message, { retryable: true, ...options });
  }
}

/**
 * A transfer moved no bytes for longer than the stall timeout; transient.
 *
 * @example Its stable code
 * ```ts
 * import { StallError } from "@ocipart/ocipart/errors";
 * console.log(new StallError("GET blob: no bytes for 60 s").code); // "ERR_STALLED"
 * ```
 */
export class StallError extends OciError {
  /** Stable identifier: `"ERR_STALLED"`. */
  override readonly code: string = "ERR_STALLED";
  /** Creates a transient error. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(message, { retryable: true, ...options });
  }
}

/**
 * Work that was retryable failed on every attempt of its budget. Classification and the
 * Retry-After floor of the last failure stay reachable through `cause`.
 *
 * @example The message names the attempts
 * ```ts
 * import { RetriesExhaustedError } from "@ocipart/ocipart/errors";
 * const err = new RetriesExhaustedError("PUT blob upload", 4);
 * console.log(err.message); // "PUT blob upload: failed after 4 attempts"
 * ```
 */
export class RetriesExhaustedError extends OciError {
  /** Stable identifier: `"ERR_RETRIES_EXHAUSTED"`. */
  override readonly code: string = "ERR_RETRIES_EXHAUSTED";
  /** How many attempts were made. */
  readonly attempts: number;
  /** Creates the error; pass the last failure as `cause`. */
  constructor(operation: string, attempts: number, options: OciErrorOptions = {}) {
    super(
      `${operation}: failed after ${attempts} attempt${attempts === 1 ? "" : "s"}`,
      options,
    );
    this.attempts = attempts;
  }
}

/**
 * A server broke the protocol: an unexpected 2xx, an invalid Range or Content-Range, a refused
 * content encoding, a missing header. Terminal unless said otherwise.
 *
 * @example Not retryable
 * ```ts
 * import { ProtocolError } from "@ocipart/ocipart/errors";
 * console.log(new ProtocolError("GET blob: unexpected status 204").retryable); // false
 * ```
 */
export class ProtocolError extends OciError {
  /** Stable identifier: `"ERR_PROTOCOL"`. */
  override readonly code: string = "ERR_PROTOCOL";
  /** Creates a terminal error unless `options.retryable` says otherwise. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(message, { retryable: false, ...options });
  }
}

/**
 * A blob answer's length differs from the size the caller knows: the server sends another
 * blob than expected. A `ProtocolError` (same code) that a client can tell apart by type.
 *
 * @example Telling a wrong-length answer apart
 * ```ts
 * import { LengthMismatchError, ProtocolError } from "@ocipart/ocipart/errors";
 * const err = new LengthMismatchError("GET blob: Content-Length differs from the blob size");
 * console.log(err instanceof ProtocolError); // true
 * ```
 */
export class LengthMismatchError extends ProtocolError {}

/**
 * A response carried a content encoding other than identity; the hashed bytes must equal the
 * stored bytes, so this is refused and not retried.
 *
 * @example The message
 * ```ts
 * import { ContentEncodingError } from "@ocipart/ocipart/errors";
 * console.log(new ContentEncodingError("GET blob").message);
 * ```
 */
export class ContentEncodingError extends OciError {
  /** Stable identifier: `"ERR_CONTENT_ENCODING"`. */
  override readonly code: string = "ERR_CONTENT_ENCODING";
  /** Creates the terminal error for `operation`. */
  constructor(operation: string, options: OciErrorOptions = {}) {
    super(`${operation}: response is not identity-encoded; only identity is accepted`, {
      retryable: false,
      ...options,
    });
  }
}

/**
 * An upload Location (or redirect Location) failed validation: missing, malformed, hostless,
 * credential-bearing, unsupported scheme, or HTTPS to HTTP. The location is never rendered.
 *
 * @example The message names the problem, never the location
 * ```ts
 * import { LocationError } from "@ocipart/ocipart/errors";
 * console.log(new LocationError("POST blob upload", "missing").message);
 * ```
 */
export class LocationError extends OciError {
  /** Stable identifier: `"ERR_LOCATION"`. */
  override readonly code: string = "ERR_LOCATION";
  /** The fixed rule that was broken, e.g. `"https-to-http"`. */
  readonly rule: string;
  /** Creates the terminal error. */
  constructor(operation: string, rule: string, options: OciErrorOptions = {}) {
    super(`${operation}: location rejected (${rule})`, { retryable: false, ...options });
    this.rule = rule;
  }
}

/**
 * A redirect was refused by policy: too many hops, a write redirect that is not 307/308, write
 * redirects disabled, or a non-HTTP(S) or downgrading target. Terminal.
 *
 * @example Its stable code
 * ```ts
 * import { RedirectError } from "@ocipart/ocipart/errors";
 * console.log(new RedirectError("GET blob: too many redirects").code); // "ERR_REDIRECT"
 * ```
 */
export class RedirectError extends OciError {
  /** Stable identifier: `"ERR_REDIRECT"`. */
  override readonly code: string = "ERR_REDIRECT";
  /** Creates the terminal error. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(message, { retryable: false, ...options });
  }
}

/**
 * A connection to a forbidden peer (loopback, private, link-local or unspecified address on a
 * cross-host request) was refused before any byte was sent. Terminal.
 *
 * @example The message names the request, never the address
 * ```ts
 * import { PeerRefusedError } from "@ocipart/ocipart/errors";
 * console.log(new PeerRefusedError("token request").message);
 * ```
 */
export class PeerRefusedError extends OciError {
  /** Stable identifier: `"ERR_PEER_REFUSED"`. */
  override readonly code: string = "ERR_PEER_REFUSED";
  /** Creates the terminal error for `operation`. */
  constructor(operation: string, options: OciErrorOptions = {}) {
    super(`${operation}: destination address refused by the peer guard`, {
      retryable: false,
      ...options,
    });
  }
}

/**
 * A request body was shorter or longer than its declared Content-Length or size.
 *
 * @example Its stable code
 * ```ts
 * import { BodyLengthError } from "@ocipart/ocipart/errors";
 * console.log(new BodyLengthError("PUT blob upload: body shorter than declared").code);
 * ```
 */
export class BodyLengthError extends OciError {
  /** Stable identifier: `"ERR_BODY_LENGTH"`. */
  override readonly code: string = "ERR_BODY_LENGTH";
  /** Creates the terminal error. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(message, { retryable: false, ...options });
  }
}

/**
 * A reference string is malformed: no registry, uppercase repository, neither tag nor digest.
 *
 * @example The message names the problem, never the reference
 * ```ts
 * import { InvalidReferenceError } from "@ocipart/ocipart/errors";
 * const err = new InvalidReferenceError("missing registry");
 * console.log(err.message, err.rule); // "invalid reference: missing registry" "missing registry"
 * ```
 */
export class InvalidReferenceError extends OciError {
  /** Stable identifier: `"ERR_INVALID_REFERENCE"`. */
  override readonly code: string = "ERR_INVALID_REFERENCE";
  /** The fixed rule that was broken, e.g. `"missing repository"`. */
  readonly rule: string;
  /** Creates the terminal error naming the broken rule. */
  constructor(rule: string, options: OciErrorOptions = {}) {
    super(`invalid reference: ${rule}`, { retryable: false, ...options });
    this.rule = rule;
  }
}

/**
 * A manifest claims to be a parted artifact but is structurally broken. The message names only
 * fixed fields, rules and bounded part indexes.
 *
 * @example The message names the broken field
 * ```ts
 * import { InvalidManifestError } from "@ocipart/ocipart/errors";
 * console.log(new InvalidManifestError("layers: count disagrees with the split rule").message);
 * ```
 */
export class InvalidManifestError extends OciError {
  /** Stable identifier: `"ERR_INVALID_MANIFEST"`. */
  override readonly code: string = "ERR_INVALID_MANIFEST";
  /** Creates the terminal error. */
  constructor(rule: string, options: OciErrorOptions = {}) {
    super(`invalid manifest: ${rule}`, { retryable: false, ...options });
  }
}

/**
 * The push source changed while it was read; nothing is retried and no manifest is written.
 *
 * @example The message names the part
 * ```ts
 * import { SourceChangedError } from "@ocipart/ocipart/errors";
 * console.log(new SourceChangedError("part 2").message);
 * ```
 */
export class SourceChangedError extends OciError {
  /** Stable identifier: `"ERR_SOURCE_CHANGED"`. */
  override readonly code: string = "ERR_SOURCE_CHANGED";
  /** Creates the terminal error. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(`source changed during push: ${message}`, { retryable: false, ...options });
  }
}

/**
 * Credentials could not be used: an identity token (refused, never exchanged), a credential
 * helper that failed, or an unreadable docker configuration. Terminal.
 *
 * @example Its stable code
 * ```ts
 * import { CredentialError } from "@ocipart/ocipart/errors";
 * console.log(new CredentialError("identity tokens are not supported").code);
 * ```
 */
export class CredentialError extends OciError {
  /** Stable identifier: `"ERR_CREDENTIAL"`. */
  override readonly code: string = "ERR_CREDENTIAL";
  /** Creates the terminal error. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(`credentials: ${message}`, { retryable: false, ...options });
  }
}

/**
 * An authentication challenge could not be read or answered, or the token endpoint answered
 * without a token. Terminal; never includes challenge text, realm or response body.
 *
 * @example Its stable code
 * ```ts
 * import { AuthChallengeError } from "@ocipart/ocipart/errors";
 * console.log(new AuthChallengeError("token response has no token").code);
 * ```
 */
export class AuthChallengeError extends OciError {
  /** Stable identifier: `"ERR_AUTH_CHALLENGE"`. */
  override readonly code: string = "ERR_AUTH_CHALLENGE";
  /** Creates the terminal error. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(`authentication: ${message}`, { retryable: false, ...options });
  }
}

/**
 * A local file could not be used: a missing, unreadable or non-regular push source, a missing
 * destination directory, or a disk that will not take bytes. Terminal.
 *
 * @example Its stable code
 * ```ts
 * import { LocalFileError } from "@ocipart/ocipart/errors";
 * console.log(new LocalFileError("push source is not a regular file").code);
 * ```
 */
export class LocalFileError extends OciError {
  /** Stable identifier: `"ERR_LOCAL_FILE"`. */
  override readonly code: string = "ERR_LOCAL_FILE";
  /** Creates the terminal error. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(message, { retryable: false, ...options });
  }
}

/**
 * A local file ended before the range being read from it: it shrank since it was measured.
 *
 * @example A shrunken file
 * ```ts
 * import { FileEndedError, LocalFileError } from "@ocipart/ocipart/errors";
 * const err = new FileEndedError("file body: file ended before the requested range");
 * console.log(err instanceof LocalFileError); // true
 * ```
 */
export class FileEndedError extends LocalFileError {}
