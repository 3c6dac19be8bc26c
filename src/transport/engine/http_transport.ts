/**
 * The default transport: a {@linkcode Fetch} on `node:http`/`node:https` that frames streamed
 * bodies with their exact Content-Length, pools connections per origin, and checks every peer
 * address before a byte is written.
 *
 * @module
 */
import * as http from "node:http";
import * as https from "node:https";
import { fileBodyRange, type FileRange } from "../file_body.ts";
import type { Fetch } from "../fetch.ts";
import { rawFileUpload, rawUploadAvailable } from "./raw_upload.ts";
import { rawDownload } from "./raw_download.ts";
import { IdleConnections } from "./idle_connections.ts";
import { denoSockets } from "./deno_socket.ts";
import { nodeTcpSockets, nodeTlsSockets } from "./node_read_socket.ts";
import {
  ExchangeError,
  type FailureReason,
  failureReason,
  lengthError,
  OPERATION,
} from "../failure.ts";
import { nodeExchange } from "./node_exchange.ts";
import { vetProxiedTarget } from "./dial.ts";
import { dialThroughAgent } from "./node_socket.ts";
import { type ProxyRoute, ProxyRouter, type ProxySettings, proxySettingsFromEnv } from "./proxy.ts";
import { TlsTrust } from "./tls_trust.ts";
import { checkTlsPortAnswer } from "./tls_port_answer.ts";
import { type ExchangeObserver, observeExchange } from "../exchange_observer.ts";
import { signalOf } from "../request_signal.ts";

// File-range bodies go out on a connection of their own, written from the file by a minimal
// HTTP/1.1 client where the runtime allows it: a third less CPU than node:http's write path.
const RAW_UPLOADS = rawUploadAvailable();
// Downloads read from the transport's own connections into the caller's buffers, on Deno's
// sockets where the runtime has them, else on node:net/node:tls: node:http allocates every read
// (a 1 GiB pull through it peaked at two to four times the memory), Deno's own client a new
// array per read (a sixth more CPU).
const DENO_SOCKETS = denoSockets(undefined) !== undefined;

/**
 * Options of {@linkcode HttpTransport}.
 *
 * @example A registry behind a private certificate authority
 * ```ts
 * import { HttpTransport, type HttpTransportOptions } from "@ocipart/ocipart/transport";
 * const options: HttpTransportOptions = {
 *   caCerts: [], // e.g. [await Deno.readTextFile("./corp-ca.pem")]
 *   maxSocketsPerOrigin: 8,
 * };
 * const transport = new HttpTransport(options);
 * transport.close();
 * ```
 */
export interface HttpTransportOptions {
  /**
   * Extra PEM certificates trusted for HTTPS, in addition to the runtime's roots, on every
   * path. A self-signed server certificate here (as `openssl req -x509` makes) is pinned: a host
   * it names is accepted when it presents exactly that certificate, and while one is given every
   * HTTPS request goes over `node:tls` (so a host it does not name is told as a wrong name).
   */
  caCerts?: string[];
  /**
   * HTTPS without verifying the peer's certificate chain or name, on every HTTPS request of
   * this transport (direct, tunnelled through a proxy, and file uploads). The runtime's own TLS
   * cannot skip verification, so with this option every request goes over `node:tls` (downloads
   * on the transport's own client, the rest through `node:https`); it needs no permission
   * beyond the network's. Default: false.
   */
  insecureTls?: boolean;
  /**
   * Decides whether a peer address may be connected to; `false` refuses the request with
   * `PeerRefusedError`. Consulted for every address a host name resolves to (before dialing),
   * for IP-literal hosts (before dialing), and with the socket's actual remote address once
   * connected, before any request byte is written.
   */
  peerGuard?: (address: string, family: 4 | 6) => boolean;
  /**
   * Maximum concurrent `node:http` connections per origin (default 32); further requests wait.
   * Downloads on the transport's own client (see {@linkcode HttpTransport}) are not capped.
   */
  maxSocketsPerOrigin?: number;
  /** Maximum idle connections kept per origin (default: `maxSocketsPerOrigin`). */
  maxIdleSocketsPerOrigin?: number;
  /**
   * Forward proxies for every request, uploads included: `http:` targets go to `http` in
   * absolute form, `https:` targets through a `CONNECT` tunnel of `https` (TLS to the origin
   * inside it, so the registry's credentials never reach the proxy); the proxy URL's own
   * credentials become `Proxy-Authorization`, sent to the proxy only. Default: the environment
   * (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, lowercase winning); `false` for none. This is the
   * only proxy decision: no client of the transport reads the environment by itself. With a
   * `peerGuard`, the proxy itself is not vetted (it is the user's choice) but each target is:
   * an address literal directly, a name by the addresses it resolves to here (one that does not
   * resolve here is refused).
   */
  proxy?: ProxySettings | false;
  /** Called once per finished exchange with what is safe to print (see `ExchangeRecord`). */
  onExchange?: ExchangeObserver;
  /** Which side this transport talks to, as reported to `onExchange` (default `"registry"`). */
  site?: "registry" | "mirror" | "storage";
}

