/**
 * Forward proxies: the one decision of which requests go through one (`HTTP_PROXY`,
 * `HTTPS_PROXY`, `NO_PROXY` and their lowercase forms), taken for every client path of
 * `HttpTransport`, and the route each proxied request takes (the proxy's address and its own
 * credentials; the `CONNECT` tunnel is opened by the dialer, `dial.ts`). No client decides by
 * itself: `node:http` agents are told that their environment has no proxy, and the runtime's
 * own client, which reads the environment and cannot be told otherwise, is not used while the
 * environment may name a proxy.
 *
 * @module
 */
import process from "node:process";
import { Buffer } from "node:buffer";
import { NoProxyList } from "./no_proxy.ts";

/**
 * Proxy settings of a transport: proxy URLs per target scheme and the bypass list.
 *
 * @example A transport behind a corporate proxy, whatever the environment says
 * ```ts
 * import { HttpTransport, type ProxySettings } from "@ocipart/ocipart/transport";
 * const proxy: ProxySettings = {
 *   http: "http://proxy.internal:3128",
 *   https: "http://user:secret@proxy.internal:3128",
 *   noProxy: "localhost,127.0.0.1,.internal",
 * };
 * const transport = new HttpTransport({ proxy });
 * transport.close();
 * ```
 */
export interface ProxySettings {
  /** Proxy for `http:` targets (`http://[user:pass@]host[:port]`). */
  http?: string;
  /** Proxy for `https:` targets, reached with `CONNECT` (`http://[user:pass@]host[:port]`). */
  https?: string;
  /**
   * Comma-separated entries that bypass the proxy: `*`, host names, `.domain`s, `host:port`s,
   * IPv4 and IPv6 addresses (`[::1]`, `[::1]:5000`) and CIDR prefixes (`10.0.0.0/8`,
   * `fd00::/8`).
   */
  noProxy?: string;
}

/** Where one request goes when it is proxied. */
export interface ProxyRoute {
  /** The proxy's host name or address (without brackets). */
  readonly host: string;
  /** The proxy's port. */
  readonly port: number;
  /** `Proxy-Authorization` value from the proxy URL's credentials, if it has any. */
  readonly authorization: string | undefined;
}

// The value of an environment variable: `undefined` when unset or blank, `null` when it cannot
// be read (no permission).
function readEnv(name: string): string | undefined | null {
  try {
    const value = process.env[name];
    return value === undefined || value.trim() === "" ? undefined : value.trim();
  } catch {
    return null;
  }
}

/**
 * The proxy settings of the environment: `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, the
 * lowercase form winning when both are set (as curl does). A variable that cannot be read (no
 * permission) counts as unset.
 *
 * @example
 * ```ts
 * import { proxySettingsFromEnv } from "./proxy.ts";
 * console.log(typeof proxySettingsFromEnv()); // "object"
 * ```
 */
export function proxySettingsFromEnv(): ProxySettings {
  const pick = (name: string) => readEnv(name.toLowerCase()) ?? readEnv(name) ?? undefined;
  const settings: ProxySettings = {};
  const http = pick("HTTP_PROXY");
  const https = pick("HTTPS_PROXY");
  const noProxy = pick("NO_PROXY");
  if (http !== undefined) settings.http = http;
  if (https !== undefined) settings.https = https;
  if (noProxy !== undefined) settings.noProxy = noProxy;
  return settings;
}

function parseProxy(text: string): ProxyRoute {
  let url: URL;
  try {
    url = new URL(text.includes("://") ? text : `http://${text}`);
  } catch {
    throw new TypeError("HttpTransport: a proxy setting is not a valid URL");
  }
  if (url.protocol !== "http:") {
    throw new TypeError("HttpTransport: only http:// proxies are supported");
  }
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? 80 : Number(url.port);
  let authorization: string | undefined;
  if (url.username !== "" || url.password !== "") {
    const user = decodeURIComponent(url.username);
    const pass = decodeURIComponent(url.password);
    authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
  }
  return { host, port, authorization };
}

/** Routes requests through the proxies of one {@linkcode ProxySettings}. */
export class ProxyRouter {
  readonly #http: ProxyRoute | undefined;
  readonly #https: ProxyRoute | undefined;
  readonly #noProxy: NoProxyList;

  /**
   * Parses `settings`; throws `TypeError` for a proxy URL that is not `http://`.
   *
   * @example
   * ```ts
   * import { ProxyRouter } from "./proxy.ts";
   * const router = new ProxyRouter({ https: "http://proxy.example:3128", noProxy: "internal" });
   * console.log(router.route(new URL("https://registry.example/v2/"))?.port); // 3128
   * console.log(router.route(new URL("https://internal/v2/"))); // undefined
   * ```
   */
  constructor(settings: ProxySettings) {
    this.#http = settings.http === undefined ? undefined : parseProxy(settings.http);
    this.#https = settings.https === undefined ? undefined : parseProxy(settings.https);
    this.#noProxy = new NoProxyList(settings.noProxy);
  }

  /** Whether any request can be proxied. */
  get active(): boolean {
    return this.#http !== undefined || this.#https !== undefined;
  }

  /** The proxy for `url`, or `undefined` when it goes direct: the decision of every path. */
  route(url: URL): ProxyRoute | undefined {
    const route = url.protocol === "https:" ? this.#https : this.#http;
    if (route === undefined || this.#noProxy.bypasses(url)) return undefined;
    return route;
  }
}
