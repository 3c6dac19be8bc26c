import { assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { parseDuration } from "../../src/cli/arguments/duration.ts";

Deno.test("parseDuration reads Go-style durations in milliseconds", () => {
  assertStrictEquals(parseDuration("0"), 0);
  assertStrictEquals(parseDuration("90s"), 90_000);
  assertStrictEquals(parseDuration("10m"), 600_000);
  assertStrictEquals(parseDuration("1h30m"), 5_400_000);
  assertStrictEquals(parseDuration("1m30s"), 90_000);
  assertStrictEquals(parseDuration("1.5s"), 1500);
  assertStrictEquals(parseDuration("250ms"), 250);
  assertStrictEquals(parseDuration("0s"), 0);
  assertStrictEquals(parseDuration("0.0001s"), 1, "a tiny positive duration stays positive");
});

Deno.test("parseDuration refuses negative, unitless and malformed durations", () => {
  assertThrows(() => parseDuration("-5s"), /negative/);
  assertThrows(() => parseDuration("-0"), /negative/);
  for (const bad of ["", "5", "5x", "s", "1h 30m", "1d", "m5", "1.s", "5s junk"]) {
    assertThrows(() => parseDuration(bad), RangeError);
  }
});