// Methods whose body-less requests carry no framing; the others get `content-length: 0`.
const BODYLESS_METHODS = new Set(["GET", "HEAD", "DELETE", "OPTIONS", "TRACE", "CONNECT"]);
const DEFAULT_MAX_SOCKETS = 32;
// Body-less methods of the transport's own client: the downloads and existence checks.
const DOWNLOAD_METHODS = new Set(["GET", "HEAD"]);

/**
 * A fetch-shaped HTTP/1.1 client on `node:http`/`node:https`, used by both libraries unless a
 * caller supplies its own {@linkcode Fetch}.
 *
 * - A request with a body must carry a `content-length` header (else `TypeError`); the body is
 *   streamed with exactly that length and never with chunked transfer encoding. A body that
 *   turns out shorter or longer destroys the request before it is complete and rejects with
 *   `BodyLengthError`. Bodies made by `fileBody()` are read from the file directly; on Deno
 *   they go out on a connection of their own (`Connection: close`, peer guard and TLS roots
 *   as usual, not counted by `maxSocketsPerOrigin`) written by a minimal HTTP/1.1 client.
 * - The response body is a `ReadableStream` that pulls from the socket with backpressure; HEAD,
 *   204, 205 and 304 answers have a null body; 1xx answers are never surfaced.
 * - Redirects are returned, never followed; nothing is decompressed; there is no cookie jar.
 * - Connections are kept alive in a pool per origin; {@linkcode HttpTransport.external} is a
 *   separately pooled twin for cross-host requests.
 * - Body-less GET and HEAD requests that ask for no encoding go through the transport's own
 *   HTTP/1.1 client: its body is a readable byte stream read from the socket into the caller's
 *   buffers (`getReader({ mode: "byob" })`), so downloads take less CPU and memory than on any
 *   other client. They carry `accept-encoding: identity` (a request that accepts another
 *   encoding stays on `node:http`), are never decompressed or redirected, and
 *   are not counted by `maxSocketsPerOrigin`. A connection whose answer was read to its end is
 *   kept (at most `maxIdleSocketsPerOrigin` per origin, 30 s idle at most) for the next such
 *   request to the same origin by the same route; one the server closed meanwhile is replaced
 *   by a new connection, the request sent once more only if no byte of an answer came. Bytes
 *   past an answer's end (with its last bytes, or while the connection is idle) end the
 *   connection instead; only those sent after the next request went out can be taken for its
 *   answer, as on any kept HTTP/1.1 connection. The peer
 *   guard and the proxy apply where it dials. On Deno its sockets and TLS are the runtime's
 *   where the runtime judges the host as `node:tls` does, else `node:net`/`node:tls`
 *   (`node_read_socket.ts`), which carry every download on other runtimes.
 * - Everything else uses `node:http`/`node:https` (a paused TLS answer stops reading its
 *   connection): every other request with a body or another method.
 * - A request the `proxy` settings route through a proxy goes in absolute form for `http:`,
 *   through a `CONNECT` tunnel for `https:`.
 * - `request.signal` aborts the request at any point (also mid-body, also after the request and
 *   response objects were collected) with the signal's reason and destroys its socket.
 * - Failures reject with a `NetworkError` whose message names a safe reason (errno code, TLS
 *   failure kind, plain-HTTP/TLS mismatch, an answer that is not HTTP, missing network
 *   permission); those a retry cannot change (a host name that does not exist, certificates,
 *   protocol mismatch, a malformed answer, permission) are not retryable. `causeCodes()` in
 *   `failure.ts` lists the codes of an error's chain.
 *
 * @example A request and its streamed answer (embedded testing registry)
 * ```ts
 * import { HttpTransport } from "@ocipart/ocipart/transport";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * const transport = new HttpTransport();
 * const response = await transport.fetch(new Request(`${registry.url}/v2/`));
 * console.log(response.status); // 200
 * await response.body?.cancel();
 * transport.close();
 * ```
 */
