import { assertEquals, assertThrows } from "../fixtures/assert.ts";
import { MAX_PARTS } from "../../src/parted/format.ts";
import { partCount, planParts, smallestPartSize } from "../../src/parted/plan.ts";
import { TooManyPartsError } from "../../src/parted/too_many_parts_error.ts";

Deno.test("plan: part i covers [i*P, min((i+1)*P, size))", () => {
  const P = 10;
  const cases: [number, number[]][] = [
    [0, [0]],
    [1, [1]],
    [P - 1, [P - 1]],
    [P, [P]],
    [P + 1, [P, 1]],
    [3 * P, [P, P, P]],
    [3 * P + 1, [P, P, P, 1]],
  ];
  for (const [size, sizes] of cases) {
    const parts = planParts(size, P);
    assertEquals(parts.map((p) => p.size), sizes, `size ${size}`);
    assertEquals(parts.map((p) => p.offset), sizes.map((_, i) => i * P), `offsets of ${size}`);
    assertEquals(parts.map((p) => p.index), sizes.map((_, i) => i));
    assertEquals(partCount(size, P), sizes.length);
  }
});

Deno.test("plan: exactly 4096 parts is accepted, 4097 is rejected naming the smallest part size", () => {
  assertEquals(planParts(MAX_PARTS * 3, 3).length, MAX_PARTS);
  const err = assertThrows(() => planParts(MAX_PARTS * 3 + 1, 3), TooManyPartsError);
  assertEquals(err.minPartSize, 4);
  assertEquals(smallestPartSize(MAX_PARTS * 3 + 1), 4);
  assertEquals(
    err.message,
    "file needs more than 4096 parts at this part size; the smallest part size that fits is 4 bytes",
  );
  // The named size really fits.
  assertEquals(planParts(MAX_PARTS * 3 + 1, err.minPartSize).length <= MAX_PARTS, true);
});

Deno.test("plan: non-positive or unsafe part sizes are RangeErrors", () => {
  for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 60]) {
    assertThrows(() => planParts(10, bad), RangeError);
  }
  assertThrows(() => planParts(-1, 10), RangeError);
});
