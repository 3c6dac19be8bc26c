/**
 * The proxy bypass list (`NO_PROXY`): which targets go direct although a proxy is set. Read
 * once into matchers; addresses compare as bytes, so `::1`, `[::1]` and `0:0::1` are one.
 *
 * @module
 */
import { inPrefix, ipBytes, type IpPrefix, parsePrefix } from "../ip_address.ts";

type Entry =
  | { readonly kind: "all" }
  | { readonly kind: "prefix"; readonly prefix: IpPrefix }
  | { readonly kind: "address"; readonly bytes: Uint8Array; readonly port?: string }
  | { readonly kind: "name"; readonly domain: string; readonly port?: string };

// One entry of the list; `undefined` for text that is none of the documented forms.
function parseEntry(raw: string): Entry | undefined {
  const text = raw.trim().toLowerCase();
  if (text === "") return undefined;
  if (text === "*") return { kind: "all" };
  if (text.includes("/")) {
    const prefix = parsePrefix(text);
    return prefix === undefined ? undefined : { kind: "prefix", prefix };
  }
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    const bytes = ipBytes(bracketed[1]);
    if (bytes === undefined) return undefined;
    return bracketed[2] === undefined
      ? { kind: "address", bytes }
      : { kind: "address", bytes, port: String(Number(bracketed[2])) };
  }
  const whole = ipBytes(text);
  if (whole !== undefined) return { kind: "address", bytes: whole };
  const withPort = /^([^:]+):(\d+)$/.exec(text);
  const host = withPort ? withPort[1] : text;
  const port = withPort ? String(Number(withPort[2])) : undefined;
  const bytes = ipBytes(host);
  if (bytes !== undefined) {
    return port === undefined ? { kind: "address", bytes } : { kind: "address", bytes, port };
  }
  if (host.includes(":")) return undefined;
  const domain = host.replace(/^\*?\./, "").replace(/\.$/, "");
  if (domain === "") return undefined;
  return port === undefined ? { kind: "name", domain } : { kind: "name", domain, port };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/**
 * A parsed bypass list: comma-separated `*`, host names, `.domain`s (a name matches itself and
 * its subdomains, with or without the leading dot or `*.`; names only, never an address
 * literal), `host:port`, IPv4 and IPv6 addresses (`[::1]`, `[::1]:5000`, `::1`) and IPv4 or
 * IPv6 CIDR prefixes (`10.0.0.0/8`, `fd00::/8`, which match address literals). Unrecognised
 * entries are ignored.
 */
export class NoProxyList {
  readonly #entries: readonly Entry[];

  /**
   * Parses `text` (the value of `NO_PROXY`), or an empty list when `undefined`.
   *
   * @example
   * ```ts
   * import { NoProxyList } from "./no_proxy.ts";
   * const list = new NoProxyList(".corp.example, 10.0.0.0/8, [::1]:5000");
   * console.log(list.bypasses(new URL("http://a.corp.example/v2/"))); // true
   * console.log(list.bypasses(new URL("http://10.1.2.3/v2/"))); // true
   * console.log(list.bypasses(new URL("http://[::1]:5001/v2/"))); // false
   * ```
   */
  constructor(text: string | undefined) {
    this.#entries = (text ?? "").split(",").map(parseEntry).filter((e) => e !== undefined);
  }

  /** Whether a request to `url` goes direct. */
  bypasses(url: URL): boolean {
    const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
    const bytes = ipBytes(host);
    const port = url.port === "" ? (url.protocol === "https:" ? "443" : "80") : url.port;
    return this.#entries.some((entry) => {
      switch (entry.kind) {
        case "all":
          return true;
        case "prefix":
          return bytes !== undefined && inPrefix(bytes, entry.prefix);
        case "address":
          return bytes !== undefined && sameBytes(bytes, entry.bytes) &&
            (entry.port === undefined || entry.port === port);
        case "name":
          // A name and its subdomains, as curl matches them: never an address literal, so
          // `.0.0.1` does not take in 127.0.0.1.
          return bytes === undefined && (entry.port === undefined || entry.port === port) &&
            (host === entry.domain || host.endsWith(`.${entry.domain}`));
      }
    });
  }
}