export class HttpTransport {
  /** The transport as a {@linkcode Fetch}; bound, so it can be passed around on its own. */
  readonly fetch: Fetch;
  /**
   * {@linkcode HttpTransport.external}'s fetch, bound: the twin is created by the first request
   * sent through it.
   */
  readonly externalFetch: Fetch;
  readonly #options: Readonly<HttpTransportOptions>;
  readonly #httpAgent: http.Agent;
  readonly #httpsAgent: https.Agent;
  readonly #kept: IdleConnections;
  readonly #proxies: ProxyRouter;
  readonly #trust: TlsTrust;
  readonly #agentOptions: http.AgentOptions;
  #proxyAgent: http.Agent | undefined;
  // The peers (origins, proxies) that answered at least once: a refused connection to one of
  // them may pass (a restart); to one that never answered it is a wrong address, told at once.
  #answered = new Set<string>();
  #tunnelAgent: https.Agent | undefined;
  #external: HttpTransport | undefined;

  /** Creates a transport; no connection is opened until the first request. */
  constructor(options: HttpTransportOptions = {}) {
    const maxSockets = options.maxSocketsPerOrigin ?? DEFAULT_MAX_SOCKETS;
    if (!Number.isSafeInteger(maxSockets) || maxSockets < 1) {
      throw new RangeError(
        `HttpTransport: maxSocketsPerOrigin must be a positive integer, not ${maxSockets}`,
      );
    }
    const maxFreeSockets = options.maxIdleSocketsPerOrigin ?? maxSockets;
    if (!Number.isSafeInteger(maxFreeSockets) || maxFreeSockets < 0) {
      throw new RangeError(
        `HttpTransport: maxIdleSocketsPerOrigin must be a non-negative integer, not ${maxFreeSockets}`,
      );
    }
    if (options.caCerts !== undefined && !Array.isArray(options.caCerts)) {
      throw new TypeError("HttpTransport: caCerts must be an array of PEM strings");
    }
    if (options.peerGuard !== undefined && typeof options.peerGuard !== "function") {
      throw new TypeError("HttpTransport: peerGuard must be a function");
    }
    this.#options = Object.freeze({
      ...options,
      caCerts: options.caCerts === undefined ? undefined : [...options.caCerts],
    });
    this.#proxies = new ProxyRouter(
      options.proxy === false ? {} : options.proxy ?? proxySettingsFromEnv(),
    );
    this.#trust = new TlsTrust(this.#options.caCerts, options.insecureTls === true);
    const agentOptions = this.#agentOptions = {
      keepAlive: true,
      maxSockets,
      maxFreeSockets,
      scheduling: "lifo",
      ...this.#trust.nodeOptions,
      // The proxy decision is ours: node:http must not take one from NODE_USE_ENV_PROXY.
      proxyEnv: {},
    } as http.AgentOptions;
    this.#httpAgent = new http.Agent(agentOptions);
    this.#httpsAgent = new https.Agent(agentOptions);
    const guard = this.#options.peerGuard;
    if (guard) {
      dialThroughAgent(this.#httpAgent, { secure: false, peerGuard: guard });
      dialThroughAgent(this.#httpsAgent, { secure: true, peerGuard: guard });
    }
    this.#kept = new IdleConnections(maxFreeSockets);
    this.fetch = (request: Request) => this.#fetch(request);
    this.externalFetch = (request: Request) => this.external().fetch(request);
  }

  /**
   * The lazily created, separately pooled twin for cross-host requests (storage redirects,
   * token realms): same TLS roots, peer guard and tuning, its own connections. Created once and
   * cached; {@linkcode HttpTransport.close} closes it too.
   *
   * @example One twin per transport
   * ```ts
   * import { HttpTransport } from "@ocipart/ocipart/transport";
   * const transport = new HttpTransport();
   * console.log(transport.external() === transport.external()); // true
   * transport.close();
   * ```
   */
  external(): HttpTransport {
    this.#external ??= this.clone({ site: "storage" });
    return this.#external;
  }

  /**
   * A new transport with its own connection pool and the same options, except `overrides`.
   *
   * @example A guarded copy
   * ```ts
   * import { HttpTransport, isForbiddenPeerAddress } from "@ocipart/ocipart/transport";
   * const transport = new HttpTransport();
   * const guarded = transport.clone({ peerGuard: (address) => !isForbiddenPeerAddress(address) });
   * guarded.close();
   * transport.close();
   * ```
   */
  clone(overrides: HttpTransportOptions = {}): HttpTransport {
    return new HttpTransport({ ...this.#options, ...overrides });
  }

  /**
   * Destroys every pooled and in-use connection, including those of
   * {@linkcode HttpTransport.external}. Requests in flight fail with `NetworkError`; a later
   * request opens new connections.
   *
   * @example Closing a transport
   * ```ts
   * import { HttpTransport } from "@ocipart/ocipart/transport";
   * new HttpTransport().close();
   * ```
   */
  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
    this.#proxyAgent?.destroy();
    this.#tunnelAgent?.destroy();
    this.#proxyAgent = this.#tunnelAgent = undefined;
    this.#kept.close();
    this.#external?.close();
  }

  #fetch(request: Request): Promise<Response> {
    const send = async () => {
      const first = this.#firstContact(request);
      try {
        const response = await this.#send(request);
        this.#answered.add(first.key);
        return await checkTlsPortAnswer(request, response, (probe) => this.#send(probe));
      } catch (err) {
        throw judgedFailure(err, first.proxied, !this.#answered.has(first.key));
      }
    };
    const observer = this.#options.onExchange;
    if (observer === undefined) return send();
    return observeExchange(request, this.#options.site ?? "registry", send, observer);
  }

  // Where a request's connection goes (the proxy, when it takes one), and whether that peer
  // ever answered this transport.
  #firstContact(request: Request): { key: string; proxied: boolean } {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return { key: "", proxied: false };
    }
    const route = this.#proxies.route(url);
    return route === undefined
      ? { key: url.origin, proxied: false }
      : { key: `proxy ${route.host}:${route.port}`, proxied: true };
  }

  // The agents of proxied requests, made on first use: plain HTTP to the proxy, and tunnels
  // (one https proxy per transport, so one tunnel agent).
  #agentFor(secure: boolean, route: ProxyRoute): http.Agent {
    if (!secure) return this.#proxyAgent ??= new http.Agent(this.#agentOptions);
    if (this.#tunnelAgent === undefined) {
      this.#tunnelAgent = new https.Agent(this.#agentOptions);
      // The target was vetted per request (#sendProxied): the tunnel dials the proxy as it is.
      dialThroughAgent(this.#tunnelAgent, { secure: true, proxy: route });
    }
    return this.#tunnelAgent;
  }

  #send(request: Request): Promise<Response> {
    const url = checkedUrl(request);
    const signal = signalOf(request);
    if (signal.aborted) return Promise.reject(signal.reason);
    const { headers, declared } = framedHeaders(request);
    const secure = url.protocol === "https:";
    const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    const out: Outgoing = {
      request,
      url,
      secure,
      hostname,
      port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
      headers,
      declared,
      route: this.#proxies.route(url),
      // A host the runtime's TLS cannot verify as node:tls does (a pinned certificate) stays
      // on node:tls.
      runtimeTls: !secure || this.#trust.runtimeVerifies(hostname),
    };
    // Each path below vets a guarded peer, an address literal too, where it dials (dial.ts).
    const fileRange = fileBodyRange(request.body);
    if (fileRange !== undefined && RAW_UPLOADS && out.runtimeTls) {
      return this.#sendFileRange(out, fileRange);
    }
    if (takesRawDownload(out)) return this.#sendRawDownload(out);
    if (out.route !== undefined) return this.#sendProxied(out, out.route);
    return this.#sendDirect(out);
  }

  // A GET or HEAD on a kept or new connection, read into the caller's buffers (raw_download.ts).
  #sendRawDownload(out: Outgoing): Promise<Response> {
    const guard = this.#options.peerGuard;
    // A host the runtime's TLS judges otherwise (pinned, unverified) is read through node:tls,
    // and so is every host where the runtime has no sockets of its own (Node).
    const onDeno = DENO_SOCKETS && out.runtimeTls;
    const sockets = onDeno
      ? denoSockets(this.#options.caCerts)!
      : out.secure
      ? nodeTlsSockets(this.#trust.nodeOptions)
      : nodeTcpSockets();
    const route = out.route;
    return rawDownload(
      {
        url: out.url,
        method: out.request.method,
        // Without a word on it, a server may encode the answer any way it likes.
        headers: { ...out.headers, "accept-encoding": "identity" },
        signal: signalOf(out.request),
        ...(guard ? { peerGuard: guard } : {}),
        ...(route ? { proxy: route } : {}),
      },
      sockets,
      {
        pool: this.#kept,
        // A kept connection serves only requests its dial would have made alike.
        route: [
          onDeno ? "runtime-sockets" : "node-sockets",
          out.url.origin,
          route ? `${route.host}:${route.port} ${route.authorization ?? ""}` : "direct",
        ].join(" "),
      },
    );
  }

  // Straight to the origin on this transport's node:http pools.
  #sendDirect(out: Outgoing): Promise<Response> {
    const { request, url, secure } = out;
    return nodeExchange({
      request,
      secure,
      declared: out.declared,
      options: {
        protocol: url.protocol,
        hostname: out.hostname,
        port: out.port,
        path: url.pathname + url.search,
        method: request.method,
        headers: out.headers,
        agent: secure ? this.#httpsAgent : this.#httpAgent,
      },
    });
  }

  // A file range goes out from the file on a connection of its own (raw_upload.ts).
  #sendFileRange(out: Outgoing, range: FileRange): Promise<Response> {
    const { request, declared } = out;
    // The stream itself is never read: cancel it so the request body counts as used.
    request.body!.cancel().catch(() => {});
    if (range.length !== declared) {
      return Promise.reject(lengthError(range.length < declared! ? "shorter" : "longer"));
    }
    const guard = this.#options.peerGuard;
    return rawFileUpload({
      url: out.url,
      method: request.method,
      headers: out.headers,
      range,
      signal: signalOf(request),
      ...(guard ? { peerGuard: guard } : {}),
      ...(this.#options.caCerts ? { caCerts: this.#options.caCerts } : {}),
      ...(out.route ? { proxy: out.route } : {}),
    });
  }

  async #sendProxied(out: Outgoing, route: ProxyRoute): Promise<Response> {
    const { request, url, secure, hostname, port } = out;
    // Vetted per request: a plain-HTTP request reuses any connection to the proxy.
    const guard = this.#options.peerGuard;
    if (guard) await vetProxiedTarget(hostname, guard);
    const options: https.RequestOptions = secure
      // The tunnel's agent dials the proxy; the request itself names the origin as usual.
      ? { protocol: "https:", hostname, port, path: url.pathname + url.search }
      // Plain HTTP goes to the proxy in absolute form, with the proxy's credentials.
      : {
        protocol: "http:",
        hostname: route.host,
        port: route.port,
        path: `${url.origin}${url.pathname}${url.search}`,
      };
    const sent: Record<string, string> = { ...out.headers, host: url.host };
    delete sent["proxy-authorization"];
    if (!secure && route.authorization !== undefined) {
      sent["proxy-authorization"] = route.authorization;
    }
    return await nodeExchange({
      request,
      secure,
      declared: out.declared,
      options: {
        ...options,
        method: request.method,
        headers: sent,
        agent: this.#agentFor(secure, route),
      },
    });
  }
}

