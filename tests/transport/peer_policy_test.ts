/**
 * The peer policy, one test per range of the IANA special-purpose registries (and multicast,
 * broadcast, reserved): an address inside is refused, the neighbours just outside are not. IPv6
 * forms that carry an IPv4 address are judged by it.
 */
import { assertStrictEquals } from "../fixtures/assert.ts";
import { isForbiddenPeerAddress } from "../../src/transport/peer_policy.ts";

/** [range, what it is, addresses inside (refused), addresses just outside (allowed)]. */
const RANGES: ReadonlyArray<readonly [string, string, string[], string[]]> = [
  ["0.0.0.0/8", "this network", ["0.0.0.0", "0.255.255.255"], ["1.0.0.0"]],
  ["10.0.0.0/8", "private use", ["10.0.0.1", "10.255.255.255"], ["9.255.255.255", "11.0.0.0"]],
  ["100.64.0.0/10", "carrier-grade NAT", ["100.64.0.1", "100.127.255.255"], [
    "100.63.255.255",
    "100.128.0.0",
  ]],
  ["127.0.0.0/8", "loopback", ["127.0.0.1", "127.255.255.254"], ["126.255.255.255", "128.0.0.1"]],
  ["169.254.0.0/16", "link-local", ["169.254.169.254"], ["169.253.255.255", "169.255.0.0"]],
  ["172.16.0.0/12", "private use", ["172.16.0.1", "172.31.255.255"], [
    "172.15.255.255",
    "172.32.0.0",
  ]],
  ["192.0.0.0/24", "IETF protocol assignments", ["192.0.0.1", "192.0.0.170"], ["192.0.1.0"]],
  ["192.0.2.0/24", "documentation", ["192.0.2.1"], ["192.0.3.0"]],
  ["192.88.99.0/24", "6to4 relay anycast", ["192.88.99.1"], ["192.88.98.255", "192.88.100.0"]],
  ["192.168.0.0/16", "private use", ["192.168.0.1", "192.168.255.255"], [
    "192.167.255.255",
    "192.169.0.0",
  ]],
  ["198.18.0.0/15", "benchmarking", ["198.18.0.1", "198.19.255.255"], [
    "198.17.255.255",
    "198.20.0.0",
  ]],
  ["198.51.100.0/24", "documentation", ["198.51.100.7"], ["198.51.101.0"]],
  ["203.0.113.0/24", "documentation", ["203.0.113.7"], ["203.0.114.0"]],
  ["224.0.0.0/4", "multicast", ["224.0.0.1", "239.255.255.255"], ["223.255.255.255"]],
  ["240.0.0.0/4", "reserved and broadcast", ["240.0.0.1", "255.255.255.255"], []],
  ["::/128", "unspecified", ["::", "0:0:0:0:0:0:0:0"], ["::2:0:0"]],
  ["::1/128", "loopback", ["::1", "[::1]", "0:0:0:0:0:0:0:1"], ["::1:0:0:1"]],
  ["100::/64", "discard-only", ["100::1"], ["100:0:0:1::1"]],
  ["2001::/32", "Teredo", ["2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"], ["2001:1::1"]],
  ["2001:2::/48", "benchmarking", ["2001:2::1"], ["2001:2:1::1"]],
  ["2001:10::/28", "ORCHID", ["2001:10::1"], ["2001:20::1"]],
  ["2001:db8::/32", "documentation", ["2001:db8::1"], ["2001:db9::1"]],
  ["3fff::/20", "documentation", ["3fff::1", "3fff:fff::1"], ["3fff:1000::1"]],
  ["5f00::/16", "SRv6 SIDs", ["5f00::1"], ["5f01::1"]],
  ["64:ff9b:1::/48", "local-use translation", ["64:ff9b:1::808:808"], ["64:ff9b:2::1"]],
  ["fc00::/7", "unique local", ["fc00::1", "fd12:3456:789a::1", "FD00::ABCD"], ["fb00::1"]],
  ["fe80::/10", "link-local", ["fe80::1", "fe80::1%eth0", "febf:ffff::1"], ["fe7f::1"]],
  ["fec0::/10", "site-local", ["fec0::1", "feff::1"], []],
  ["ff00::/8", "multicast", ["ff02::1", "ff05::1:3", "ffff:ffff::1"], []],
  ["::ffff:0:0/96", "IPv4-mapped, by its IPv4", [
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.1.2.3",
    "::ffff:169.254.169.254",
    "::ffff:198.18.0.1",
    "::ffff:224.0.0.1",
    "0:0:0:0:0:ffff:192.168.1.1",
  ], ["::ffff:8.8.8.8", "::ffff:808:808"]],
  ["::ffff:0:0:0/96", "IPv4-translated, by its IPv4", ["::ffff:0:127.0.0.1", "::ffff:0:a00:1"], [
    "::ffff:0:808:808",
  ]],
  ["::/96", "IPv4-compatible, by its IPv4", [
    "::127.0.0.1",
    "::7f00:1",
    "::10.0.0.1",
    "::0.0.0.2",
    "::255.255.255.255",
  ], ["::8.8.8.8"]],
  ["64:ff9b::/96", "NAT64, by its IPv4", [
    "64:ff9b::7f00:1",
    "64:ff9b::127.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b::c612:1",
  ], ["64:ff9b::808:808", "64:ff9b::8.8.4.4"]],
  ["2002::/16", "6to4, by its IPv4", ["2002:7f00:1::", "2002:a00:1:1::1", "2002:c0a8:101::1"], [
    "2002:808:808::1",
  ]],
  ["public unicast", "globally reachable", [], [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "2001:1::1",
    "2001:20::1",
  ]],
  ["not an address", "fails closed", ["localhost", "", "256.1.1.1", "1:2:3", "1.2.3", "::g"], []],
];

for (const [range, name, refused, allowed] of RANGES) {
  Deno.test(`peer policy: ${range} (${name})`, () => {
    for (const address of refused) {
      assertStrictEquals(isForbiddenPeerAddress(address), true, `${address} is refused`);
    }
    for (const address of allowed) {
      assertStrictEquals(isForbiddenPeerAddress(address), false, `${address} is allowed`);
    }
  });
}
