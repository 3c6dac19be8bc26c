/**
 * Which peer addresses a cross-host request must never reach: every range the IANA
 * special-purpose address registries (IPv4 and IPv6) mark as not globally reachable, plus
 * multicast and the reserved IPv4 block. An IPv6 address that carries an IPv4 one (mapped,
 * compatible, translated, NAT64, 6to4) is judged by the IPv4 address it carries.
 *
 * @module
 */
import { inPrefix, ipBytes, type IpPrefix, parsePrefix } from "./ip_address.ts";

/** One row of the policy: a range, what it is, and how an address in it is judged. */
interface PolicyRow {
  readonly range: string;
  readonly name: string;
  /** Byte offset of the IPv4 address the range carries; absent: the range is refused. */
  readonly ipv4At?: number;
}

const ROWS: readonly PolicyRow[] = [
  { range: "0.0.0.0/8", name: "this network" },
  { range: "10.0.0.0/8", name: "private use" },
  { range: "100.64.0.0/10", name: "shared address space (carrier-grade NAT)" },
  { range: "127.0.0.0/8", name: "loopback" },
  { range: "169.254.0.0/16", name: "link-local (cloud metadata)" },
  { range: "172.16.0.0/12", name: "private use" },
  { range: "192.0.0.0/24", name: "IETF protocol assignments" },
  { range: "192.0.2.0/24", name: "documentation (TEST-NET-1)" },
  { range: "192.88.99.0/24", name: "6to4 relay anycast (deprecated)" },
  { range: "192.168.0.0/16", name: "private use" },
  { range: "198.18.0.0/15", name: "benchmarking" },
  { range: "198.51.100.0/24", name: "documentation (TEST-NET-2)" },
  { range: "203.0.113.0/24", name: "documentation (TEST-NET-3)" },
  { range: "224.0.0.0/4", name: "multicast" },
  { range: "240.0.0.0/4", name: "reserved, and 255.255.255.255 limited broadcast" },
  { range: "::/128", name: "unspecified" },
  { range: "::1/128", name: "loopback" },
  { range: "100::/64", name: "discard-only" },
  { range: "2001::/32", name: "Teredo" },
  { range: "2001:2::/48", name: "benchmarking" },
  { range: "2001:10::/28", name: "ORCHID (deprecated)" },
  { range: "2001:db8::/32", name: "documentation" },
  { range: "3fff::/20", name: "documentation" },
  { range: "5f00::/16", name: "segment routing (SRv6) SIDs" },
  { range: "64:ff9b:1::/48", name: "local-use IPv4/IPv6 translation" },
  { range: "fc00::/7", name: "unique local" },
  { range: "fe80::/10", name: "link-local" },
  { range: "fec0::/10", name: "site-local (deprecated)" },
  { range: "ff00::/8", name: "multicast" },
  { range: "::ffff:0:0/96", name: "IPv4-mapped", ipv4At: 12 },
  { range: "::ffff:0:0:0/96", name: "IPv4-translated", ipv4At: 12 },
  { range: "::/96", name: "IPv4-compatible (deprecated)", ipv4At: 12 },
  { range: "64:ff9b::/96", name: "IPv4/IPv6 translation (NAT64)", ipv4At: 12 },
  { range: "2002::/16", name: "6to4", ipv4At: 2 },
];

const TABLE: ReadonlyArray<{ prefix: IpPrefix; ipv4At: number | undefined }> = ROWS.map(
  (row) => ({ prefix: parsePrefix(row.range)!, ipv4At: row.ipv4At }),
);

function forbiddenBytes(address: Uint8Array): boolean {
  // Refused ranges first: `::` and `::1` are refused as such, not as IPv4-compatible forms.
  const refused = TABLE.some((row) => row.ipv4At === undefined && inPrefix(address, row.prefix));
  if (refused) return true;
  const carrier = TABLE.find((row) => row.ipv4At !== undefined && inPrefix(address, row.prefix));
  if (carrier === undefined) return false;
  return forbiddenBytes(address.subarray(carrier.ipv4At!, carrier.ipv4At! + 4));
}

/**
 * Reports whether a cross-host request (token realm, storage redirect, off-origin upload
 * session) must not reach a peer address: loopback, private, link-local, carrier-grade NAT,
 * unspecified, benchmarking, documentation, multicast, broadcast, reserved, discard-only,
 * unique local, site-local, Teredo and the other IANA special-purpose ranges that are not
 * globally reachable. An IPv6 address carrying an IPv4 one (`::ffff:127.0.0.1`,
 * `::127.0.0.1`, `64:ff9b::7f00:1`, `2002:7f00:1::`) is judged by that IPv4 address. Text that
 * is not an IP address is reported as forbidden, so a guard built on this fails closed.
 *
 * @example A guard for cross-host requests
 * ```ts
 * import { isForbiddenPeerAddress } from "@ocipart/ocipart/transport";
 * console.log(isForbiddenPeerAddress("169.254.169.254")); // true
 * console.log(isForbiddenPeerAddress("64:ff9b::7f00:1")); // true
 * console.log(isForbiddenPeerAddress("198.18.0.1")); // true
 * console.log(isForbiddenPeerAddress("8.8.8.8")); // false
 * ```
 */
export function isForbiddenPeerAddress(address: string): boolean {
  const bytes = ipBytes(address);
  return bytes === undefined || forbiddenBytes(bytes);
}
