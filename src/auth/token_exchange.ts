/**
 * The token exchange: one GET to the realm a Bearer challenge named, answered with a token.
 *
 * @module
 */
import {
  AuthChallengeError,
  CredentialError,
  HttpStatusError,
  NetworkError,
} from "../errors/kinds.ts";
import { isRetryableStatus, retryable } from "../errors/retryable.ts";
import { UnauthorizedError } from "../errors/sentinels.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import { discard } from "../registry/discard.ts";
import { readBoundedBody } from "../registry/status.ts";
import type { Fetch } from "../transport/fetch.ts";
import { parseRetryAfter } from "../registry/retry_after.ts";
import type { Credential } from "./credential.ts";
import { TokenServiceError } from "./token_service_error.ts";
import { requestWith } from "../transport/request_signal.ts";

/** The largest token response read; real ones are a few KiB. */
export const TOKEN_RESPONSE_LIMIT: number = 1 << 20;

/**
 * The operation a token service's errors name (a refusal there is the login's, not storage's).
 *
 * @example Telling a token request's failure apart
 * ```ts
 * import { TOKEN_OPERATION } from "@ocipart/ocipart/auth";
 * console.log(TOKEN_OPERATION); // "token request"
 * ```
 */
export const TOKEN_OPERATION = "token request";
const OPERATION = TOKEN_OPERATION;

/** What {@linkcode requestToken} needs. */
export interface TokenRequestOptions {
  /** The transport that reaches the realm (the registry's own, or the cross-host one). */
  fetch: Fetch;
  /** The realm URL of the Bearer challenge; its own query is kept byte for byte. */
  realm: URL;
  /** The challenge's `service` parameter, if any. */
  service?: string;
  /** The scopes to ask for (`scope` parameters, in order). */
  scopes: readonly string[];
  /** The credential of the dialed registry host; Basic when it has a username or password. */
  credential: Credential;
  /** The access being asked for, named in a refusal: `"pull"` or `"pull,push"`. */
  access: string;
  /** True when the realm is on another origin than the registry (classifies 401/403/404/410). */
  offOrigin?: boolean;
  /** Aborts the exchange. */
  signal?: AbortSignal;
}

/** A token endpoint's answer. */
export interface TokenResponse {
  /** The bearer token (`token`, else `access_token`). */
  token: string;
  /** The stated `expires_in` in seconds, when it is a positive number. */
  expiresIn?: number;
}

/**
 * Builds the token request URL: the realm with `service` and one `scope` parameter per scope
 * appended, leaving the realm's own query bytes untouched.
 *
 * @example
 * ```ts
 * import { tokenRequestUrl } from "./token_exchange.ts";
 * const url = tokenRequestUrl(new URL("https://auth.example/token?a=1"), "reg", [
 *   "repository:org/data:pull",
 * ]);
 * console.log(url.search); // "?a=1&service=reg&scope=repository%3Aorg%2Fdata%3Apull"
 * ```
 */
export function tokenRequestUrl(
  realm: URL,
  service: string | undefined,
  scopes: readonly string[],
): URL {
  const url = new URL(realm.href);
  url.hash = "";
  const params = new URLSearchParams();
  if (service !== undefined && service !== "") params.append("service", service);
  for (const scope of scopes) params.append("scope", scope);
  const added = params.toString();
  if (added !== "") {
    const existing = url.search.length > 1 ? url.search.slice(1) : "";
    url.search = existing === "" ? added : `${existing}&${added}`;
  }
  return url;
}

/**
 * The `Authorization` value of a Basic credential: `Basic base64(utf8(user ":" password))`.
 *
 * @example
 * ```ts
 * import { basicAuthorization } from "./token_exchange.ts";
 * console.log(basicAuthorization("user", "pass")); // "Basic dXNlcjpwYXNz"
 * ```
 */
