/**
 * Byte-array helpers shared by the layers that collect small bodies (manifests, token answers,
 * credential helper output).
 *
 * @module
 */

/**
 * Joins `chunks` into one array of `length` bytes (default: their total). A single chunk of
 * exactly that length is returned as is.
 *
 * @example Joining two chunks
 * ```ts
 * import { concatBytes } from "./bytes.ts";
 * console.log(concatBytes([new Uint8Array([1]), new Uint8Array([2, 3])])); // Uint8Array(3) [1, 2, 3]
 * ```
 */
export function concatBytes(
  chunks: readonly Uint8Array[],
  length: number = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0),
): Uint8Array {
  if (chunks.length === 1 && chunks[0]!.byteLength === length) return chunks[0]!;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

const BINARY_UNITS = ["KiB", "MiB", "GiB", "TiB"];

/**
 * `bytes` as a whole number of the largest binary unit that divides it (`{ value: 512, unit:
 * "MiB" }`), or undefined when no unit does (fewer than 1 KiB, or not a multiple of 1 KiB).
 *
 * @example A whole MiB
 * ```ts
 * import { wholeBinaryUnit } from "@ocipart/ocipart/parted";
 * console.log(wholeBinaryUnit(512 * 1024 * 1024), wholeBinaryUnit(1000)); // { value: 512, unit: "MiB" } undefined
 * ```
 */
export function wholeBinaryUnit(bytes: number): { value: number; unit: string } | undefined {
  let unit = -1;
  let value = bytes;
  while (unit < BINARY_UNITS.length - 1 && value >= 1024 && value % 1024 === 0) {
    value /= 1024;
    unit++;
  }
  return unit < 0 ? undefined : { value, unit: BINARY_UNITS[unit]! };
}
