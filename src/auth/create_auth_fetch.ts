/**
 * A ready authenticated {@linkcode Fetch} for one registry.
 *
 * @module
 */
import type { Fetch } from "../transport/fetch.ts";
import { RegistryAuthenticator, type RegistryAuthenticatorOptions } from "./authenticator.ts";

/** Options of {@linkcode createAuthFetch}; see {@linkcode RegistryAuthenticatorOptions}. */
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
 * @example Pulling a manifest with docker's stored credentials
 * ```ts ignore
 * import { createAuthFetch } from "@ocipart/ocipart";
 * const authFetch = createAuthFetch({
 *   registry: "ghcr.io",
 *   fetch: (request) => fetch(request, { redirect: "manual" }),
 * });
 * const response = await authFetch(
 *   new Request("https://ghcr.io/v2/org/data/manifests/v1", {
 *     headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
 *   }),
 * );
 * ```
 */
export function createAuthFetch(options: AuthFetchOptions): Fetch {
  return new RegistryAuthenticator(options).fetch;
}
