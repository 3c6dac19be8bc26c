/**
 * How a failed exchange is told to the caller: one classification of raw network, TLS and
 * permission failures into safe `NetworkError`s (a fixed message, a reason code, the raw error
 * only as `cause`), shared by every client path of `HttpTransport`.
 *
 * @module
 */
import { BodyLengthError, NetworkError } from "../errors/kinds.ts";

/** The operation name every transport message starts with. */
export const OPERATION = "HTTP request";

/**
 * What went wrong, as a code safe to print (never a host, address or URL).
 *
 * @example Printing a reason
 * ```ts
 * import { type FailureReason, failureReason } from "@ocipart/ocipart/transport";
 * const raw = Object.assign(new Error("connect EHOSTUNREACH"), { code: "EHOSTUNREACH" });
 * const reason: FailureReason | undefined = failureReason(raw);
 * console.log(reason); // "EHOSTUNREACH"
 * ```
 */
export type FailureReason =
  | "ECONNREFUSED"
  | "ECONNRESET"
  | "ETIMEDOUT"
  | "ENOTFOUND"
  | "EAI_AGAIN"
  | "EHOSTUNREACH"
  | "ENETUNREACH"
  | "EPIPE"
  | "TLS_UNKNOWN_AUTHORITY"
  | "TLS_SELF_SIGNED"
  | "TLS_NAME_MISMATCH"
  | "TLS_EXPIRED"
  | "TLS_CERTIFICATE"
  | "PLAIN_HTTP_SERVER"
  | "TLS_SERVER"
  | "BAD_RESPONSE"
  | "EACCES"
  | "EPERM"
  | "EROFS"
  | "NET_PERMISSION"
  | "READ_PERMISSION"
  | "WRITE_PERMISSION"
  | "ENV_PERMISSION"
  | "SYS_PERMISSION"
  | "RUN_PERMISSION"
  | "FFI_PERMISSION"
  | "IMPORT_PERMISSION"
  | "ALL_PERMISSION"
  | "PERMISSION";

const ERRNO_CODES = new Set<string>([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
]);

// Node's certificate codes and the runtime's (rustls) certificate errors, by kind. A server
// presenting a self-signed certificate is told apart from a chain to an unknown root: node says
// DEPTH_ZERO_SELF_SIGNED_CERT, the runtime refuses the CA certificate `openssl req -x509` makes
// as an end entity. The runtime words a wrong name `certificate not valid for name "::1"; …`.
const TLS_KINDS: ReadonlyArray<readonly [RegExp, FailureReason]> = [
  [/DEPTH_ZERO_SELF_SIGNED_CERT|CaUsedAsEndEntity/, "TLS_SELF_SIGNED"],
  [
    /UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY_LEAF|SELF_SIGNED|CERT_UNTRUSTED|UnknownIssuer/,
    "TLS_UNKNOWN_AUTHORITY",
  ],
  [
    /ALTNAME_INVALID|HOSTNAME_MISMATCH|NotValidForName|certificate not valid for name/,
    "TLS_NAME_MISMATCH",
  ],
  [/CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|\bExpired\b|NotValidYet/, "TLS_EXPIRED"],
  [/CERT_REJECTED|CERT_SIGNATURE_FAILURE|invalid peer certificate/i, "TLS_CERTIFICATE"],
];

// Message patterns of the runtime's fetch errors (which carry no code), by errno.
const MESSAGE_ERRNO: ReadonlyArray<readonly [RegExp, FailureReason]> = [
  [/connection refused|requests to port \d+ are blocked/i, "ECONNREFUSED"],
  [/connection reset/i, "ECONNRESET"],
  [/timed out/i, "ETIMEDOUT"],
  // A name the resolver says does not exist is an answer; a resolver that could not answer
  // (or a failure it does not name) may answer next time.
  [/temporary failure in name resolution/i, "EAI_AGAIN"],
  [/name or service not known|no address associated with hostname/i, "ENOTFOUND"],
  [/nodename nor servname provided|no such host is known/i, "ENOTFOUND"],
  [/dns error|failed to lookup address/i, "EAI_AGAIN"],
  [/no route to host/i, "EHOSTUNREACH"],
  [/network is unreachable/i, "ENETUNREACH"],
  [/broken pipe/i, "EPIPE"],
];

