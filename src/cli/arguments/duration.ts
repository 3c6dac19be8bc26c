/**
 * Parses durations given on the command line.
 *
 * @module
 */

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses a duration in the style of Go's `time.ParseDuration`, restricted to `ms`, `s`, `m` and
 * `h`: `90s`, `10m`, `1h30m`, `1.5s`, `250ms`. A bare `0` means no limit and returns 0. Anything
 * negative is refused, as is a number without a unit.
 *
 * @returns The duration in whole milliseconds (rounded up, so a tiny positive duration stays
 * positive).
 * @throws {RangeError} When the text is not such a duration or is negative.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./duration.ts";
 * console.log(parseDuration("1m30s")); // 90000
 * ```
 */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (trimmed.startsWith("-")) throw new RangeError("duration must not be negative");
  const body = trimmed.startsWith("+") ? trimmed.slice(1) : trimmed;
  if (body === "0") return 0;
  if (body === "") throw new RangeError("expected a duration such as 90s, 10m or 1h30m");
  const token = /(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (const match of body.matchAll(token)) {
    total += Number(match[1]) * UNIT_MS[match[2]];
    consumed += match[0].length;
  }
  if (consumed !== body.length || consumed === 0) {
    throw new RangeError("expected a duration such as 90s, 10m or 1h30m (units: ms, s, m, h)");
  }
  const ms = Math.ceil(total);
  if (!Number.isSafeInteger(ms)) throw new RangeError("duration is too large");
  return ms;
}

/**
 * The longest `--timeout` or `--stall-timeout`: 365 days (any longer is surely a typo).
 *
 * @example
 * ```ts
 * import { MAX_DURATION_MS } from "./duration.ts";
 * console.log(MAX_DURATION_MS / 3_600_000); // 8760
 * ```
 */
export const MAX_DURATION_MS: number = 365 * 24 * 3_600_000;

/**
 * {@linkcode parseDuration} for a limit the CLI waits on: at most {@linkcode MAX_DURATION_MS}.
 *
 * @throws {RangeError} When the text is not a duration, is negative, or exceeds the maximum.
 *
 * @example A 30-day limit
 * ```ts
 * import { parseLimit } from "./duration.ts";
 * console.log(parseLimit("720h")); // 2592000000
 * ```
 */
export function parseLimit(text: string): number {
  const ms = parseDuration(text);
  if (ms > MAX_DURATION_MS) throw new RangeError("must be at most 8760h (365 days)");
  return ms;
}
