/**
 * Byte ranges: `Range` requests, `Content-Range` answers and upload-session `Range`
 * acknowledgements.
 *
 * @module
 */
import { ProtocolError } from "../errors/kinds.ts";

/** A satisfied `Content-Range`: inclusive `start`-`end`, and the total size when stated. */
export interface ContentRange {
  /** The first byte offset of the portion. */
  start: number;
  /** The last byte offset of the portion, inclusive. */
  end: number;
  /** The complete length, when the server stated it (not `*`). */
  total?: number;
}

/** An unsatisfied `Content-Range`: an asterisk in place of the range, then the total (416). */
export interface UnsatisfiedContentRange {
  /** Always true. */
  unsatisfied: true;
  /** The complete length the server stated. */
  total: number;
}

/** What a request's Range was validated against by {@linkcode validateContentRange}. */
export interface ExpectedRange {
  /** The first byte requested. */
  start: number;
  /** The last byte requested, inclusive; absent for an open-ended request. */
  end?: number;
  /** The complete length, when already known. */
  total?: number;
}

/** An inclusive byte range. */
export interface ByteRange {
  /** The first byte offset. */
  start: number;
  /** The last byte offset, inclusive. */
  end: number;
}

// At most 16 digits keeps every accepted number at or below Number.MAX_SAFE_INTEGER's order;
// the safe-integer check then decides.
const NUMBER = "(\\d{1,16})";
const SATISFIED = new RegExp(`^bytes ${NUMBER}-${NUMBER}/(?:${NUMBER}|\\*)$`, "i");
const UNSATISFIED = new RegExp(`^bytes \\*/${NUMBER}$`, "i");
const UPLOAD_RANGE = new RegExp(`^(?:bytes=)?${NUMBER}-${NUMBER}$`, "i");
const RANGE_REQUEST = new RegExp(`^bytes=(?:${NUMBER}-${NUMBER}?|-${NUMBER})$`, "i");

function toSafe(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : Number.NaN;
}