// node:http's parser (llhttp) refusing what the server sent: not HTTP/1.x, a control byte in a
// header, a malformed status, length or chunk. Not a connection that ended early.
const PARSER_REFUSALS =
  /^HPE_(INVALID_(?!EOF_STATE)|STRICT|CR_EXPECTED|LF_EXPECTED|UNEXPECTED_|HEADER_OVERFLOW)/;

// The runtime's client (hyper) refusing an answer's head; it shows none of its bytes.
const RUNTIME_PARSER_REFUSALS = new RegExp(
  [
    "invalid HTTP (version|header|status-code|method) parsed",
    "invalid (content-length|transfer-encoding) parsed",
    "unexpected transfer-encoding parsed",
    "message head is too large",
  ].join("|"),
  "i",
);

// A TLS record (an alert or a handshake, version 3.x) where a status line should be: a TLS
// server's answer to a plain-HTTP request.
function startsWithTlsRecord(bytes: unknown): boolean {
  return bytes instanceof Uint8Array && bytes.length >= 2 &&
    (bytes[0] === 0x15 || bytes[0] === 0x16) && bytes[1] === 0x03;
}

// The message of each reason: what the user reads after the operation name.
const TEXT: Record<FailureReason, string> = {
  ECONNREFUSED: "connection failed (connection refused)",
  ECONNRESET: "connection failed (connection reset)",
  ETIMEDOUT: "connection failed (timed out)",
  ENOTFOUND: "connection failed (host name not found)",
  EAI_AGAIN: "connection failed (host name lookup failed for now)",
  EHOSTUNREACH: "connection failed (host unreachable)",
  ENETUNREACH: "connection failed (network unreachable)",
  EPIPE: "connection failed (connection closed while sending)",
  TLS_UNKNOWN_AUTHORITY: "server certificate not trusted (unknown authority)",
  TLS_SELF_SIGNED: "server certificate not trusted (self-signed)",
  TLS_NAME_MISMATCH: "server certificate not trusted (name mismatch)",
  TLS_EXPIRED: "server certificate not trusted (expired or not yet valid)",
  TLS_CERTIFICATE: "server certificate not trusted",
  PLAIN_HTTP_SERVER: "connection failed (the server speaks plain HTTP, not TLS: use --plain-http)",
  TLS_SERVER: "connection failed (the server speaks TLS, not plain HTTP: drop --plain-http)",
  BAD_RESPONSE: "the server's answer is not valid HTTP",
  EACCES: "connection failed (permission denied by the system)",
  EPERM: "connection failed (operation not permitted by the system)",
  EROFS: "connection failed (read-only file system)",
  NET_PERMISSION: "network access not permitted (grant it with --allow-net)",
  READ_PERMISSION: "file read access not permitted (grant it with --allow-read)",
  WRITE_PERMISSION: "file write access not permitted (grant it with --allow-write)",
  ENV_PERMISSION: "environment access not permitted (grant it with --allow-env)",
  SYS_PERMISSION: "system information access not permitted (grant it with --allow-sys)",
  RUN_PERMISSION: "running a program not permitted (grant it with --allow-run)",
  FFI_PERMISSION: "native library access not permitted (grant it with --allow-ffi)",
  IMPORT_PERMISSION: "module import not permitted (grant it with --allow-import)",
  ALL_PERMISSION: "access not permitted (the runtime allows it only with --allow-all)",
  PERMISSION: "access not permitted by the runtime's permissions",
};

// A refusal of the runtime's permissions, by the flag it names ("run again with the
// --allow-read flag"): what the user must grant, never guessed from the operation.
const PERMISSION_FLAGS: Readonly<Record<string, FailureReason>> = {
  net: "NET_PERMISSION",
  read: "READ_PERMISSION",
  write: "WRITE_PERMISSION",
  env: "ENV_PERMISSION",
  sys: "SYS_PERMISSION",
  run: "RUN_PERMISSION",
  ffi: "FFI_PERMISSION",
  import: "IMPORT_PERMISSION",
  all: "ALL_PERMISSION",
};

// The operating system's refusals, by their own code.
const OS_REFUSALS = new Set<string>(["EACCES", "EPERM", "EROFS"]);

