import { assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { parseSize } from "../../src/cli/arguments/size.ts";

Deno.test("parseSize reads byte counts and IEC suffixes (powers of 1024)", () => {
  assertStrictEquals(parseSize("1048576"), 1048576);
  assertStrictEquals(parseSize("512KiB"), 512 * 1024);
  assertStrictEquals(parseSize("64MiB"), 64 * 1024 * 1024);
  assertStrictEquals(parseSize("64mib"), 64 * 1024 * 1024);
  assertStrictEquals(parseSize("100Mi"), 100 * 1024 * 1024);
  assertStrictEquals(parseSize("1GiB"), 1024 ** 3);
  assertStrictEquals(parseSize("1.5GiB"), 1.5 * 1024 ** 3);
  assertStrictEquals(parseSize("2 TiB"), 2 * 1024 ** 4);
  assertStrictEquals(parseSize("100B"), 100);
});

Deno.test("parseSize reads SI suffixes with and without B (powers of 1000)", () => {
  assertStrictEquals(parseSize("100M"), 100_000_000);
  assertStrictEquals(parseSize("100MB"), 100_000_000);
  assertStrictEquals(parseSize("100mb"), 100_000_000);
  assertStrictEquals(parseSize("10 GB"), 10_000_000_000);
  assertStrictEquals(parseSize("512k"), 512_000);
  assertStrictEquals(parseSize("1.5G"), 1_500_000_000);
  assertStrictEquals(parseSize("2TB"), 2_000_000_000_000);
});

Deno.test("parseSize refuses unknown units, fractional bytes, zero and malformed sizes", () => {
  for (
    const bad of ["", "MiB", "10XB", "10 PB", "1.5", "1.5K9", "0", "0KiB", "0M", "-1", "1e9"]
  ) {
    assertThrows(() => parseSize(bad), RangeError);
  }
  for (const bad of ["12abc", "0x10", "1.0000001K", "10MiBs"]) {
    assertThrows(() => parseSize(bad), RangeError);
  }
});
