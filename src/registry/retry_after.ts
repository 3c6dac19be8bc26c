/**
 * Parsing of the Retry-After header.
 *
 * @module
 */

/**
 * Parses a Retry-After value (delta seconds or an HTTP-date) into milliseconds from `nowMs`
 * (wall-clock epoch milliseconds). Returns `undefined` for a missing or unreadable value; a date
 * in the past gives 0.
 *
 * @example
 * ```ts
 * import { parseRetryAfter } from "./retry_after.ts";
 * console.log(parseRetryAfter("3")); // 3000
 * console.log(parseRetryAfter("Wed, 21 Oct 2015 07:28:05 GMT", Date.UTC(2015, 9, 21, 7, 28, 0)));
 * // 5000
 * ```
 */
export function parseRetryAfter(
  value: string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : undefined;
  }
  if (!/^[A-Za-z]{3},? /.test(text)) return undefined;
  const when = Date.parse(text);
  if (Number.isNaN(when)) return undefined;
  return Math.max(0, when - nowMs);
}