/** A request as the transport sends it: where it goes, its framing and its route. */
interface Outgoing {
  readonly request: Request;
  readonly url: URL;
  readonly secure: boolean;
  /** The URL's host, IPv6 without brackets. */
  readonly hostname: string;
  readonly port: number;
  /** The headers to send (lower-case names, hop-by-hop ones dropped, length normalised). */
  readonly headers: Record<string, string>;
  /** The body's declared length, when the request has one. */
  readonly declared: number | undefined;
  /** The proxy, when the request goes through one. */
  readonly route: ProxyRoute | undefined;
  /** Whether the runtime's own TLS judges the host as node:tls does (always, for `http:`). */
  readonly runtimeTls: boolean;
}

// The request's URL, when the transport can send to it: http or https, without credentials.
function checkedUrl(request: Request): URL {
  const url = new URL(request.url);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError(`${OPERATION}: unsupported URL scheme`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new TypeError(`${OPERATION}: URL must not carry credentials`);
  }
  return url;
}

// The headers to send and the body's declared length: a body needs a valid content-length,
// and a method that may carry one gets `content-length: 0` without a body.
function framedHeaders(
  request: Request,
): { headers: Record<string, string>; declared: number | undefined } {
  const headers: Record<string, string> = {};
  for (const [name, value] of request.headers) {
    if (name === "transfer-encoding" || name === "connection" || name === "keep-alive") continue;
    headers[name] = value;
  }
  let declared: number | undefined;
  if (headers["content-length"] !== undefined) {
    const text = headers["content-length"].trim();
    declared = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(declared)) {
      throw new TypeError(`${OPERATION}: content-length header is not a valid length`);
    }
    headers["content-length"] = String(declared);
  }
  if (request.body !== null && declared === undefined) {
    throw new TypeError(`${OPERATION}: a request body needs a content-length header`);
  }
  if (request.body === null && declared === undefined && !BODYLESS_METHODS.has(request.method)) {
    headers["content-length"] = "0";
    declared = 0;
  }
  return { headers, declared };
}

