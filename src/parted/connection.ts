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
import type { ClientStack, RegistryRoute, RouteSite } from "../remote/client_stack.ts";
import { ClientCore } from "../remote/client_core.ts";
import { PARTED_RETRY_POLICY } from "../remote/retry.ts";
import { MirrorSet, type MirrorSource, type MirrorTagListener } from "../remote/mirror_reads.ts";
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
 * The parted client's core: its stack routes the registry's own hostname (any port) through
 * the registry pool and other hosts through the peer-guarded clone; with a caller's
 * `transport` and no `storageTransport`, other hosts fail closed. One authenticator per
 * registry, so tokens are reused by every transfer of the client. The deprecated `fetch` and
 * `unverifiedExternalTransport` are read as `transport` and `storageTransport`.
 *
 * @example A parted core
 * ```ts
 * import { partedCore } from "./connection.ts";
 * const core = partedCore({ plainHttp: true });
 * console.log(core.policy.maxAttempts); // 4
 * core.close();
 * ```
 */
export function partedCore(options: ConnectionOptions): ClientCore {
  if (options.fetch !== undefined && typeof options.fetch !== "function") {
    throw new TypeError("PartedClient: fetch must be a function");
  }
  const transport = options.transport ?? options.fetch;
  const storageTransport = options.storageTransport ??
    (options.unverifiedExternalTransport === true ? transport : undefined);
  const credentials = options.credential !== undefined
    ? staticCredentials({ ...options.credential })
    : options.credentials;
  return new ClientCore({ ...options, transport, storageTransport }, {
    owner: "PartedClient",
    retryPolicy: PARTED_RETRY_POLICY,
    stack: {
      ownHostnameIsRegistry: true,
      // A caller's transport hides the peer: other hosts only through a transport given for them.
      callerTransportReachesOtherHosts: false,
      ...(options.registryTable === undefined ? {} : { registries: options.registryTable }),
      authenticate: {
        ...(credentials !== undefined ? { credentials } : {}),
        // The one explicit credential is the registry's: a mirror is asked with its own, from
        // the docker configuration.
        ...(options.credential !== undefined
          ? { mirrorCredentials: dockerConfigCredentials() }
          : {}),
      },
    },
  });
}

/**
 * The parted client's stack (see {@linkcode partedCore}).
 *
 * @example A parted stack
 * ```ts
 * import { partedStack } from "./connection.ts";
 * partedStack({ plainHttp: true }).close();
 * ```
 */
export function partedStack(options: ConnectionOptions): ClientStack {
  return partedCore(options).stack;
}

/**
 * The connection of one transfer to `reference` on the client's `stack`, in the scheme the
 * stack's settings give its registry; reads of it try the mirrors `mirrors` gives the reference
 * first (each on a mirror route of its own, reached as the stack's settings give its host),
 * writes never do. `onMirrorTag` hears which mirror resolved the tag when the registry could
 * not be reached.
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
  onMirrorTag?: MirrorTagListener,
): Connection {
  const origin = stack.origin(reference.registry);
  const route = stack.route(origin, reference.registry);
  const sources = mirrors === undefined ? [] : mirrorSources(stack, reference, mirrors);
  const set = sources.length === 0
    ? undefined
    : new MirrorSet(sources, onMirrorTag === undefined ? {} : { onTag: onMirrorTag });
  const repo = repository(origin, reference.repository, route, set);
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
        repo: repository(at, mirror.repository, route, undefined),
        resolvesTag: mirror.resolvesTag,
        host: mirror.host,
      };
    });
  });
}

function repository(
  origin: URL,
  name: string,
  route: RegistryRoute,
  mirrors: MirrorSet | undefined,
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
    ...(mirrors === undefined ? {} : { mirrors }),
  });
}
