/**
 * The split rule: which bytes of a file each part covers.
 *
 * @module
 */
import { MAX_PARTS } from "./format.ts";
import { TooManyPartsError } from "./too_many_parts_error.ts";

/** One part of a file: bytes `[offset, offset + size)`. */
export interface PartRange {
  /** Zero-based position of the part in the file and in the manifest's layers. */
  readonly index: number;
  /** The first byte of the part in the file. */
  readonly offset: number;
  /** The number of bytes; the part size for every part but the last. */
  readonly size: number;
}

/**
 * The number of parts a file of `fileSize` bytes has at `partSize`: at least one (an empty file
 * has one empty part), otherwise `ceil(fileSize / partSize)`. Does not apply the part cap.
 *
 * @example
 * ```ts
 * import { partCount } from "./plan.ts";
 * console.log(partCount(0, 10), partCount(10, 10), partCount(11, 10)); // 1 1 2
 * ```
 */
export function partCount(fileSize: number, partSize: number): number {
  checkSizes(fileSize, partSize);
  return fileSize === 0 ? 1 : Math.ceil(fileSize / partSize);
}

/**
 * The smallest part size at which a file of `fileSize` bytes fits in {@linkcode MAX_PARTS}
 * parts.
 *
 * @example
 * ```ts
 * import { smallestPartSize } from "./plan.ts";
 * console.log(smallestPartSize(4096 * 10 + 1)); // 11
 * ```
 */
export function smallestPartSize(fileSize: number): number {
  return Math.max(1, Math.ceil(fileSize / MAX_PARTS));
}

/**
 * Splits a file into parts: part `i` covers bytes `i * partSize` up to
 * `min((i + 1) * partSize, fileSize)`; a file of at most `partSize` bytes has exactly one part.
 * Throws `TooManyPartsError` (naming the smallest part size that fits) beyond
 * {@linkcode MAX_PARTS} parts, and `RangeError` for sizes that are not safe integers.
 *
 * @example Splitting 25 bytes into 10-byte parts
 * ```ts
 * import { planParts } from "./plan.ts";
 * console.log(planParts(25, 10).map((p) => p.size)); // [10, 10, 5]
 * ```
 */
export function planParts(fileSize: number, partSize: number): PartRange[] {
  const count = partCount(fileSize, partSize);
  if (count > MAX_PARTS) throw new TooManyPartsError(smallestPartSize(fileSize));
  const parts: PartRange[] = [];
  for (let index = 0; index < count; index++) {
    const offset = index * partSize;
    parts.push({ index, offset, size: Math.min(partSize, fileSize - offset) });
  }
  return parts;
}

function checkSizes(fileSize: number, partSize: number): void {
  if (!Number.isSafeInteger(fileSize) || fileSize < 0) {
    throw new RangeError(`file size must be a non-negative safe integer, not ${fileSize}`);
  }
  if (!Number.isSafeInteger(partSize) || partSize <= 0) {
    throw new RangeError(`part size must be a positive safe integer, not ${partSize}`);
  }
}
