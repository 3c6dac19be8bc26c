/**
 * Parses byte sizes given on the command line.
 *
 * @module
 */

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
};

/**
 * Parses a byte size: a plain byte count (`1048576`) or a number with a binary suffix
 * (`512KiB`, `64MiB`, `1.5GiB`, `1TiB`; case-insensitive, `B` allowed). Decimal suffixes such as
 * `MB` are refused because they are ambiguous. The result must be a positive safe integer.
 *
 * @throws {RangeError} When the text is not such a size.
 *
 * @example
 * ```ts
 * import { parseSize } from "./size.ts";
 * console.log(parseSize("64MiB")); // 67108864
 * ```
 */
export function parseSize(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match) throw new RangeError("expected a byte count such as 1048576, 512KiB, 64MiB or 1GiB");
  const unit = UNITS[match[2].toLowerCase()];
  if (unit === undefined) throw new RangeError("unknown size unit; use B, KiB, MiB, GiB or TiB");
  const bytes = Number(match[1]) * unit;
  if (!Number.isSafeInteger(bytes)) {
    throw new RangeError("size must be a whole number of bytes");
  }
  if (bytes <= 0) throw new RangeError("size must be positive");
  return bytes;
}
