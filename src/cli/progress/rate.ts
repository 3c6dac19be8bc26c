/**
 * Parses the `--limit-rate` value: a byte size per second.
 *
 * @module
 */
import { parseSize } from "../arguments/size.ts";

/**
 * Parses a rate such as `512KiB/s` or `10MiB/s` into bytes per second: a size as `--part-size`
 * takes it, followed by `/s` (which may be left out).
 *
 * @throws {RangeError} When the text is not such a rate.
 *
 * @example
 * ```ts
 * import { parseRate } from "./rate.ts";
 * console.log(parseRate("512KiB/s")); // 524288
 * ```
 */
export function parseRate(text: string): number {
  const size = text.trim().replace(/\/s$/i, "");
  if (size.includes("/")) throw new RangeError("expected a rate such as 512KiB/s or 10MiB/s");
  return parseSize(size);
}
