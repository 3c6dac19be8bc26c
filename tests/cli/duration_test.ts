import { strictEqual, throws } from "node:assert/strict";
import { parseDuration } from "../../src/cli/arguments/duration.ts";

Deno.test("parseDuration reads Go-style durations in milliseconds", () => {
  strictEqual(parseDuration("0"), 0);
  strictEqual(parseDuration("90s"), 90_000);
  strictEqual(parseDuration("10m"), 600_000);
  strictEqual(parseDuration("1h30m"), 5_400_000);
  strictEqual(parseDuration("1m30s"), 90_000);
  strictEqual(parseDuration("1.5s"), 1500);
  strictEqual(parseDuration("250ms"), 250);
  strictEqual(parseDuration("0s"), 0);
  strictEqual(parseDuration("0.0001s"), 1, "a tiny positive duration stays positive");
});

Deno.test("parseDuration refuses negative, unitless and malformed durations", () => {
  throws(() => parseDuration("-5s"), /negative/);
  throws(() => parseDuration("-0"), /negative/);
  for (const bad of ["", "5", "5x", "s", "1h 30m", "1d", "m5", "1.s", "5s junk"]) {
    throws(() => parseDuration(bad), RangeError, bad);
  }
});
