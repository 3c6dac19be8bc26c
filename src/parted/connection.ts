/**
 * The parted client's transport settings and the connection of one transfer: the registry
 * operations of its repository on the client's shared stack.
 *
 * @module
 */
import type { RegistryAuthenticator } from "../auth/authenticator.ts";
import { staticCredentials } from "../auth/credential.ts";
import type { Reference } from "../registry/reference.ts";
import { ClientStack } from "../remote/client_stack.ts";
import type { RegistrySettings } from "../remote/registry_settings.ts";
import { RemoteRepository } from "../remote/repository.ts";
import type { PartedClientOptions } from "./options.ts";
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
    /** The checked `registries` option (see `checkRegistrySettings`). */
    registryTable?: ReadonlyMap<string, Readonly<RegistrySettings>>;
  };

/** What one transfer works with. */
export interface Connection {
  /** The registry operations of the reference's repository. */
  readonly repo: RemoteRepository;
  /** The authenticator of the registry, shared by every transfer of the client. */
  readonly authenticator: RegistryAuthenticator;
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
    authenticate: credentials !== undefined ? { credentials } : {},
  });
}

/**
 * The connection of one transfer to `reference` on the client's `stack`, in the scheme the
 * stack's settings give its registry.
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
export function connect(stack: ClientStack, reference: Reference): Connection {
  const origin = stack.origin(reference.registry);
  const route = stack.route(origin, reference.registry);
  const repo = new RemoteRepository({
    origin,
    name: reference.repository,
    transport: route.transport,
    storageTransport: route.storageTransport,
    // Parted spec: writes are never redirected; every redirect target of a read is storage.
    writeRedirects: false,
    readRedirects: BLOB_REDIRECT_HOPS,
    redirectTargetsAreStorage: true,
  });
  return { repo, authenticator: route.authenticator! };
}