// Reasons that a retry cannot change (a name that does not exist is the resolver's answer).
const PERMANENT = new Set<FailureReason>([
  "ENOTFOUND",
  "TLS_UNKNOWN_AUTHORITY",
  "TLS_SELF_SIGNED",
  "TLS_NAME_MISMATCH",
  "TLS_EXPIRED",
  "TLS_CERTIFICATE",
  "PLAIN_HTTP_SERVER",
  "TLS_SERVER",
  "BAD_RESPONSE",
  "EACCES",
  "EPERM",
  "EROFS",
  "NET_PERMISSION",
  "READ_PERMISSION",
  "WRITE_PERMISSION",
  "ENV_PERMISSION",
  "SYS_PERMISSION",
  "RUN_PERMISSION",
  "FFI_PERMISSION",
  "IMPORT_PERMISSION",
  "ALL_PERMISSION",
  "PERMISSION",
]);

function* chain(err: unknown): Generator<unknown> {
  for (let current = err, depth = 0; current != null && depth < 8; depth++) {
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}

// A refusal by the runtime's permissions (Deno's `NotCapable`; `PermissionDenied` before 2.0)
// names the flag to grant; the operating system's refusals carry their errno code.
function permissionReason(name: unknown, code: unknown, message: string) {
  const flag = (/--allow-([a-z]+)/.exec(message) ?? /\bRequires ([a-z]+) access\b/.exec(message))
    ?.[1];
  if (flag !== undefined) return PERMISSION_FLAGS[flag] ?? "PERMISSION";
  if (typeof code === "string" && OS_REFUSALS.has(code)) return code as FailureReason;
  return name === "NotCapable" ? "PERMISSION" : undefined;
}

function reasonOf(one: unknown): FailureReason | undefined {
  const name = (one as { name?: unknown }).name;
  const code = (one as { code?: unknown }).code;
  const message = one instanceof Error ? one.message : "";
  if (name === "NotCapable" || name === "PermissionDenied") {
    return permissionReason(name, code, message);
  }
  const text = `${typeof code === "string" ? code : ""} ${message}`;
  for (const [pattern, reason] of TLS_KINDS) if (pattern.test(text)) return reason;
  if (/WRONG_VERSION_NUMBER|InvalidContentType|wrong version number/i.test(text)) {
    return "PLAIN_HTTP_SERVER";
  }
  if (typeof code === "string" && PARSER_REFUSALS.test(code)) {
    return startsWithTlsRecord((one as { rawPacket?: unknown }).rawPacket)
      ? "TLS_SERVER"
      : "BAD_RESPONSE";
  }
  if (RUNTIME_PARSER_REFUSALS.test(message)) return "BAD_RESPONSE";
  if (typeof code === "string" && (ERRNO_CODES.has(code) || OS_REFUSALS.has(code))) {
    return code as FailureReason;
  }
  for (const [pattern, reason] of MESSAGE_ERRNO) if (pattern.test(message)) return reason;
  return undefined;
}

/**
 * The safe reason of a raw failure, looked up along its `cause` chain; `undefined` when none is
 * recognised.
 *
 * @example A refused connection
 * ```ts
 * import { failureReason } from "@ocipart/ocipart/transport";
 * const raw = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
 * console.log(failureReason(raw)); // "ECONNREFUSED"
 * ```
 */
export function failureReason(err: unknown): FailureReason | undefined {
  for (const one of chain(err)) {
    const found = one instanceof ExchangeError ? one.reason : reasonOf(one);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * A `NetworkError` that carries its safe {@linkcode FailureReason}.
 *
 * @example Telling a dead proxy apart
 * ```ts
 * import { ExchangeError } from "@ocipart/ocipart/transport";
 * const raw = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
 * const err = new ExchangeError("HTTP request", "connection failed", raw, undefined, { atProxy: true });
 * console.log(err.reason, err.atProxy); // "ECONNREFUSED" true
 * ```
 */
export class ExchangeError extends NetworkError {
  /** Why the exchange failed, when known; safe to print. */
  readonly reason: FailureReason | undefined;
  /** The proxy the request goes through could not be reached (the registry was never asked). */
  readonly atProxy: boolean;
  /**
   * Wraps `cause` as a failure of `operation`: `fallback` is the text when the cause is not
   * recognised, otherwise the reason's own text. `options.final` makes a failure that could
   * pass terminal; `options.atProxy` says the proxy is the party that failed.
   */
  constructor(
    operation: string,
    fallback: string,
    cause: unknown,
    reason: FailureReason | undefined = failureReason(cause),
    options: { final?: boolean; atProxy?: boolean } = {},
  ) {
    const permanent = options.final === true || (reason !== undefined && PERMANENT.has(reason));
    const text = reason === undefined ? fallback : TEXT[reason];
    super(`${operation}: ${options.atProxy === true ? `proxy ${text}` : text}`, {
      cause,
      retryable: !permanent,
    });
    this.reason = reason;
    this.atProxy = options.atProxy === true;
  }
}

/**
 * The error of a request that never got an answer (dial, TLS, proxy, permission).
 *
 * @example
 * ```ts
 * import { connectError } from "./failure.ts";
 * const err = connectError(Object.assign(new Error("x"), { code: "ECONNREFUSED" }));
 * console.log(err.message); // "HTTP request: connection failed (connection refused)"
 * ```
 */
export function connectError(cause: unknown): ExchangeError {
  return new ExchangeError(OPERATION, "connection failed", cause);
}

/**
 * The error of an answer whose body (or head) could not be read to its end.
 *
 * @example
 * ```ts
 * import { readError } from "./failure.ts";
 * console.log(readError(new Error("closed")).retryable); // true
 * ```
 */
export function readError(cause: unknown): ExchangeError {
  return new ExchangeError("HTTP response", "body read failed", cause);
}

/**
 * The error of an answer whose head is not HTTP/1.x (a status line or header the minimal
 * client's parser refuses): a TLS server's when its first bytes are a TLS record, else a
 * malformed answer. Never retried.
 *
 * @example
 * ```ts
 * import { malformedAnswerError } from "./failure.ts";
 * console.log(malformedAnswerError(new TextEncoder().encode("GARBAGE")).reason); // "BAD_RESPONSE"
 * console.log(malformedAnswerError(new Uint8Array([0x15, 0x03, 0x03])).reason); // "TLS_SERVER"
 * ```
 */
export function malformedAnswerError(head: Uint8Array): ExchangeError {
  return new ExchangeError(
    OPERATION,
    "",
    undefined,
    startsWithTlsRecord(head) ? "TLS_SERVER" : "BAD_RESPONSE",
  );
}

/**
 * The error of a request body that did not match its declared content-length.
 *
 * @example
 * ```ts
 * import { lengthError } from "./failure.ts";
 * console.log(lengthError("shorter").message);
 * ```
 */
export function lengthError(which: "shorter" | "longer"): BodyLengthError {
  return new BodyLengthError(`${OPERATION}: body ${which} than its content-length`);
}

/**
 * The safe reason codes found along `err`'s cause chain (errno codes, TLS kinds, permission),
 * for a caller that prints them next to the message.
 *
 * @example The codes under a wrapped failure
 * ```ts
 * import { causeCodes } from "@ocipart/ocipart/transport";
 * const raw = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
 * console.log(causeCodes(new Error("pull failed", { cause: raw }))); // ["ECONNRESET"]
 * ```
 */
export function causeCodes(err: unknown): string[] {
  const codes = new Set<string>();
  for (const one of chain(err)) {
    const reason = one instanceof ExchangeError ? one.reason : reasonOf(one);
    if (reason !== undefined) codes.add(reason);
    const code = (one as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code)) codes.add(code);
  }
  return [...codes];
}

/**
 * The error of a proxy that would not open a tunnel: its status when it answered (a 5xx may
 * pass, a 407 needs other proxy credentials), or a malformed answer.
 *
 * @example
 * ```ts
 * import { tunnelError } from "./failure.ts";
 * console.log(tunnelError(407).message); // "HTTP request: proxy refused the tunnel (status 407)"
 * ```
 */
export function tunnelError(status: number | undefined): NetworkError {
  return new NetworkError(
    `${OPERATION}: proxy refused the tunnel (${
      status === undefined ? "malformed answer" : `status ${status}`
    })`,
    { retryable: status === undefined || status >= 500, ...(status ? { status } : {}) },
  );
}
