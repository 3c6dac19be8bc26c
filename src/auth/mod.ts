/**
 * Registry authentication for the blob client: {@linkcode createAuthFetch} returns a
 * {@linkcode Fetch} that answers `WWW-Authenticate` challenges (Bearer token exchange with a
 * cache, or Basic) with credentials from the docker configuration and its credential helpers
 * ({@linkcode dockerConfigCredentials}, the default) or one fixed credential
 * ({@linkcode staticCredentials}). Credentials are only ever sent to the registry's origin.
 *
 * @example An authenticated transport for the blob client
 * ```ts
 * import { BlobClient } from "@ocipart/ocipart/blob";
 * import { createAuthFetch, staticCredentials } from "@ocipart/ocipart/auth";
 * import { HttpTransport } from "@ocipart/ocipart/transport";
 *
 * const transport = new HttpTransport();
 * using blobs = new BlobClient({
 *   transport: createAuthFetch({
 *     registry: "registry.example",
 *     fetch: transport.fetch,
 *     credentials: staticCredentials({ username: "ci", password: "secret" }),
 *   }),
 * });
 * // blobs.pull("registry.example/org/data", digest) now authenticates as "ci".
 * transport.close();
 * ```
 *
 * @module
 */
export { type AuthFetchOptions, createAuthFetch } from "./create_auth_fetch.ts";
export type { RegistryAuthenticatorOptions } from "./authenticator.ts";
export { AuthRetryError } from "./auth_retry_error.ts";
export {
  anonymousCredentials,
  type Credential,
  type CredentialSource,
  staticCredentials,
} from "./credential.ts";
export {
  dockerConfigCredentials,
  DockerConfigFileError,
  type DockerConfigOptions,
  dockerConfigPath,
  type HelperRunner,
} from "./docker_config.ts";
export {
  type CredentialStore,
  type DockerLoginOptions,
  type DockerLoginResult,
  eraseDockerLogin,
  type LoginCredential,
  saveDockerLogin,
} from "./docker_login.ts";
export { TokenServiceError } from "./token_service_error.ts";
export { TOKEN_OPERATION } from "./token_exchange.ts";
export { InputFileError, type InputFileProblem, readInputFile } from "./input_file.ts";
export type { Fetch } from "../transport/fetch.ts";
export type { Clock } from "../transport/clock.ts";
export { OciError } from "../errors/oci_error.ts";
