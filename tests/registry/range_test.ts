import { assert, assertEquals, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { ProtocolError } from "../../src/errors/mod.ts";
import {
  formatContentRange,
  formatRange,
  parseContentRange,
  parseRangeRequest,
  parseUploadRange,
  validateContentRange,
} from "../../src/registry/range.ts";

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

const MAX = Number.MAX_SAFE_INTEGER; // 9007199254740991

Deno.test("formatRange writes bytes=start-[end] and refuses impossible bounds", () => {
  assertStrictEquals(formatRange(0), "bytes=0-");
  assertStrictEquals(formatRange(1024), "bytes=1024-");
  assertStrictEquals(formatRange(0, 0), "bytes=0-0");
  assertStrictEquals(formatRange(10, 19), "bytes=10-19");
  assertStrictEquals(formatRange(MAX - 1, MAX), `bytes=${MAX - 1}-${MAX}`);
  for (
    const [start, end] of [
      [-1, undefined],
      [1.5, undefined],
      [NaN, undefined],
      [5, 4],
      [
        0,
        MAX + 1,
      ],
      [MAX + 1, undefined],
      [0, -1],
    ]
  ) {
    assertThrows(() => formatRange(start!, end), RangeError);
  }
});

Deno.test("parseContentRange reads the satisfied, unknown-total and unsatisfied forms", () => {
  assertEquals(parseContentRange("bytes 0-9/10"), { start: 0, end: 9, total: 10 });
  assertEquals(parseContentRange("bytes 0-9/*"), { start: 0, end: 9 });
  assertEquals(parseContentRange("bytes */10"), { unsatisfied: true, total: 10 });
  assertEquals(parseContentRange("bytes */0"), { unsatisfied: true, total: 0 });
  assertEquals(parseContentRange("bytes 5-5/6"), { start: 5, end: 5, total: 6 });
  assertEquals(parseContentRange(" bytes 1-2/3 "), { start: 1, end: 2, total: 3 });
  assertEquals(parseContentRange("Bytes 1-2/3"), { start: 1, end: 2, total: 3 });
  assertEquals(parseContentRange(`bytes ${MAX - 1}-${MAX - 1}/${MAX}`), {
    start: MAX - 1,
    end: MAX - 1,
    total: MAX,
  });
});

Deno.test("parseContentRange rejects malformed and inconsistent values with ProtocolError", () => {
  for (
    const value of [
      "",
      "bytes",
      "0-9/10", // missing unit
      "items 0-9/10",
      "bytes=0-9/10",
      "bytes 0-9",
      "bytes 9-0/10", // reversed
      "bytes 0-10/10", // end = total
      "bytes 0-11/10", // end > total
      "bytes a-9/10",
      "bytes 0-9/ten",
      "bytes -1-9/10",
      "bytes 0--9/10",
      "bytes 0-9/-10",
      "bytes 0x1-9/10",
      "bytes 1e3-2e3/3e3",
      "bytes 0-9/10, bytes 20-29/30",
      "bytes */*",
      "bytes */",
      "bytes 0 -9/10",
      `bytes 0-${MAX + 1}/*`, // beyond Number.MAX_SAFE_INTEGER
      `bytes 0-1/${MAX + 1}`,
      "bytes 0-1/99999999999999999999999",
      `bytes */${MAX + 1}`,
    ]
  ) {
    const err = thrown(() => parseContentRange(value, "GET blob"));
    assert(err instanceof ProtocolError, value);
    assert(err.message.startsWith("GET blob: "), value);
    assertStrictEquals(err.retryable, false);
  }
});

Deno.test("validateContentRange checks start, end and total against the request", () => {
  const op = "GET blob";
  assertEquals(validateContentRange("bytes 0-9/10", { start: 0, end: 9, total: 10 }, op), {
    start: 0,
    end: 9,
    total: 10,
  });
  // A shorter portion is valid: the caller asks for the rest.
  assertEquals(validateContentRange("bytes 100-199/1000", { start: 100, end: 499 }, op), {
    start: 100,
    end: 199,
    total: 1000,
  });
  // Open-ended request, unknown total on either side.
  assertEquals(validateContentRange("bytes 5-9/*", { start: 5 }, op), { start: 5, end: 9 });
  // A "*" total is consistent with a known total as long as the end fits.
  assertEquals(validateContentRange("bytes 5-9/*", { start: 5, total: 10 }, op), {
    start: 5,
    end: 9,
  });
  const rejected: [string | null, { start: number; end?: number; total?: number }, string][] = [
    [null, { start: 0 }, "missing Content-Range"],
    ["bytes */10", { start: 0 }, "unsatisfied Content-Range on a partial answer"],
    ["bytes 0-9/10", { start: 5 }, "Content-Range starts elsewhere than requested"],
    ["bytes 6-9/10", { start: 5 }, "Content-Range starts elsewhere than requested"],
    ["bytes 0-20/30", { start: 0, end: 9 }, "Content-Range ends after the requested end"],
    ["bytes 0-9/11", { start: 0, total: 10 }, "Content-Range total disagrees with the known size"],
    ["bytes 0-10/*", { start: 0, total: 10 }, "Content-Range end beyond the known size"],
    ["garbage", { start: 0 }, "malformed Content-Range"],
  ];
  for (const [value, expected, rule] of rejected) {
    const err = thrown(() => validateContentRange(value, expected, op));
    assert(err instanceof ProtocolError, String(value));
    assertStrictEquals(err.message, `${op}: ${rule}`);
  }
});

Deno.test("parseUploadRange reads session acknowledgements with and without bytes=", () => {
  assertEquals(parseUploadRange("0-0"), { start: 0, end: 0 });
  assertEquals(parseUploadRange("0-1048575"), { start: 0, end: 1048575 });
  assertEquals(parseUploadRange("bytes=0-1048575"), { start: 0, end: 1048575 });
  assertEquals(parseUploadRange("bytes=0-0"), { start: 0, end: 0 });
  assertEquals(parseUploadRange(" 0-99 "), { start: 0, end: 99 });
  assertEquals(parseUploadRange(`0-${MAX}`), { start: 0, end: MAX });
  for (
    const value of [
      null,
      "",
      "0",
      "0-",
      "-5",
      "5-4",
      "bytes 0-4",
      "bytes=0-4/5",
      "a-b",
      "0-1,2-3",
      `0-${MAX + 1}`,
    ]
  ) {
    const err = thrown(() => parseUploadRange(value, "PATCH blob upload"));
    assert(err instanceof ProtocolError, String(value));
    assert(err.message.startsWith("PATCH blob upload: "));
  }
});

Deno.test("parseRangeRequest interprets a server's Range header", () => {
  assertStrictEquals(parseRangeRequest(null, 10), undefined);
  assertEquals(parseRangeRequest("bytes=0-9", 10), { start: 0, end: 9 });
  assertEquals(parseRangeRequest("bytes=2-5", 10), { start: 2, end: 5 });
  assertEquals(parseRangeRequest("bytes=5-", 10), { start: 5, end: 9 });
  assertEquals(parseRangeRequest("bytes=5-100", 10), { start: 5, end: 9 });
  assertEquals(parseRangeRequest("bytes=-3", 10), { start: 7, end: 9 });
  assertEquals(parseRangeRequest("bytes=-30", 10), { start: 0, end: 9 });
  assertEquals(parseRangeRequest("bytes=9-9", 10), { start: 9, end: 9 });
  assertEquals(parseRangeRequest("bytes=10-", 10), { unsatisfied: true, total: 10 });
  assertEquals(parseRangeRequest("bytes=10-20", 10), { unsatisfied: true, total: 10 });
  assertEquals(parseRangeRequest("bytes=-0", 10), { unsatisfied: true, total: 10 });
  assertEquals(parseRangeRequest("bytes=0-", 0), { unsatisfied: true, total: 0 });
  // Malformed, reversed and multi-range headers are ignored: serve the whole content.
  for (const value of ["", "bytes=", "bytes=5-2", "bytes=a-", "items=0-1", "bytes=0-1,3-4"]) {
    assertStrictEquals(parseRangeRequest(value, 10), undefined, value);
  }
  assertStrictEquals(parseRangeRequest(`bytes=${MAX + 1}-`, 10), undefined);
});

Deno.test("formatContentRange is what parseContentRange reads", () => {
  assertStrictEquals(formatContentRange(0, 9, 10), "bytes 0-9/10");
  assertStrictEquals(formatContentRange(0, 9, undefined), "bytes 0-9/*");
  assertStrictEquals(formatContentRange(undefined, undefined, 10), "bytes */10");
  assertEquals(parseContentRange(formatContentRange(3, 4, 5)), { start: 3, end: 4, total: 5 });
  assertEquals(parseContentRange(formatContentRange(undefined, undefined, 5)), {
    unsatisfied: true,
    total: 5,
  });
});
