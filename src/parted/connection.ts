/**
 * Builds the transports of one transfer: the registry transport (authenticated), the external
 * transport for other origins, and the request layer on top.
 *
 * @module
 */
import { RegistryAuthenticator } from "../auth/authenticator.ts";
import type { CredentialSource } from "../auth/credential.ts";
import { staticCredentials } from "../auth/credential.ts";
import { PeerRefusedError } from "../errors/kinds.ts";
import { registryOrigin } from "../registry/endpoints.ts";
import type { Reference } from "../registry/reference.ts";
import type { Fetch } from "../transport/fetch.ts";
import { HttpTransport } from "../transport/http_transport.ts";
import { isForbiddenPeerAddress } from "../transport/peer_policy.ts";
import { PartedRequests } from "./requests.ts";

/** One explicit credential: basic, or a registry token presented verbatim. */
export type ExplicitCredential = { username: string; password: string } | {
  registryToken: string;
};

/** Transport options of the parted client. */
export interface ConnectionOptions {
  /** The caller's transport; it must not follow redirects. Default: `HttpTransport`. */
  fetch?: Fetch;
  /** Speak plain HTTP to the registry. */
  plainHttp?: boolean;
  /** Extra PEM roots trusted by the default transport. */
  caCerts?: string[];
  /** One explicit credential instead of the docker configuration. */
  credential?: ExplicitCredential;
  /** Where credentials come from (default: docker configuration and helpers). */
  credentials?: CredentialSource;
  /** Send cross-host requests through the caller's `fetch` without the peer check. */
  unverifiedExternalTransport?: boolean;
}

/** The transports of one transfer; `close()` releases the connections it opened. */
export interface Connection {
  /** The request layer of the reference's repository. */
  readonly requests: PartedRequests;
  /** The authenticator of the registry. */
  readonly authenticator: RegistryAuthenticator;
  /** Releases pooled connections of the default transport. */
  close(): void;
}

/**
 * Opens the transports for `reference`. With the default transport, cross-host requests use a
 * separately pooled clone that refuses loopback, private, link-local and unspecified peers
 * (the registry's own host is exempt); with a caller's `fetch`, cross-host requests fail closed
 * unless `unverifiedExternalTransport` is set.
 *
 * @example
 * ```ts ignore
 * import { connect } from "./connection.ts";
 * const connection = connect(parseReference("127.0.0.1:5000/org/data:v1"), { plainHttp: true });
 * connection.close();
 * ```
 */
export function connect(reference: Reference, options: ConnectionOptions): Connection {
  const origin = registryOrigin(reference.registry, { plainHttp: options.plainHttp ?? false });
  let base: Fetch;
  let external: Fetch;
  let transport: HttpTransport | undefined;
  let externalTransport: HttpTransport | undefined;
  if (options.fetch !== undefined) {
    base = options.fetch;
    external = options.unverifiedExternalTransport ? options.fetch : refuseCrossHost;
  } else {
    transport = new HttpTransport(options.caCerts ? { caCerts: options.caCerts } : {});
    base = transport.fetch;
    const own = hostOf(origin);
    externalTransport = transport.clone({
      peerGuard: (address) => address === own || !isForbiddenPeerAddress(address),
    });
    external = externalTransport.fetch;
  }
  const credentials = options.credential !== undefined
    ? staticCredentials({ ...options.credential })
    : options.credentials;
  const authenticator = new RegistryAuthenticator({
    registry: reference.registry,
    plainHttp: options.plainHttp ?? false,
    fetch: base,
    externalFetch: external,
    ...(credentials !== undefined ? { credentials } : {}),
  });
  const requests = new PartedRequests({
    origin,
    repository: reference.repository,
    fetch: authenticator.fetch,
    externalFetch: external,
  });
  return {
    requests,
    authenticator,
    close() {
      externalTransport?.close();
      transport?.close();
    },
  };
}

function hostOf(origin: URL): string {
  const host = origin.hostname;
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

const refuseCrossHost: Fetch = () =>
  Promise.reject(
    new PeerRefusedError("cross-host request through a caller transport", {
      cause: new Error("set unverifiedExternalTransport to allow it"),
    }),
  );
