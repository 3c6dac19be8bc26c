/**
 * Builds the transports of one transfer: the registry transport (authenticated), the external
 * transport for other origins, and the request layer on top.
 *
 * @module
 */
import { RegistryAuthenticator } from "../auth/authenticator.ts";
import type { CredentialSource } from "../auth/credential.ts";
import { staticCredentials } from "../auth/credential.ts";
import { registryOrigin } from "../registry/endpoints.ts";
import type { Reference } from "../registry/reference.ts";
import type { Fetch } from "../transport/fetch.ts";
import { crossHostFetch } from "../transport/cross_host_fetch.ts";
import { HttpTransport } from "../transport/http_transport.ts";
import { withStallGuard } from "../transport/stall_guard.ts";
import type { ExchangeObserver } from "../transport/exchange_observer.ts";
import { guardedExternalTransport, type GuardedTransport } from "../transport/peer_guard.ts";
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
  /** Fail an exchange that moves no bytes for this long (ms; 0 = never). Default 60 000. */
  stallTimeoutMs?: number;
}

/** The transports of one transfer; `close()` releases the connections it owns. */
export interface Connection {
  /** The request layer of the reference's repository. */
  readonly requests: PartedRequests;
  /** The authenticator of the registry. */
  readonly authenticator: RegistryAuthenticator;
  /** Releases pooled connections of the default transport unless they are shared. */
  close(): void;
}

/**
 * The default transports of one client, shared by all its transfers and repositories: the
 * registry transport and the peer-guarded clone for cross-host requests, each created on first
 * use, so keep-alive connections are reused from one push or pull to the next.
 *
 * @example
 * ```ts
 * import { ClientTransports } from "./connection.ts";
 * const transports = new ClientTransports();
 * transports.close();
 * ```
 */
export class ClientTransports {
  readonly #caCerts: string[] | undefined;
  readonly #onExchange: ExchangeObserver | undefined;
  #transport: HttpTransport | undefined;
  #external: GuardedTransport | undefined;

  /** Nothing is opened until {@linkcode ClientTransports.get}. */
  constructor(caCerts?: string[], onExchange?: ExchangeObserver) {
    this.#caCerts = caCerts;
    this.#onExchange = onExchange;
  }

  /** The registry transport and its guarded cross-host clone, created on the first call. */
  get(): { transport: HttpTransport; external: GuardedTransport } {
    this.#transport ??= new HttpTransport({
      ...(this.#caCerts ? { caCerts: this.#caCerts } : {}),
      ...(this.#onExchange ? { onExchange: this.#onExchange } : {}),
    });
    // The clone itself is created on its first request.
    this.#external ??= guardedExternalTransport(this.#transport);
    return { transport: this.#transport, external: this.#external };
  }

  /** Closes every pooled connection of both transports. */
  close(): void {
    this.#external?.close();
    this.#transport?.close();
    this.#external = undefined;
    this.#transport = undefined;
  }
}

/**
 * Opens the transports for `reference`. With the default transport, cross-host requests use a
 * separately pooled clone that refuses loopback, private, link-local and unspecified peers
 * (the registry's own host is exempt); with a caller's `fetch`, cross-host requests fail closed
 * unless `unverifiedExternalTransport` is set. The default transports come from `shared` when
 * given (and outlive the connection), else they are the connection's own.
 *
 * @example
 * ```ts ignore
 * import { connect } from "./connection.ts";
 * const connection = connect(parseReference("127.0.0.1:5000/org/data:v1"), { plainHttp: true });
 * connection.close();
 * ```
 */
export function connect(
  reference: Reference,
  options: ConnectionOptions,
  shared?: ClientTransports,
): Connection {
  const origin = registryOrigin(reference.registry, { plainHttp: options.plainHttp ?? false });
  let base: Fetch;
  let external: Fetch;
  let owned: ClientTransports | undefined;
  if (options.fetch !== undefined) {
    base = options.fetch;
    // The caller's transport hides the peer: cross-host requests fail closed unless opted in.
    external = crossHostFetch({
      registry: origin,
      sameHost: options.fetch,
      ...(options.unverifiedExternalTransport ? { crossHost: options.fetch } : {}),
    });
  } else {
    if (shared === undefined) owned = new ClientTransports(options.caCerts);
    const transports = (shared ?? owned!).get();
    base = transports.transport.fetch;
    // The registry's own hostname (any port, even a private address) stays on its transport;
    // other hosts go through a lazily created, separately pooled, peer-guarded clone.
    external = crossHostFetch({
      registry: origin,
      sameHost: base,
      crossHost: transports.external.fetch,
    });
  }
  // A silent peer costs one attempt of the retry budget instead of hanging the transfer.
  base = withStallGuard(base, { stallTimeoutMs: options.stallTimeoutMs });
  external = withStallGuard(external, { stallTimeoutMs: options.stallTimeoutMs });
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
      owned?.close();
    },
  };
}
