/**
 * Human-readable numbers for progress output.
 *
 * @module
 */

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/**
 * Formats a byte count with a binary unit and three significant digits.
 *
 * @example
 * ```ts
 * import { formatBytes } from "./format.ts";
 * console.log(formatBytes(1536)); // "1.50 KiB"
 * ```
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 1024) return `${Math.max(0, Math.round(bytes))} B`;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  // 1023.9 KiB would round to "1024 KiB"; show the next unit instead.
  if (Number(value.toFixed(digits)) >= 1024 && unit < UNITS.length - 1) {
    return `1.00 ${UNITS[unit + 1]}`;
  }
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/**
 * Formats a transfer rate in bytes per second, or `"--"` when unknown.
 *
 * @example
 * ```ts
 * import { formatRate } from "./format.ts";
 * console.log(formatRate(3 * 1024 * 1024)); // "3.00 MiB/s"
 * ```
 */
export function formatRate(bytesPerSecond: number | undefined): string {
  if (bytesPerSecond === undefined || !Number.isFinite(bytesPerSecond)) return "-- B/s";
  return `${formatBytes(bytesPerSecond)}/s`;
}

/**
 * Formats seconds as `42s`, `3m05s` or `2h03m`, or `"--"` when unknown.
 *
 * @example
 * ```ts
 * import { formatSeconds } from "./format.ts";
 * console.log(formatSeconds(185)); // "3m05s"
 * ```
 */
export function formatSeconds(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return "--";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  const minutes = Math.floor(s / 60);
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}
