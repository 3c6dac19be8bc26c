/**
 * Registry authentication: credentials from the docker configuration and its credential
 * helpers (or one explicit credential), `WWW-Authenticate` challenges, the token exchange and
 * its cache, offered as an authenticated {@linkcode Fetch}: {@linkcode createAuthFetch}, or
 * {@linkcode RegistryAuthenticator} for its counters and {@linkcode RegistryAuthenticator.ensureFresh}.
 *
 * @example An authenticated transport for the blob library
 * ```ts ignore
 * import { createAuthFetch, staticCredentials } from "./mod.ts";
 * const authFetch = createAuthFetch({
 *   registry: "registry.example",
 *   fetch: (request) => fetch(request, { redirect: "manual" }),
 *   credentials: staticCredentials({ username: "ci", password: "secret" }),
 * });
 * ```
 *
 * @module
 */
export type { Fetch } from "../transport/fetch.ts";
export type { Clock } from "../transport/clock.ts";
export type { OciError, OciErrorOptions } from "../errors/oci_error.ts";
export * from "./credential.ts";
export * from "./docker_config.ts";
export * from "./credential_helper.ts";
export * from "./challenge.ts";
export * from "./scope.ts";
export * from "./token_cache.ts";
export * from "./token_exchange.ts";
export * from "./auth_retry_error.ts";
export * from "./authenticator.ts";
export * from "./create_auth_fetch.ts";