// Whether `out` is a download the transport's own client may take: a body-less GET or HEAD that
// asks for no encoding (the client decodes nothing; another one stays on node:http).
function takesRawDownload(out: Outgoing): boolean {
  const encoding = out.headers["accept-encoding"]?.trim().toLowerCase();
  return out.request.body === null && DOWNLOAD_METHODS.has(out.request.method) &&
    (encoding === undefined || encoding === "identity");
}

// Failures of the dial itself: with a proxy, the peer dialed is the proxy.
const DIAL_FAILURES = new Set<FailureReason>([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

// A failed exchange as the caller should see it: a dial failure through a proxy names the proxy
// as the party that failed, and a refused connection to a peer that never answered is final
// (a wrong port: four attempts would only add seconds of silence).
function judgedFailure(err: unknown, proxied: boolean, neverAnswered: boolean): unknown {
  if (!(err instanceof ExchangeError)) return err;
  const reason = failureReason(err);
  if (reason === undefined || !DIAL_FAILURES.has(reason)) return err;
  const final = reason === "ECONNREFUSED" && neverAnswered;
  if (!final && !proxied) return err;
  const cause = err.cause ?? err;
  return new ExchangeError(OPERATION, "", cause, reason, {
    final: final || !err.retryable,
    atProxy: proxied,
  });
}
