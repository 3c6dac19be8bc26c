/**
 * The one place where a client's transport stack is composed, for both clients: the registry
 * transport, the peer-guarded pool for other hosts, the routing between them, the stall guard,
 * and one authenticator (so one token cache) per registry, shared by all the client's
 * transfers.
 *
 * Peer policy, the same for both clients: a request that is not for the registry origin never
 * carries a credential, and unless the caller supplied the transport that carries it, it goes
 * through one lazily created clone of the library pool whose peer guard refuses loopback,
 * private, link-local and unspecified addresses before dialing. The stricter of the two
 * previous policies is kept for every host but the registry's own; the registry's own
 * hostname on another port is exempt only where the parted specification requires it (token
 * realms and storage behind the registry's host: without the exemption those break), which is
 * `ownHostnameIsRegistry`.
 *
 * @module
 */
import { RegistryAuthenticator } from "../auth/authenticator.ts";
import type { CredentialSource } from "../auth/credential.ts";
import { crossHostFetch } from "../transport/cross_host_fetch.ts";
import type { Fetch } from "../transport/fetch.ts";
import type { ExchangeObserver } from "../transport/exchange_observer.ts";
import { HttpTransport } from "../transport/http_transport.ts";
import { guardedExternalTransport, type GuardedTransport } from "../transport/peer_guard.ts";
import { withStallGuard } from "../transport/stall_guard.ts";
import { type RateLimit, RateLimiter, withRateLimit } from "../transport/rate_limit.ts";
import { withUserAgent } from "../transport/user_agent.ts";

/** How a client's requests travel. */
export interface ClientStackOptions {
  /** The caller's registry transport (it must not follow redirects). Default: a library pool. */
  transport?: Fetch;
  /**
   * The caller's transport for other origins; it owns their peer policy. Default: a lazily
   * created clone of the library pool that refuses loopback, private, link-local and
   * unspecified peers (with a caller's `transport`, see `callerTransportReachesOtherHosts`).
   */
  storageTransport?: Fetch;
  /**
   * Other origins on the registry's own hostname (any port) go through the registry's pool
   * without credentials, instead of through the storage transport. The parted library's rule
   * (token realms and storage behind the registry's host, spec "Cross-host" rule 2); the blob
   * library sends every other origin to its storage transport. Default: false.
   */
  ownHostnameIsRegistry?: boolean;
  /**
   * With a caller's `transport` and no `storageTransport`: true sends other hosts through the
   * caller's transport unverified; false refuses them (`PeerRefusedError`, nothing sent; only
   * with `ownHostnameIsRegistry`); undefined uses the library's peer-guarded pool.
   */
  callerTransportReachesOtherHosts?: boolean;
  /** Extra PEM roots trusted by the library pool. */
  caCerts?: string[];
  /** HTTPS without certificate verification in the library pool (`--insecure`). */
  insecureTls?: boolean;
  /** Idle keep-alive sockets kept per origin by the library pool. */
  maxIdleSocketsPerOrigin?: number;
  /** Fail an exchange that moves no bytes for this long (ms; 0 = never). Default 60 000. */
  stallTimeoutMs?: number;
  /** Told of every exchange of the library's pools (`--debug`); never sees credentials. */
  onExchange?: ExchangeObserver;
  /** One bandwidth cap over every body of the client, both directions. Default: none. */
  rateLimit?: RateLimit;
  /**
   * Authenticate registry requests (the parted client); else the transport is used as is.
   * `mirrorCredentials` answers for mirror routes (default: `credentials`).
   */
  authenticate?: {
    plainHttp: boolean;
    credentials?: CredentialSource;
    mirrorCredentials?: CredentialSource;
  };
}

/** A route to a mirror of a registry rather than to the registry itself. */
export interface MirrorRouteOptions {
  /** HTTPS without verifying the mirror's certificate. */
  insecureTls: boolean;
}

/** The transports of one registry origin. */
export interface RegistryRoute {
  /** For the registry origin; authenticating when the client authenticates. */
  transport: Fetch;
  /** For every other origin; never adds a credential. */
  storageTransport: Fetch;
  /** The registry's authenticator, when the client authenticates. */
  authenticator: RegistryAuthenticator | undefined;
}

/**
 * A client's transports: created on first use and shared by all its transfers and
 * repositories, so keep-alive connections and tokens are reused from one call to the next.
 * Routing: the registry origin goes through the registry transport; every other origin goes
 * through the storage transport with credential headers removed (see `followRedirects`),
 * whose default refuses forbidden peers before dialing.
 *
 * @example The routes of a registry
 * ```ts
 * import { ClientStack } from "./client_stack.ts";
 * const stack = new ClientStack({});
 * const route = stack.route(new URL("http://127.0.0.1:5000/"), "127.0.0.1:5000");
 * console.log(typeof route.transport); // "function"
 * stack.close();
 * ```
 */
export class ClientStack {
  readonly #options: ClientStackOptions;
  readonly #routes = new Map<string, RegistryRoute>();
  #pool: HttpTransport | undefined;
  readonly #mirrorPools = new Map<boolean, HttpTransport>();
  #guarded: GuardedTransport | undefined;
  readonly #limiter: RateLimiter | undefined;

