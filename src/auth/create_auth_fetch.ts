/**
 * A ready authenticated {@linkcode Fetch} for one registry.
 *
 * @module
 */
import type { Fetch } from "../transport/fetch.ts";
import { RegistryAuthenticator, type RegistryAuthenticatorOptions } from "./authenticator.ts";

/**
 * Options of {@linkcode createAuthFetch}; see {@linkcode RegistryAuthenticatorOptions}.
 *
 * @example A registry on plain HTTP with a fixed credential
 * ```ts
 * import { type AuthFetchOptions, createAuthFetch } from "@ocipart/ocipart";
 * import { staticCredentials } from "@ocipart/ocipart/auth";
 * import { HttpTransport } from "@ocipart/ocipart/transport";
 * const transport = new HttpTransport();
 * const options: AuthFetchOptions = {
 *   registry: "127.0.0.1:5000",
 *   plainHttp: true,
 *   fetch: transport.fetch,
 *   credentials: staticCredentials({ username: "ci", password: "secret" }),
 * };
 * const authFetch = createAuthFetch(options);
 * transport.close();
 * ```
 */
export type AuthFetchOptions = RegistryAuthenticatorOptions;

/**
 * Returns a {@linkcode Fetch} that authenticates requests to the registry origin (docker
 * configuration and credential helpers by default, challenges, token exchange and cache; see
 * {@linkcode RegistryAuthenticator}) and passes requests for other origins through
 * `externalFetch` with no credential. Suits the blob library's registry transport.
 *
 * A refused request with a body rejects with a retryable `AuthRetryError` once the credential
 * is renewed: rebuild the request and send it again (a retry loop does exactly that).
 *
 * @example An authenticated transport for the blob client
 * ```ts
 * import { BlobClient, createAuthFetch, sha256Digest } from "@ocipart/ocipart";
 * import { HttpTransport } from "@ocipart/ocipart/transport";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 *
 * await using registry = await startMemoryRegistry(); // or "ghcr.io" without plainHttp
 * const transport = new HttpTransport();
 * const authFetch = createAuthFetch({
 *   registry: registry.host,
 *   plainHttp: true,
 *   fetch: transport.fetch, // must not follow redirects
 * }); // credentials: docker's configuration and helpers, asked only when challenged
 * using client = new BlobClient({ plainHttp: true, transport: authFetch });
 * const digest = sha256Digest(new TextEncoder().encode("absent"));
 * console.log(await client.exists(`${registry.host}/org/data`, digest)); // false
 * transport.close();
 * ```
 */
export function createAuthFetch(options: AuthFetchOptions): Fetch {
  return new RegistryAuthenticator(options).fetch;
}
