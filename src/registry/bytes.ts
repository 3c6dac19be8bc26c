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
