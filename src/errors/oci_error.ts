/**
 * The base error class of this package and its options.
 *
 * @module
 */

/**
 * Options accepted by every error class of this package.
 *
 * @example Wrapping a cause and classifying it
 * ```ts
 * import { OciError, type OciErrorOptions, retryable } from "@ocipart/ocipart/errors";
 * const options: OciErrorOptions = { cause: new Error("socket hang up"), retryable: true };
 * const err = new OciError("GET blob: connection lost", options);
 * console.log(retryable(err).retryable); // true
 * ```
 */
export interface OciErrorOptions {
  /** The error this one wraps; stays reachable through {@linkcode findError}. */
  cause?: unknown;
  /**
   * Whether repeating the work may succeed. `undefined` means this error does not classify
   * itself and {@linkcode retryable} looks further down the `cause` chain.
   */
  retryable?: boolean;
  /** A usable Retry-After floor in milliseconds, already capped by the caller if it wishes. */
  retryAfterMs?: number;
  /** The HTTP status this error retains for programmatic inspection. */
  status?: number;
}

/**
 * Test and diagnostics hook: when `globalThis[Symbol.for("ocipart.errorObserver")]` holds a
 * function, every error of this package is passed to it once, as its constructor ends (before a
 * subclass sets its own fields). Its exceptions are swallowed. Unset, it costs one property
 * read per error. The test suite uses it to scan every message the library builds for leaks.
 */
const ERROR_OBSERVER: symbol = Symbol.for("ocipart.errorObserver");

/**
 * Base class of every error this package creates. Its `message` only ever holds fixed operation
 * names, statuses, field names and bounded part indexes: never a URL, host, realm, body, token
 * or digest. Detail a program may need stays in fields and in the `cause` chain.
 *
 * @example Matching by stable code
 * ```ts
 * import { OciError } from "@ocipart/ocipart";
 * const err: unknown = new OciError("HEAD blob: connection failed");
 * if (err instanceof OciError) console.log(err.code); // "ERR_OCI"
 * ```
 */
export class OciError extends Error {
  /** A stable, documented identifier of the error's kind; never changes between releases. */
  readonly code: string = "ERR_OCI";
  /** Retry classification made by the layer that created the error, if any. */
  readonly retryable: boolean | undefined;
  /** A Retry-After floor in milliseconds that the server asked for, if any. */
  readonly retryAfterMs: number | undefined;
  /** The retained HTTP status, if any. */
  readonly status: number | undefined;

  /** Creates an error with a safe message and optional classification. */
  constructor(message: string, options: OciErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retryable = options.retryable;
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
    const observer = (globalThis as Record<symbol, unknown>)[ERROR_OBSERVER];
    if (typeof observer === "function") {
      try {
        observer(this);
      } catch {
        // A diagnostics hook never changes what the library throws.
      }
    }
  }
}
