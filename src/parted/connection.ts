/**
 * The parted client's transport settings and the connection of one transfer: the registry
 * operations of its repository on the client's shared stack.
 *
 * @module
 */
import { staticCredentials } from "../auth/credential.ts";
import { dockerConfigCredentials } from "../auth/docker_config.ts";
import { registryOrigin } from "../registry/endpoints.ts";
import type { Reference } from "../registry/reference.ts";
import { ClientStack, type RegistryRoute, type RouteSite } from "../remote/client_stack.ts";
import { MirrorSet, type MirrorSource } from "../remote/mirror_reads.ts";
import { mirrorsOf, type MirrorTable } from "../remote/mirror_table.ts";
import type { RegistrySettings } from "../remote/registry_settings.ts";
import { RemoteRepository } from "../remote/repository.ts";
import type { PartedClientOptions } from "./options.ts";
import type { TokenSource } from "./push_tokens.ts";
export type { ExplicitCredential } from "./options.ts";

/** Blob reads follow at most this many redirects. */
export const BLOB_REDIRECT_HOPS = 3;

/** The parted client's options that shape its transport stack. */
export type ConnectionOptions =
  & Pick<
    PartedClientOptions,
    | "fetch"
    | "plainHttp"
    | "caCerts"
    | "insecureTls"
    | "credential"
    | "credentials"
    | "unverifiedExternalTransport"
    | "stallTimeoutMs"
    | "onExchange"
    | "rateLimit"
  >
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
 * The parted client's stack: with the default transport, the registry's own hostname (any
 * port) stays on the registry pool and other hosts go through the peer-guarded clone; with a
 * caller's `fetch`, other hosts fail closed unless `unverifiedExternalTransport` is set. One
 * authenticator per registry, so tokens are reused by every transfer of the client.
 *
 * @example A parted stack
 * ```ts
 * import { partedStack } from "./connection.ts";
 * partedStack({ plainHttp: true }).close();
 * ```
 */
export function partedStack(options: ConnectionOptions): ClientStack {
  const credentials = options.credential !== undefined
    ? staticCredentials({ ...options.credential })
    : options.credentials;
  return new ClientStack({
    ...(options.fetch === undefined ? {} : {
      transport: options.fetch,
      callerTransportReachesOtherHosts: options.unverifiedExternalTransport ?? false,
    }),
    ownHostnameIsRegistry: true,
    plainHttp: options.plainHttp === true,
    ...(options.registryTable === undefined ? {} : { registries: options.registryTable }),
    caCerts: options.caCerts,
    insecureTls: options.insecureTls === true,
    stallTimeoutMs: options.stallTimeoutMs,
    onExchange: options.onExchange,
    ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
    authenticate: {
      ...(credentials !== undefined ? { credentials } : {}),
      // The one explicit credential is the registry's: a mirror is asked with its own, from
      // the docker configuration.
      ...(options.credential !== undefined ? { mirrorCredentials: dockerConfigCredentials() } : {}),
    },
  });
}

/**
 * The connection of one transfer to `reference` on the client's `stack`, in the scheme the
 * stack's settings give its registry; reads of it try the mirrors `mirrors` gives the reference
 * first (each on a mirror route of its own, reached as the stack's settings give its host),
 * writes never do.
 *
 * @example The connection of one transfer
 * ```ts
 * import { connect, partedStack } from "./connection.ts";
 * import { parseReference } from "../registry/reference.ts";
 * const stack = partedStack({ plainHttp: true });
 * const connection = connect(stack, parseReference("127.0.0.1:5000/org/data:v1"));
 * console.log(connection.repo.name); // "org/data"
 * stack.close();
 * ```
 */
export function connect(
  stack: ClientStack,
  reference: Reference,
  mirrors?: MirrorTable,
): Connection {
  const origin = stack.origin(reference.registry);
  const route = stack.route(origin, reference.registry);
  const sources = mirrors === undefined ? [] : mirrorSources(stack, reference, mirrors);
  const repo = repository(origin, reference.repository, route, sources);
  return { repo, tokens: route.authenticator! };
}

/** Each way to reach each mirror of `reference`, in order. */
function mirrorSources(
  stack: ClientStack,
  reference: Reference,
  mirrors: MirrorTable,
): MirrorSource[] {
  const site: RouteSite = "mirror";
  return mirrorsOf(mirrors, reference).flatMap((mirror) => {
    const origin = stack.origin(mirror.host);
    // An `insecure` mirror that does not speak TLS is asked again in plain HTTP.
    const origins = mirror.plainHttpFallback && origin.protocol === "https:"
      ? [origin, registryOrigin(mirror.host, { plainHttp: true })]
      : [origin];
    return origins.map((at) => {
      const route = stack.route(at, mirror.host, site);
      return {
        repo: repository(at, mirror.repository, route, []),
        resolvesTag: mirror.resolvesTag,
      };
    });
  });
}

function repository(
  origin: URL,
  name: string,
  route: RegistryRoute,
  mirrors: MirrorSource[],
): RemoteRepository {
  return new RemoteRepository({
    origin,
    name,
    transport: route.transport,
    storageTransport: route.storageTransport,
    // Writes are never redirected; every redirect target of a read is storage
    // (docs/protocol.md#redirects).
    writeRedirects: false,
    readRedirects: BLOB_REDIRECT_HOPS,
    redirectTargetsAreStorage: true,
    ...(mirrors.length === 0 ? {} : { mirrors: new MirrorSet(mirrors) }),
  });
}
