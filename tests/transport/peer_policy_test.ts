import assert from "node:assert/strict";
import { isForbiddenPeerAddress } from "../../src/transport/peer_policy.ts";

const table: ReadonlyArray<readonly [string, boolean]> = [
  // IPv4 "this network", loopback, private, link-local, CGNAT
  ["0.0.0.0", true],
  ["0.255.255.255", true],
  ["127.0.0.1", true],
  ["127.255.255.254", true],
  ["10.0.0.1", true],
  ["10.255.255.255", true],
  ["172.16.0.1", true],
  ["172.31.255.255", true],
  ["192.168.0.1", true],
  ["192.168.255.255", true],
  ["169.254.169.254", true],
  ["100.64.0.1", true],
  ["100.127.255.255", true],
  // IPv4 neighbours of those ranges and public addresses
  ["1.0.0.0", false],
  ["9.255.255.255", false],
  ["11.0.0.0", false],
  ["126.255.255.255", false],
  ["128.0.0.1", false],
  ["172.15.255.255", false],
  ["172.32.0.0", false],
  ["192.167.255.255", false],
  ["192.169.0.0", false],
  ["169.253.255.255", false],
  ["169.255.0.0", false],
  ["100.63.255.255", false],
  ["100.128.0.0", false],
  ["8.8.8.8", false],
  ["203.0.113.7", false],
  // IPv6 unspecified, loopback, link-local, unique local
  ["::", true],
  ["::1", true],
  ["0:0:0:0:0:0:0:1", true],
  ["[::1]", true],
  ["fe80::1", true],
  ["fe80::1%eth0", true],
  ["febf:ffff::1", true],
  ["fc00::1", true],
  ["fd12:3456:789a::1", true],
  ["FD00::ABCD", true],
  // IPv6 neighbours and public addresses
  ["::2", false],
  ["fec0::1", false],
  ["fe7f::1", false],
  ["fb00::1", false],
  ["fe00::1", false],
  ["2001:db8::1", false],
  ["2606:4700:4700::1111", false],
  // IPv4-mapped IPv6, dotted and hex forms
  ["::ffff:127.0.0.1", true],
  ["::ffff:7f00:1", true],
  ["::ffff:10.1.2.3", true],
  ["::ffff:a01:203", true],
  ["::ffff:169.254.169.254", true],
  ["::ffff:a9fe:a9fe", true],
  ["::ffff:100.64.0.1", true],
  ["0:0:0:0:0:ffff:192.168.1.1", true],
  ["::ffff:0.0.0.0", true],
  ["::ffff:8.8.8.8", false],
  ["::ffff:808:808", false],
  // IPv4-compatible (deprecated) and NAT64 forms are ordinary public IPv6 here
  ["64:ff9b::808:808", false],
  // Not an address at all: refused, so a guard fails closed
  ["localhost", true],
  ["", true],
  ["256.1.1.1", true],
  ["1:2:3", true],
];

Deno.test("isForbiddenPeerAddress classifies the address table", () => {
  for (const [address, forbidden] of table) {
    assert.equal(isForbiddenPeerAddress(address), forbidden, address);
  }
});
