/**
 * Forward proxies: which requests go through one (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY` and
 * their lowercase forms), and the protocol pieces both client paths of `HttpTransport` share
 * (the `CONNECT` head, its answer, the proxy's own credentials).
 *
 * @module
 */
import process from "node:process";
import { isIP } from "node:net";
import { Buffer } from "node:buffer";

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
  /** Comma-separated hosts, `.domains`, `host:port`s or `*` that bypass the proxy. */
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

function readEnv(name: string): string | undefined {
  try {
    const value = process.env[name];
    return value === undefined || value.trim() === "" ? undefined : value.trim();
  } catch {
    // No permission to read the environment: no proxy.
    return undefined;
  }
}

/**
 * The proxy settings of the environment: `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, the
 * lowercase form winning when both are set (as curl does). An environment that cannot be read
 * (no permission) has no proxy.
 *
 * @example
 * ```ts
 * import { proxySettingsFromEnv } from "./proxy.ts";
 * console.log(typeof proxySettingsFromEnv()); // "object"
 * ```
 */
export function proxySettingsFromEnv(): ProxySettings {
  const pick = (name: string) => readEnv(name.toLowerCase()) ?? readEnv(name);
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

function bypassed(url: URL, noProxy: string | undefined): boolean {
  if (noProxy === undefined) return false;
  const host = (url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname)
    .toLowerCase();
  const port = url.port === "" ? (url.protocol === "https:" ? "443" : "80") : url.port;
  for (const raw of noProxy.split(",")) {
    let entry = raw.trim().toLowerCase();
    if (entry === "") continue;
    if (entry === "*") return true;
    let entryPort: string | undefined;
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (bracketed) {
      entry = bracketed[1];
      entryPort = bracketed[2];
    } else if (isIP(entry) !== 6) {
      const colon = entry.lastIndexOf(":");
      if (colon > 0 && /^\d+$/.test(entry.slice(colon + 1))) {
        entryPort = entry.slice(colon + 1);
        entry = entry.slice(0, colon);
      }
    }
    if (entryPort !== undefined && entryPort !== port) continue;
    const domain = entry.startsWith(".") ? entry.slice(1) : entry;
    if (host === domain || host.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/** Routes requests through the proxies of one {@linkcode ProxySettings}. */
export class ProxyRouter {
  readonly #http: ProxyRoute | undefined;
  readonly #https: ProxyRoute | undefined;
  readonly #noProxy: string | undefined;

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
    this.#noProxy = settings.noProxy;
  }

  /** Whether any request can be proxied. */
  get active(): boolean {
    return this.#http !== undefined || this.#https !== undefined;
  }

  /** The proxy for `url`, or `undefined` when it goes direct. */
  route(url: URL): ProxyRoute | undefined {
    const route = url.protocol === "https:" ? this.#https : this.#http;
    if (route === undefined || bypassed(url, this.#noProxy)) return undefined;
    return route;
  }
}

/**
 * The `CONNECT` request that opens a tunnel to `host:port` through `route`: the proxy's
 * credentials go here, and nothing of the request that later travels inside the tunnel.
 *
 * @example
 * ```ts
 * import { connectHead } from "./proxy.ts";
 * console.log(connectHead("registry.example", 443, { host: "p", port: 3128, authorization: undefined }));
 * ```
 */
export function connectHead(host: string, port: number, route: ProxyRoute): string {
  const authority = `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
  let head = `CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n`;
  if (route.authorization !== undefined) head += `proxy-authorization: ${route.authorization}\r\n`;
  return `${head}\r\n`;
}

/**
 * The status of a proxy's answer to `CONNECT` from its head (the text up to the empty line), or
 * `undefined` when the head is malformed.
 *
 * @example
 * ```ts
 * import { connectStatus } from "./proxy.ts";
 * console.log(connectStatus("HTTP/1.1 200 Connection established\r\n")); // 200
 * ```
 */
export function connectStatus(head: string): number | undefined {
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  return match ? Number(match[1]) : undefined;
}
