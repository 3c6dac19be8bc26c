/**
 * Which peer addresses a cross-host request must never reach.
 *
 * @module
 */
import { isIP } from "node:net";

// [network, prefix length] of every forbidden IPv4 range.
const FORBIDDEN_V4: ReadonlyArray<readonly [number, number]> = [
  [0x00000000, 8], // 0.0.0.0/8 "this network"
  [0x7f000000, 8], // 127/8 loopback
  [0x0a000000, 8], // 10/8 private
  [0xac100000, 12], // 172.16/12 private
  [0xc0a80000, 16], // 192.168/16 private
  [0xa9fe0000, 16], // 169.254/16 link-local (cloud metadata lives here)
  [0x64400000, 10], // 100.64/10 carrier-grade NAT
];

function parseV4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

function forbiddenV4(value: number): boolean {
  return FORBIDDEN_V4.some(([network, bits]) => {
    const size = 2 ** (32 - bits);
    return Math.floor(value / size) === Math.floor(network / size);
  });
}

// Expands an IPv6 text (optionally ending in a dotted IPv4) into eight 16-bit groups.
function parseV6(text: string): number[] | undefined {
  let body = text;
  const tail: number[] = [];
  const lastColon = body.lastIndexOf(":");
  const last = body.slice(lastColon + 1);
  if (last.includes(".")) {
    const v4 = parseV4(last);
    if (v4 === undefined) return undefined;
    tail.push(Math.floor(v4 / 65536), v4 % 65536);
    body = body.slice(0, lastColon + 1);
    if (!body.endsWith("::")) body = body.slice(0, -1);
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const parse = (half: string): number[] | undefined => {
    if (half === "") return [];
    const out: number[] = [];
    for (const group of half.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
      out.push(parseInt(group, 16));
    }
    return out;
  };
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  if (head === undefined || rest === undefined) return undefined;
  const explicit = head.length + rest.length + tail.length;
  if (halves.length === 1) return explicit === 8 ? [...head, ...tail] : undefined;
  if (explicit > 7) return undefined;
  return [...head, ...new Array<number>(8 - explicit).fill(0), ...rest, ...tail];
}

/**
 * Reports whether a peer address is loopback, private, link-local, carrier-grade NAT or
 * unspecified, including such IPv4 addresses written as IPv4-mapped IPv6 (`::ffff:10.0.0.1`,
 * `::ffff:a00:1`). Cross-host requests (storage redirects, token realms) must not reach them.
 * Text that is not an IP address is reported as forbidden, so a guard built on this fails
 * closed.
 *
 * Forbidden: IPv4 0.0.0.0/8, 127/8, 10/8, 172.16/12, 192.168/16, 169.254/16, 100.64/10;
 * IPv6 `::`, `::1`, fe80::/10, fc00::/7, and IPv4-mapped forms of the IPv4 ranges.
 *
 * @example A guard for cross-host requests
 * ```ts
 * import { isForbiddenPeerAddress } from "@ocipart/ocipart/transport";
 * console.log(isForbiddenPeerAddress("169.254.169.254")); // true
 * console.log(isForbiddenPeerAddress("::ffff:7f00:1")); // true
 * console.log(isForbiddenPeerAddress("203.0.113.7")); // false
 * ```
 */
export function isForbiddenPeerAddress(address: string): boolean {
  const text = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const family = isIP(text.split("%")[0]);
  if (family === 4) {
    const value = parseV4(text);
    return value === undefined || forbiddenV4(value);
  }
  if (family !== 6) return true;
  const groups = parseV6(text);
  if (groups === undefined) return true;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups;
  const prefixZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (prefixZero && g5 === 0 && g6 === 0 && (g7 === 0 || g7 === 1)) return true; // :: and ::1
  if (prefixZero && g5 === 0xffff) return forbiddenV4(g6 * 65536 + g7); // IPv4-mapped
  if ((g0 & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((g0 & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  return false;
}
