/**
 * The parted client's session (its policy and credentials) and the connection of one transfer:
 * the registry operations of its repository and the registry's tokens.
 *
 * @module
 */
import { dockerConfigCredentials } from "../auth/docker_config.ts";
import type { Reference } from "../registry/reference.ts";
import { DEFAULT_POLICY } from "../remote/policy.ts";
import type { RegistrySettings } from "../remote/registry_settings.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import { ClientSession, credentialSource } from "../remote/session.ts";
import type { PartedClientOptions } from "./options.ts";
import type { TokenSource } from "./push_tokens.ts";
export type { ExplicitCredential } from "./options.ts";

/** The parted client's options that shape its session. */
export type ConnectionOptions =
  & PartedClientOptions
  & {
    /**
     * The checked `registries` option (see `checkRegistrySettings`), with the mirror hosts'
     * own settings (see `withMirrorHosts`).
     */
    registryTable?: ReadonlyMap<string, Readonly<RegistrySettings>>;
  };

/** What one transfer works with. */
export interface Connection {
  /** The registry operations of the reference's repository. */
  readonly repo: RemoteRepository;
  /**
   * The registry's tokens (its authenticator, shared by every transfer of the client): a push
   * renews one that would expire before a part arrives.
   */
  readonly tokens: TokenSource;
}

/**
 * The parted client's session, on the default policy: the registry's credentials are the
 * given ones or the docker configuration's, a mirror's always its own from the docker
 * configuration when one credential is given.
 *
 * @example A parted session
 * ```ts
 * import { partedSession } from "./connection.ts";
 * const session = partedSession({ plainHttp: true });
 * console.log(session.policy.retry.maxAttempts); // 4
 * session.close();
 * ```
 */
export function partedSession(options: ConnectionOptions): ClientSession {
  const credentials = credentialSource(options, "PartedClient");
  return new ClientSession(options, {
    owner: "PartedClient",
    policy: DEFAULT_POLICY,
    credentials: {
      ...(credentials !== undefined ? { registry: credentials } : {}),
      // The one explicit credential is the registry's: a mirror is asked with its own, from
      // the docker configuration.
      ...(options.credential !== undefined ? { mirrors: dockerConfigCredentials() } : {}),
    },
    ...(options.registryTable === undefined ? {} : { registries: options.registryTable }),
    ...(options.mirrors === undefined ? {} : { mirrors: options.mirrors }),
    ...(options.onMirrorTag === undefined ? {} : { onMirrorTag: options.onMirrorTag }),
  });
}

/**
 * The connection of one transfer to `reference` on the client's `session`; with `reads`, its
 * reads try the reference's mirrors first.
 *
 * @example The connection of one transfer
 * ```ts
 * import { connect, partedSession } from "./connection.ts";
 * import { parseReference } from "../registry/reference.ts";
 * const session = partedSession({ plainHttp: true });
 * const connection = connect(session, parseReference("127.0.0.1:5000/org/data:v1"));
 * console.log(connection.repo.name); // "org/data"
 * session.close();
 * ```
 */
export function connect(session: ClientSession, reference: Reference, reads = false): Connection {
  const { repo, authenticator } = session.repository(reference, reads);
  return { repo, tokens: authenticator! };
}
