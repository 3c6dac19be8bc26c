/**
 * IP address literals as bytes, and prefix (CIDR) matching: what the peer policy and the proxy
 * bypass list compare addresses with, so `::1`, `0:0::1` and `[::1]` are one address to both.
 *
 * @module
 */

function parseV4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!/^\d{1,3}$/.test(parts[i])) return undefined;
    const octet = Number(parts[i]);
    if (octet > 255) return undefined;
    bytes[i] = octet;
  }
  return bytes;
}

function parseGroups(half: string): number[] | undefined {
  if (half === "") return [];
  const groups: number[] = [];
  for (const group of half.split(":")) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    groups.push(parseInt(group, 16));
  }
  return groups;
}

// Eight 16-bit groups of an IPv6 text, which may end in a dotted IPv4 address.
function parseV6(text: string): Uint8Array | undefined {
  let body = text;
  const tail: number[] = [];
  const lastColon = body.lastIndexOf(":");
  if (lastColon < 0) return undefined;
  if (body.slice(lastColon + 1).includes(".")) {
    const v4 = parseV4(body.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail.push(v4[0] * 256 + v4[1], v4[2] * 256 + v4[3]);
    body = body.slice(0, lastColon + 1);
    if (!body.endsWith("::")) body = body.slice(0, -1);
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0]);
  const rest = halves.length === 2 ? parseGroups(halves[1]) : [];
  if (head === undefined || rest === undefined) return undefined;
  const explicit = head.length + rest.length + tail.length;
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined;
  const groups = [...head, ...new Array<number>(8 - explicit).fill(0), ...rest, ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

/**
 * The bytes of an IP address literal: 4 for IPv4 (dotted quad), 16 for IPv6 (brackets and a
 * `%zone` suffix allowed, a dotted IPv4 tail too), `undefined` for anything else.
 *
 * @example
 * ```ts
 * import { ipBytes } from "./ip_address.ts";
 * console.log(ipBytes("127.0.0.1")); // Uint8Array(4) [ 127, 0, 0, 1 ]
 * console.log(ipBytes("[::1]")?.length); // 16
 * console.log(ipBytes("registry.example")); // undefined
 * ```
 */
export function ipBytes(text: string): Uint8Array | undefined {
  let body = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (body.includes(":")) {
    const zone = body.indexOf("%");
    if (zone >= 0) body = body.slice(0, zone);
    return parseV6(body);
  }
  return parseV4(body);
}

/** An address prefix: a network's first bytes and how many of its bits count. */
export interface IpPrefix {
  /** 4 or 16 bytes. */
  readonly network: Uint8Array;
  /** Prefix length in bits (0–32 or 0–128). */
  readonly bits: number;
}

/**
 * Parses `address/bits` (CIDR notation), or `undefined` when it is not one.
 *
 * @example
 * ```ts
 * import { parsePrefix } from "./ip_address.ts";
 * console.log(parsePrefix("10.0.0.0/8")?.bits); // 8
 * console.log(parsePrefix("fc00::/7")?.network.length); // 16
 * ```
 */
export function parsePrefix(text: string): IpPrefix | undefined {
  const slash = text.lastIndexOf("/");
  if (slash < 0 || !/^\d{1,3}$/.test(text.slice(slash + 1))) return undefined;
  const network = ipBytes(text.slice(0, slash));
  const bits = Number(text.slice(slash + 1));
  if (network === undefined || bits > network.length * 8) return undefined;
  return { network, bits };
}

/**
 * Whether `address` (bytes of {@linkcode ipBytes}) lies in `prefix`; addresses of the other
 * family never do.
 *
 * @example
 * ```ts
 * import { inPrefix, ipBytes, parsePrefix } from "./ip_address.ts";
 * console.log(inPrefix(ipBytes("10.1.2.3")!, parsePrefix("10.0.0.0/8")!)); // true
 * ```
 */
export function inPrefix(address: Uint8Array, prefix: IpPrefix): boolean {
  if (address.length !== prefix.network.length) return false;
  const whole = Math.floor(prefix.bits / 8);
  for (let i = 0; i < whole; i++) if (address[i] !== prefix.network[i]) return false;
  const rest = prefix.bits % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (address[whole] & mask) === (prefix.network[whole] & mask);
}
