/**
 * The `--range` of `ocipart cat`: `START-END` (both bytes included, as HTTP and `curl -r`
 * count), `START-` (to the end of the file) or `START+LENGTH` (LENGTH may be 0).
 *
 * @module
 */

/** A range as typed: its first byte and its length (undefined: to the end of the file). */
export interface ByteRange {
  /** The first byte. */
  readonly offset: number;
  /** The number of bytes, or undefined for the rest of the file. */
  readonly length: number | undefined;
}

/**
 * Parses `--range`; throws an `Error` whose message says what is wrong.
 *
 * @example
 * ```ts
 * import { parseByteRange } from "./byte_range.ts";
 * console.log(parseByteRange("0-7"), parseByteRange("8+100"), parseByteRange("5-"));
 * // { offset: 0, length: 8 } { offset: 8, length: 100 } { offset: 5, length: undefined }
 * ```
 */
export function parseByteRange(text: string): ByteRange {
  const match = /^\s*(\d+)\s*([-+])\s*(\d*)\s*$/.exec(text);
  if (match === null) throw new Error("expected START-END, START- or START+LENGTH (bytes)");
  const offset = integer(match[1]);
  if (match[3] === "") {
    if (match[2] === "+") throw new Error("START+ needs a LENGTH");
    return { offset, length: undefined };
  }
  const n = integer(match[3]);
  if (match[2] === "+") return { offset, length: n };
  if (n < offset) throw new Error("END comes before START (END is the last byte read)");
  return { offset, length: n - offset + 1 };
}

function integer(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error("a byte position too large");
  return n;
}
