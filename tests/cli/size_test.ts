import { strictEqual, throws } from "node:assert/strict";
import { parseSize } from "../../src/cli/size.ts";

Deno.test("parseSize reads byte counts and binary suffixes", () => {
  strictEqual(parseSize("1048576"), 1048576);
  strictEqual(parseSize("512KiB"), 512 * 1024);
  strictEqual(parseSize("64MiB"), 64 * 1024 * 1024);
  strictEqual(parseSize("64mib"), 64 * 1024 * 1024);
  strictEqual(parseSize("1GiB"), 1024 ** 3);
  strictEqual(parseSize("1.5GiB"), 1.5 * 1024 ** 3);
  strictEqual(parseSize("2 TiB"), 2 * 1024 ** 4);
  strictEqual(parseSize("100B"), 100);
});

Deno.test("parseSize refuses ambiguous, fractional-byte, zero and malformed sizes", () => {
  for (
    const bad of ["", "MiB", "10MB", "10 GB", "1.5", "0", "0KiB", "-1", "1e9", "12abc", "0x10"]
  ) {
    throws(() => parseSize(bad), RangeError, bad);
  }
});
