/**
 * The one place where a client's transport stack is composed, for both clients: the registry
 * transport, the peer-guarded pool for other hosts, the routing between them, the stall guard,
 * and one authenticator (so one token cache) per registry, shared by all the client's
 * transfers.
 *
 * Peer policy: a request that is not for the registry origin never carries a credential, and
 * unless the caller supplied the transport that carries it, it goes through one lazily created
 * clone of the library pool whose peer guard refuses loopback, private, link-local and
 * unspecified addresses before dialing. The policy's `peers` rule says whether the registry's
 * own hostname on another port is the registry's (docs/protocol.md#peer-guard).
 *
 * Bodies keep their fast paths through every layer (bandwidth cap, stall guard, user agent,
 * authenticator): a request body made by `fileBody()` stays a file range the transport writes
 * from the file, and a download body the runtime hands over as a readable byte stream stays
 * one, so `response.body.getReader({ mode: "byob" })` reads into the caller's own buffers.
 *
 * Per-registry settings (`registries`): the scheme of each registry, and the TLS roots and
 * verification of the library pool that carries its requests and its storage redirects. One
 * pool per distinct TLS setting, shared by the registries that have it; the bandwidth cap stays
 * one for the whole client.
 *
 * Mirror routes: a mirror host is reached with its own settings like any registry host, on a
 * route of its own (its pools report `"mirror"` to `onExchange`) whose authenticator asks
 * `mirrorCredentials`, never the registry's explicit credential.
 *
 * @module
 */
import { RegistryAuthenticator } from "../auth/authenticator.ts";
import type { CredentialSource } from "../auth/credential.ts";
import { crossHostFetch } from "../transport/layers/cross_host_fetch.ts";
import type { Fetch } from "../transport/fetch.ts";
import type { ExchangeObserver } from "../transport/exchange_observer.ts";
import { HttpTransport } from "../transport/engine/http_transport.ts";
import { guardedExternalTransport, type GuardedTransport } from "../transport/peer_guard.ts";
import { layeredFetch } from "../transport/layers/layered_fetch.ts";
import { type RateLimit, RateLimiter } from "../transport/layers/rate_limit.ts";
import { registryOrigin } from "../registry/endpoints.ts";
import type { EnginePolicy } from "./policy.ts";
import { type RegistrySettings, type ResolvedSettings, settingsOf } from "./registry_settings.ts";

/** How a client's requests travel. */
export interface ClientStackOptions {
  /** The caller's registry transport (it must not follow redirects). Default: a library pool. */
  transport?: Fetch;
  /**
   * The caller's transport for other origins; it owns their peer policy. Default: a lazily
   * created clone of the library pool that refuses loopback, private, link-local and
   * unspecified peers (with a caller's `transport`, see the policy's `peers`).
   */
  storageTransport?: Fetch;
  /** The policy whose `peers` and `credentials` rules the stack applies. */
  policy: EnginePolicy;
  /** Plain HTTP to every registry without its own setting (see {@linkcode ClientStack.origin}). */
  plainHttp?: boolean;
  /** Extra PEM roots trusted by the library pool. */
  caCerts?: string[];
  /** HTTPS without certificate verification in the library pool (`--insecure`). */
  insecureTls?: boolean;
  /**
   * Settings of single registries (lower-case `host[:port]`, checked by
   * `checkRegistrySettings`) over the three above.
   */
  registries?: ReadonlyMap<string, Readonly<RegistrySettings>>;
  /** Idle keep-alive sockets kept per origin by the library pool. */
  maxIdleSocketsPerOrigin?: number;
  /** Fail an exchange that moves no bytes for this long (ms; 0 = never). Default 60 000. */
  stallTimeoutMs?: number;
  /** Told of every exchange of the library's pools (`--debug`); never sees credentials. */
  onExchange?: ExchangeObserver;
  /** One bandwidth cap over every body of the client, both directions. Default: none. */
  rateLimit?: RateLimit;
  /**
   * The registry's credentials; without them the policy's `credentials` rule decides whether
   * requests are authenticated (from the docker configuration) or sent as they are.
   */
  credentials?: CredentialSource;
  /** The credentials of mirror routes. Default: `credentials`. */
  mirrorCredentials?: CredentialSource;
}