function isOffset(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

/**
 * Formats a `Range` request header value: `bytes=<start>-[<end>]`, `end` inclusive, omitted for
 * an open-ended range.
 *
 * @throws {RangeError} A bound is not a non-negative safe integer, or `end < start`.
 *
 * @example Continuing a broken download
 * ```ts
 * import { formatRange } from "./range.ts";
 * console.log(formatRange(1024)); // "bytes=1024-"
 * console.log(formatRange(0, 9)); // "bytes=0-9"
 * ```
 */
export function formatRange(start: number, end?: number): string {
  if (!isOffset(start)) {
    throw new RangeError(`range start must be a non-negative safe integer, not ${start}`);
  }
  if (end === undefined) return `bytes=${start}-`;
  if (!isOffset(end) || end < start) {
    throw new RangeError(`range end must be a safe integer not below ${start}, not ${end}`);
  }
  return `bytes=${start}-${end}`;
}

/**
 * Formats a `Content-Range` response header value, for servers: `bytes <start>-<end>/<total>`,
 * or the unsatisfied form (an asterisk, a slash and `total`) when `start` is undefined (416).
 *
 * @example Answering a range
 * ```ts
 * import { formatContentRange } from "./range.ts";
 * console.log(formatContentRange(0, 9, 100)); // "bytes 0-9/100"
 * console.log(formatContentRange(undefined, undefined, 100) === "bytes *" + "/100"); // true
 * ```
 */
export function formatContentRange(
  start: number | undefined,
  end: number | undefined,
  total: number | undefined,
): string {
  const size = total === undefined ? "*" : String(total);
  if (start === undefined || end === undefined) return `bytes */${size}`;
  return `bytes ${start}-${end}/${size}`;
}

/**
 * Parses a `Content-Range` value: `bytes <start>-<end>/<total>` (the total may be an asterisk)
 * or the unsatisfied form, an asterisk in place of `<start>-<end>`.
 * Checks `start <= end`, `end < total`, and that every number is a safe integer.
 *
 * @throws {ProtocolError} The value is malformed or inconsistent.
 *
 * @example Parsing a partial answer
 * ```ts
 * import { parseContentRange } from "./range.ts";
 * console.log(parseContentRange("bytes 0-9/10")); // { start: 0, end: 9, total: 10 }
 * console.log(parseContentRange("bytes *" + "/10")); // { unsatisfied: true, total: 10 }
 * ```
 */
export function parseContentRange(
  value: string,
  operation = "Content-Range",
): ContentRange | UnsatisfiedContentRange {
  const text = value.trim();
  const unsatisfied = UNSATISFIED.exec(text);
  if (unsatisfied !== null) {
    const total = toSafe(unsatisfied[1])!;
    if (!isOffset(total)) throw new ProtocolError(`${operation}: Content-Range out of range`);
    return { unsatisfied: true, total };
  }
  const match = SATISFIED.exec(text);
  if (match === null) throw new ProtocolError(`${operation}: malformed Content-Range`);
  const start = toSafe(match[1])!;
  const end = toSafe(match[2])!;
  const total = toSafe(match[3]);
  if (!isOffset(start) || !isOffset(end) || (total !== undefined && !isOffset(total))) {
    throw new ProtocolError(`${operation}: Content-Range out of range`);
  }
  if (end < start) throw new ProtocolError(`${operation}: Content-Range end before start`);
  if (total !== undefined && end >= total) {
    throw new ProtocolError(`${operation}: Content-Range end beyond total`);
  }
  return total === undefined ? { start, end } : { start, end, total };
}

/**
 * Validates the `Content-Range` of a 206 answer against the request: it must be present and
 * satisfied, start exactly at `expected.start`, end at or before `expected.end` (a shorter
 * portion is valid; the caller asks for the rest), and agree with a known total.
 *
 * @throws {ProtocolError} The header is missing, malformed or disagrees with the request.
 *
 * @example Checking a ranged GET
 * ```ts
 * import { validateContentRange } from "./range.ts";
 * const range = validateContentRange("bytes 100-199/1000", { start: 100, end: 499 }, "GET blob");
 * console.log(range.end); // 199
 * ```
 */
export function validateContentRange(
  value: string | null,
  expected: ExpectedRange,
  operation: string,
): ContentRange {
  if (value === null) throw new ProtocolError(`${operation}: missing Content-Range`);
  const range = parseContentRange(value, operation);
  if ("unsatisfied" in range) {
    throw new ProtocolError(`${operation}: unsatisfied Content-Range on a partial answer`);
  }
  if (range.start !== expected.start) {
    throw new ProtocolError(`${operation}: Content-Range starts elsewhere than requested`);
  }
  if (expected.end !== undefined && range.end > expected.end) {
    throw new ProtocolError(`${operation}: Content-Range ends after the requested end`);
  }
  if (expected.total !== undefined) {
    if (range.total !== undefined && range.total !== expected.total) {
      throw new ProtocolError(`${operation}: Content-Range total disagrees with the known size`);
    }
    if (range.end >= expected.total) {
      throw new ProtocolError(`${operation}: Content-Range end beyond the known size`);
    }
  }
  return range;
}

/**
 * Parses the `Range: <start>-<end>` acknowledgement of an upload session (`0-0` for an empty
 * session on Distribution; some registries prefix `bytes=`). `end` is inclusive.
 *
 * @throws {ProtocolError} The header is missing or malformed.
 *
 * @example Reading a chunk acknowledgement
 * ```ts
 * import { parseUploadRange } from "./range.ts";
 * console.log(parseUploadRange("0-1048575")); // { start: 0, end: 1048575 }
 * ```
 */
export function parseUploadRange(value: string | null, operation = "upload session"): ByteRange {
  if (value === null) throw new ProtocolError(`${operation}: missing Range`);
  const match = UPLOAD_RANGE.exec(value.trim());
  if (match === null) throw new ProtocolError(`${operation}: malformed Range`);
  const start = toSafe(match[1])!;
  const end = toSafe(match[2])!;
  if (!isOffset(start) || !isOffset(end)) {
    throw new ProtocolError(`${operation}: Range out of range`);
  }
  if (end < start) throw new ProtocolError(`${operation}: Range end before start`);
  return { start, end };
}

/**
 * Interprets a request's `Range` header for a server holding `size` bytes: a single
 * `bytes=a-b`, `bytes=a-` or `bytes=-n`. Returns the inclusive range to serve (206), an
 * unsatisfied marker (answer 416 with the unsatisfied Content-Range), or `undefined` when the header is absent,
 * malformed or multi-range and the whole content should be served (200).
 *
 * @example Serving a range
 * ```ts
 * import { parseRangeRequest } from "./range.ts";
 * console.log(parseRangeRequest("bytes=5-", 10)); // { start: 5, end: 9 }
 * console.log(parseRangeRequest("bytes=10-", 10)); // { unsatisfied: true, total: 10 }
 * console.log(parseRangeRequest(null, 10)); // undefined
 * ```
 */
export function parseRangeRequest(
  value: string | null,
  size: number,
): ByteRange | UnsatisfiedContentRange | undefined {
  if (value === null) return undefined;
  const match = RANGE_REQUEST.exec(value.trim());
  if (match === null) return undefined;
  const unsatisfied: UnsatisfiedContentRange = { unsatisfied: true, total: size };
  if (match[3] !== undefined) {
    const suffix = toSafe(match[3])!;
    if (!isOffset(suffix)) return undefined;
    if (suffix === 0 || size === 0) return unsatisfied;
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = toSafe(match[1])!;
  const end = toSafe(match[2]);
  if (!isOffset(start) || (end !== undefined && !isOffset(end))) return undefined;
  if (end !== undefined && end < start) return undefined;
  if (start >= size) return unsatisfied;
  return { start, end: Math.min(end ?? size - 1, size - 1) };
}
