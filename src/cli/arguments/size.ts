/**
 * Parses byte sizes given on the command line: the one parser of every size flag.
 *
 * @module
 */

const IEC = 1024;
const SI = 1000;

// Lower-cased suffix → multiplier. SI letters and their `B` forms are powers of 1000, as in
// `100M` or `100MB`; IEC forms (`Ki`, `KiB`, …) powers of 1024.
const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  ...unitFamily(["k", "m", "g", "t"], SI, ["", "b"]),
  ...unitFamily(["k", "m", "g", "t"], IEC, ["i", "ib"]),
};

function unitFamily(
  letters: readonly string[],
  base: number,
  tails: readonly string[],
): Record<string, number> {
  const units: Record<string, number> = {};
  letters.forEach((letter, i) => {
    for (const tail of tails) units[`${letter}${tail}`] = base ** (i + 1);
  });
  return units;
}

/**
 * Parses a byte size: a plain byte count (`1048576`), an SI size (`100K`, `100M`, `100MB`,
 * `1.5G`, `2TB`: powers of 1000) or an IEC size (`512KiB`, `64MiB`, `1Gi`, `1TiB`: powers of
 * 1024). Suffixes are case-insensitive; a space before the suffix is allowed. The result must
 * be a positive safe integer.
 *
 * @throws {RangeError} When the text is not such a size.
 *
 * @example
 * ```ts
 * import { parseSize } from "./size.ts";
 * console.log(parseSize("64MiB"), parseSize("100MB"), parseSize("100M")); // 67108864 100000000 100000000
 * ```
 */
export function parseSize(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match && /^\s*-\s*\d/.test(text)) {
    throw new RangeError("must be a positive byte count such as 100M or 64MiB, not negative");
  }
  if (!match) {
    throw new RangeError("expected a byte count such as 1048576, 100M, 100MB or 64MiB");
  }
  const unit = UNITS[match[2].toLowerCase()];
  if (unit === undefined) {
    throw new RangeError("unknown size unit; use B, K/M/G/T(B) for 1000s or KiB/MiB/GiB/TiB");
  }
  const bytes = Number(match[1]) * unit;
  if (!Number.isSafeInteger(bytes)) {
    throw new RangeError("size must be a whole number of bytes");
  }
  if (bytes <= 0) throw new RangeError("size must be positive");
  return bytes;
}