/** Whose route: a registry's own, or a mirror's (its own pools and credentials). */
export type RouteSite = "registry" | "mirror";

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
 * import { DEFAULT_POLICY } from "./policy.ts";
 * const stack = new ClientStack({ policy: DEFAULT_POLICY });
 * const route = stack.route(new URL("http://127.0.0.1:5000/"), "127.0.0.1:5000");
 * console.log(typeof route.transport); // "function"
 * stack.close();
 * ```
 */
export class ClientStack {
  readonly #options: ClientStackOptions;
  readonly #routes = new Map<string, RegistryRoute>();
  // The library pools, one per TLS setting, and the peer-guarded clone of each.
  readonly #pools = new Map<string, HttpTransport>();
  readonly #guarded = new Map<string, GuardedTransport>();
  readonly #limiter: RateLimiter | undefined;

  /** Nothing is opened until the first {@linkcode ClientStack.route}. */
  constructor(options: ClientStackOptions) {
    this.#options = options;
    // One bucket for the whole client: every route and every worker shares the cap.
    this.#limiter = options.rateLimit === undefined
      ? undefined
      : new RateLimiter(options.rateLimit);
  }

  /** The policy the stack's client runs on. */
  get policy(): EnginePolicy {
    return this.#options.policy;
  }

  /** The settings of `registry` (`host[:port]`): its own, else the client-wide ones. */
  settings(registry: string): ResolvedSettings {
    const options = this.#options;
    const defaults = {
      plainHttp: options.plainHttp === true,
      insecureTls: options.insecureTls === true,
      caCerts: options.caCerts,
    };
    return settingsOf(registry, defaults, options.registries ?? new Map());
  }

  /** The origin of `registry` (`host[:port]`), in the scheme its settings say. */
  origin(registry: string): URL {
    return registryOrigin(registry, { plainHttp: this.settings(registry).plainHttp });
  }

  /**
   * The transports of the registry at `origin` (`host[:port]` is `registry`), cached; with
   * `site` `"mirror"`, of a mirror there (see the module's mirror routes).
   */
  route(origin: URL, registry: string, site: RouteSite = "registry"): RegistryRoute {
    const key = `${site} ${origin.origin}`;
    let route = this.#routes.get(key);
    if (route === undefined) {
      route = this.#compose(origin, registry, site);
      this.#routes.set(key, route);
    }
    return route;
  }

  /** Closes every pooled connection of the library's transports (not the caller's). */
  close(): void {
    for (const guarded of this.#guarded.values()) guarded.close();
    for (const pool of this.#pools.values()) pool.close();
    this.#guarded.clear();
    this.#pools.clear();
    this.#routes.clear();
  }

  #compose(origin: URL, registry: string, site: RouteSite): RegistryRoute {
    const options = this.#options;
    const tls = this.settings(registry);
    // The library's pools exist only where a request may take them.
    const library = options.transport === undefined ? this.#library(tls, site) : undefined;
    const guarded = (): Fetch => this.#guardedPool(tls).fetch;
    const base = options.transport ?? library!.fetch;
    const otherHosts = options.storageTransport ?? this.#otherHosts(guarded);
    // Without a transport for other hosts, crossHostFetch refuses them before sending.
    // The registry's hostname on another port skips the peer guard, but is still storage: its
    // own unguarded twin of the pool, so `onExchange` reports it as such.
    const sameHost = options.transport ?? library!.externalFetch;
    const storage = options.policy.peers === "registry-hostname"
      ? crossHostFetch({ registry: origin, sameHost, crossHost: otherHosts })
      : otherHosts ?? guarded();
    // Every request names the package; a silent peer costs one attempt of the retry budget
    // instead of hanging the transfer; one cap for every route of the client.
    const layers = { stallTimeoutMs: options.stallTimeoutMs, limiter: this.#limiter };
    const unauthenticated = layeredFetch(base, layers);
    const storageTransport = layeredFetch(storage, layers);
    const { credentials: own, mirrorCredentials } = options;
    if (own === undefined && options.policy.credentials === "caller") {
      return { transport: unauthenticated, storageTransport, authenticator: undefined };
    }
    const credentials = site === "mirror" ? mirrorCredentials ?? own : own;
    // Token requests go without a credential; the registry's own requests get theirs as the
    // first of the route's layers (the transport passes the step on without knowing it).
    const authenticator = new RegistryAuthenticator({
      registry,
      plainHttp: origin.protocol === "http:",
      fetch: unauthenticated,
      externalFetch: storageTransport,
      ...(credentials !== undefined ? { credentials } : {}),
    });
    const transport = layeredFetch(base, { ...layers, authorize: authenticator.authorize });
    return { transport, storageTransport, authenticator };
  }

  /** The transport for hosts other than the registry's, when the caller gave none. */
  #otherHosts(guarded: () => Fetch): Fetch | undefined {
    const options = this.#options;
    if (options.transport !== undefined) {
      // The caller's transport hides the peer address: where the registry's hostname is the
      // registry's, other hosts are refused; else they take the library's guarded pool.
      if (options.policy.peers === "registry-hostname") return undefined;
    }
    return guarded();
  }

  /** The library pool of one TLS setting and site, created on first use. */
  #library(tls: ResolvedSettings, site: RouteSite = "registry"): HttpTransport {
    const key = `${site} ${tlsKey(tls)}`;
    let pool = this.#pools.get(key);
    if (pool === undefined) {
      const options = this.#options;
      pool = new HttpTransport({
        ...(tls.caCerts ? { caCerts: [...tls.caCerts] } : {}),
        ...(tls.insecureTls ? { insecureTls: true } : {}),
        ...(options.maxIdleSocketsPerOrigin === undefined
          ? {}
          : { maxIdleSocketsPerOrigin: options.maxIdleSocketsPerOrigin }),
        ...(options.onExchange ? { onExchange: options.onExchange } : {}),
        site,
      });
      this.#pools.set(key, pool);
    }
    return pool;
  }

  #guardedPool(tls: ResolvedSettings): GuardedTransport {
    const key = tlsKey(tls);
    let guarded = this.#guarded.get(key);
    if (guarded === undefined) {
      // The clone itself is created on its first request.
      guarded = guardedExternalTransport(this.#library(tls));
      this.#guarded.set(key, guarded);
    }
    return guarded;
  }
}

/** Registries whose TLS settings are equal share a pool. */
function tlsKey(tls: ResolvedSettings): string {
  return JSON.stringify([tls.insecureTls, tls.caCerts ?? null]);
}
