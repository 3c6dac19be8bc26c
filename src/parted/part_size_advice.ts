/**
 * Which part size to suggest when a registry limit depends on it: the one place the rounding,
 * the safety margin and the format's part cap are applied to a suggestion.
 *
 * @module
 */
import { smallestPartSize } from "./plan.ts";

/**
 * A suggested part takes at most this share of a request time limit at the measured speed:
 * speeds vary between parts and over a push, and the power-of-two rounding below only adds to
 * the margin.
 */
export const TIME_LIMIT_SHARE = 0.5;

const MIB = 2 ** 20;

/**
 * The largest power of two that is at most `bytes` (1 for anything below 2).
 *
 * @example
 * ```ts
 * import { powerOfTwoAtMost } from "./part_size_advice.ts";
 * console.log(powerOfTwoAtMost(100_000_000)); // 67108864
 * ```
 */
export function powerOfTwoAtMost(bytes: number): number {
  let size = 1;
  while (size * 2 <= bytes) size *= 2;
  return size;
}

/**
 * The part size for a registry that cuts every request after `limitMs`, at `bytesPerSecond` on
 * one connection: a part that takes {@linkcode TIME_LIMIT_SHARE} of the limit, rounded down to a
 * power of two and below `partSize`; `undefined` when a file of `fileSize` bytes would then need
 * more parts than the format allows.
 *
 * @example 10 minutes at 20 MiB/s
 * ```ts
 * import { partSizeForTimeLimit } from "./part_size_advice.ts";
 * const size = partSizeForTimeLimit(64 * 2 ** 30, 16 * 2 ** 30, 20 * 2 ** 20, 600_000);
 * console.log(size! / 2 ** 30); // 4
 * ```
 */
export function partSizeForTimeLimit(
  fileSize: number,
  partSize: number,
  bytesPerSecond: number,
  limitMs: number,
): number | undefined {
  const fits = bytesPerSecond * (limitMs / 1000) * TIME_LIMIT_SHARE;
  return allowed(fileSize, Math.min(powerOfTwoAtMost(fits), powerBelow(partSize)));
}

/**
 * The part size to try after the registry refused a request body of `refusedBytes` (413) without
 * stating its limit: a guess, the largest power-of-two MiB at most half the refused size (the
 * largest power of two at most half, below 2 MiB), so each refusal at least halves the size and
 * lands on a round one; `undefined` when a file of `fileSize` bytes would then need more parts
 * than the format allows.
 *
 * @example Behind a proxy that refuses bodies over 100 MB
 * ```ts
 * import { partSizeBelowRefused } from "./part_size_advice.ts";
 * console.log(partSizeBelowRefused(2 ** 33, 2 ** 29)! / 2 ** 20); // 256
 * console.log(partSizeBelowRefused(2 ** 33, 300 * 2 ** 20)! / 2 ** 20); // 128
 * ```
 */
export function partSizeBelowRefused(fileSize: number, refusedBytes: number): number | undefined {
  const half = Math.max(1, Math.floor(refusedBytes / 2));
  const size = half >= MIB
    ? powerOfTwoAtMost(Math.floor(half / MIB)) * MIB
    : powerOfTwoAtMost(half);
  return allowed(fileSize, size);
}

/**
 * The part size that halves the number of parts of a push at `partSize`: twice the size.
 *
 * @example
 * ```ts
 * import { partSizeForHalfTheParts } from "./part_size_advice.ts";
 * console.log(partSizeForHalfTheParts(2 ** 29) / 2 ** 30); // 1
 * ```
 */
export function partSizeForHalfTheParts(partSize: number): number {
  return partSize * 2;
}

/** The largest power of two strictly below `bytes` (1 for 2 and below). */
function powerBelow(bytes: number): number {
  return powerOfTwoAtMost(Math.max(1, bytes - 1));
}

function allowed(fileSize: number, size: number): number | undefined {
  return size >= smallestPartSize(fileSize) ? size : undefined;
}
