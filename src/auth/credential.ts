/**
 * The credential a source returns for one registry, and the source interface.
 *
 * @module
 */

/**
 * What a credential source returns for one registry. All fields absent (or empty) means
 * anonymous, which is a valid answer and not an error.
 *
 * @example Basic credentials, and a registry token presented as is
 * ```ts
 * import type { Credential } from "@ocipart/ocipart";
 * const basic: Credential = { username: "ci", password: "secret" };
 * const token: Credential = { registryToken: "eyJ…" };
 * const anonymous: Credential = {};
 * console.log([basic, token, anonymous].length); // 3
 * ```
 */
export interface Credential {
  /** Basic credential user. */
  username?: string;
  /** Basic credential secret. */
  password?: string;
  /**
   * An OAuth2-style refresh token stored in place of a password. It is refused with a
   * `CredentialError`, never exchanged and never downgraded to anonymous.
   */
  identityToken?: string;
  /** Presented verbatim as the bearer credential, without any exchange. */
  registryToken?: string;
}

/**
 * Looks up the credential of a registry host.
 *
 * @example Credentials from the environment
 * ```ts
 * import { type Credential, type CredentialSource, PartedClient } from "@ocipart/ocipart";
 * const fromEnv: CredentialSource = {
 *   get(registryHost: string): Promise<Credential> {
 *     const password = registryHost === "ghcr.io" ? Deno.env.get("GHCR_TOKEN") : undefined;
 *     return Promise.resolve(password === undefined ? {} : { username: "ci", password });
 *   },
 * };
 * using client = new PartedClient({ credentials: fromEnv });
 * ```
 */
export interface CredentialSource {
  /**
   * Returns the credential for `registryHost` (the `host[:port]` that is dialed). A registry the
   * source knows nothing about yields `{}` (anonymous) without error.
   */
  get(registryHost: string, signal?: AbortSignal): Promise<Credential>;
}

/**
 * One explicit credential: basic, or a registry token presented verbatim.
 *
 * @example A robot account, or a registry token
 * ```ts
 * import { type ExplicitCredential, PartedClient } from "@ocipart/ocipart";
 * const basic: ExplicitCredential = { username: "ci", password: "secret" };
 * const token: ExplicitCredential = { registryToken: "eyJ…" };
 * using client = new PartedClient({ credential: basic });
 * console.log("registryToken" in token); // true
 * ```
 */
export type ExplicitCredential = { username: string; password: string } | {
  registryToken: string;
};

/**
 * A source that answers one explicit credential for every registry, e.g. a
 * `{ username, password }` pair or a `{ registryToken }` given on a command line.
 *
 * @example Passing an explicit credential
 * ```ts
 * import { staticCredentials } from "@ocipart/ocipart/auth";
 * const source = staticCredentials({ username: "ci", password: "secret" });
 * console.log((await source.get("registry.example")).username); // "ci"
 * ```
 */
export function staticCredentials(credential: Credential): CredentialSource {
  const copy: Credential = { ...credential };
  return {
    get: (_registryHost: string, signal?: AbortSignal): Promise<Credential> => {
      signal?.throwIfAborted();
      return Promise.resolve({ ...copy });
    },
  };
}

/**
 * A source that always answers anonymous.
 *
 * @example Never sending credentials
 * ```ts
 * import { anonymousCredentials } from "@ocipart/ocipart/auth";
 * console.log(await anonymousCredentials.get("registry.example")); // {}
 * ```
 */
export const anonymousCredentials: CredentialSource = {
  get: (_registryHost: string, signal?: AbortSignal): Promise<Credential> => {
    signal?.throwIfAborted();
    return Promise.resolve({});
  },
};