export function basicAuthorization(username: string, password: string): string {
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

/**
 * Asks the realm for a token: `GET realm?service=…&scope=…`, with Basic credentials when the
 * credential has a username or password, through the given transport. Accepts `token` or
 * `access_token` and reads `expires_in`; `issued_at` is ignored.
 *
 * Failures, none of which quote the realm, the challenge or the response body:
 * - 401/403 (credential refused) → `UnauthorizedError` naming the refused access;
 * - 429/5xx → retryable `HttpStatusError` with the Retry-After floor;
 * - another status → terminal `HttpStatusError`;
 * - 200 without a token or with an unreadable body → `AuthChallengeError` (not unauthorized);
 * - an identity token → `CredentialError`, before any request;
 * - a transport failure → `TokenServiceError` (the token service, not the registry, could not be
 *   reached), as retryable as the failure it wraps; a peer refusal or an abort as it is.
 *
 * @example Exchanging against a token endpoint
 * ```ts ignore
 * import { requestToken } from "./token_exchange.ts";
 * const { token } = await requestToken({
 *   fetch: (r) => fetch(r, { redirect: "manual" }),
 *   realm: new URL("https://auth.example/token"),
 *   service: "registry.example",
 *   scopes: ["repository:org/data:pull"],
 *   credential: {},
 *   access: "pull",
 * });
 * ```
 */
export async function requestToken(options: TokenRequestOptions): Promise<TokenResponse> {
  const { credential } = options;
  if (credential.identityToken) {
    throw new CredentialError("identity tokens are not supported; log in with a password or token");
  }
  const headers = new Headers({ accept: "application/json" });
  if (credential.username || credential.password) {
    headers.set(
      "authorization",
      basicAuthorization(credential.username ?? "", credential.password ?? ""),
    );
  }
  const request = requestWith(tokenRequestUrl(options.realm, options.service, options.scopes), {
    method: "GET",
    headers,
    redirect: "manual",
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  let response: Response;
  try {
    response = await options.fetch(request);
  } catch (err) {
    throw tokenServiceFailure(asNetworkFailure(OPERATION, err, undefined, "connection failed"));
  }
  const offOrigin = options.offOrigin ?? false;
  if (response.status !== 200) {
    discard(response);
    const status = response.status;
    if (status === 401 || status === 403) {
      const refusal = new HttpStatusError(OPERATION, { status, retryable: false, offOrigin });
      throw new UnauthorizedError(`token endpoint refused ${options.access} access`, {
        cause: refusal,
        status,
      });
    }
    const retryable = isRetryableStatus(status);
    throw new HttpStatusError(OPERATION, {
      status,
      retryable,
      offOrigin,
      retryAfterMs: retryable ? parseRetryAfter(response.headers.get("retry-after")) : undefined,
    });
  }
  const body = await readBoundedBody(response, TOKEN_RESPONSE_LIMIT);
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    // The parser's text may quote the body: not kept.
    throw new AuthChallengeError("token response could not be read");
  }
  if (typeof parsed !== "object" || parsed === null) {
    throw new AuthChallengeError("token response could not be read");
  }
  const fields = parsed as Record<string, unknown>;
  const token = typeof fields.token === "string" && fields.token !== ""
    ? fields.token
    : typeof fields.access_token === "string" && fields.access_token !== ""
    ? fields.access_token
    : undefined;
  if (token === undefined) throw new AuthChallengeError("token response has no token");
  // A header value must be visible ASCII; refusing here keeps the token out of a TypeError.
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new AuthChallengeError("token response has an unusable token");
  }
  const expiresIn = fields.expires_in;
  return typeof expiresIn === "number" && Number.isFinite(expiresIn) && expiresIn > 0
    ? { token, expiresIn }
    : { token };
}

// A network failure on the way to the realm is the token service's, told apart from the
// registry's own; anything else (a peer refusal, an abort) passes as it is.
function tokenServiceFailure(failure: unknown): unknown {
  if (!(failure instanceof NetworkError)) return failure;
  return new TokenServiceError({ cause: failure, retryable: retryable(failure).retryable });
}