  /** Nothing is opened until the first {@linkcode ClientStack.route}. */
  constructor(options: ClientStackOptions) {
    this.#options = options;
    // One bucket for the whole client: every route and every worker shares the cap.
    this.#limiter = options.rateLimit === undefined
      ? undefined
      : new RateLimiter(options.rateLimit);
  }

  /**
   * The transports of the registry at `origin` (`host[:port]` is `registry`), cached; with
   * `mirror`, of a mirror there: its own pool (reported as `"mirror"`) and credentials.
   */
  route(origin: URL, registry: string, mirror?: MirrorRouteOptions): RegistryRoute {
    const key = mirror === undefined
      ? origin.origin
      : `mirror ${mirror.insecureTls} ${origin.origin}`;
    let route = this.#routes.get(key);
    if (route === undefined) {
      route = this.#compose(origin, registry, mirror);
      this.#routes.set(key, route);
    }
    return route;
  }

  /** Closes every pooled connection of the library's transports (not the caller's). */
  close(): void {
    this.#guarded?.close();
    this.#pool?.close();
    for (const pool of this.#mirrorPools.values()) pool.close();
    this.#mirrorPools.clear();
    this.#guarded = undefined;
    this.#pool = undefined;
    this.#routes.clear();
  }

  #compose(origin: URL, registry: string, mirror?: MirrorRouteOptions): RegistryRoute {
    const options = this.#options;
    const pool = mirror === undefined
      ? () => this.#library()
      : () => this.#mirrorPool(mirror.insecureTls);
    const base = this.#capped(
      options.transport ?? ((request: Request) => pool().fetch(request)),
    );
    const otherHosts = options.storageTransport ?? this.#otherHosts();
    const other = otherHosts === undefined ? undefined : this.#capped(otherHosts);
    // Without a transport for other hosts, crossHostFetch refuses them before sending.
    // The registry's hostname on another port skips the peer guard, but is still storage: its
    // own unguarded twin of the pool, so `onExchange` reports it as such.
    const sameHost = options.transport ??
      ((request: Request) => pool().external().fetch(request));
    const storage = options.ownHostnameIsRegistry === true
      ? crossHostFetch({ registry: origin, sameHost: this.#capped(sameHost), crossHost: other })
      : other ?? this.#capped(this.#guardedFetch);
    // A silent peer costs one attempt of the retry budget instead of hanging the transfer.
    const guard = { stallTimeoutMs: options.stallTimeoutMs };
    // Every request names the package unless the caller's request names itself.
    const transport = withUserAgent(withStallGuard(base, guard));
    const storageTransport = withUserAgent(withStallGuard(storage, guard));
    if (options.authenticate === undefined) {
      return { transport, storageTransport, authenticator: undefined };
    }
    const credentials = mirror === undefined
      ? options.authenticate.credentials
      : options.authenticate.mirrorCredentials ?? options.authenticate.credentials;
    const authenticator = new RegistryAuthenticator({
      registry,
      // Each route's own scheme: a mirror may speak plain HTTP while the registry does not.
      plainHttp: origin.protocol === "http:",
      fetch: transport,
      externalFetch: storageTransport,
      ...(credentials !== undefined ? { credentials } : {}),
    });
    return { transport: authenticator.fetch, storageTransport, authenticator };
  }

  /** `transport` under the client's bandwidth cap, if it has one. */
  #capped(transport: Fetch): Fetch {
    return this.#limiter === undefined ? transport : withRateLimit(transport, this.#limiter);
  }

  /** The transport for hosts other than the registry's, when the caller gave none. */
  #otherHosts(): Fetch | undefined {
    const options = this.#options;
    if (options.transport !== undefined) {
      // The caller's transport hides the peer address: verify with the library's own pool,
      // send unverified when allowed, or refuse.
      if (options.callerTransportReachesOtherHosts === true) return options.transport;
      if (options.callerTransportReachesOtherHosts === false) return undefined;
    }
    return this.#guardedFetch;
  }

  readonly #guardedFetch: Fetch = (request) => this.#guardedPool().fetch(request);

  #library(): HttpTransport {
    this.#pool ??= new HttpTransport({
      ...(this.#options.caCerts ? { caCerts: this.#options.caCerts } : {}),
      ...(this.#options.insecureTls ? { insecureTls: true } : {}),
      ...(this.#options.maxIdleSocketsPerOrigin === undefined
        ? {}
        : { maxIdleSocketsPerOrigin: this.#options.maxIdleSocketsPerOrigin }),
      ...(this.#options.onExchange ? { onExchange: this.#options.onExchange } : {}),
    });
    return this.#pool;
  }

  /** The pool of mirror routes: like the library pool, reported as `"mirror"`. */
  #mirrorPool(insecureTls: boolean): HttpTransport {
    let pool = this.#mirrorPools.get(insecureTls);
    if (pool === undefined) {
      pool = this.#library().clone({ site: "mirror", insecureTls });
      this.#mirrorPools.set(insecureTls, pool);
    }
    return pool;
  }

  #guardedPool(): GuardedTransport {
    // The clone itself is created on its first request.
    this.#guarded ??= guardedExternalTransport(this.#library());
    return this.#guarded;
  }
}
