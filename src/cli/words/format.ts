/**
 * Human-readable numbers for progress output.
 *
 * @module
 */

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** How a byte count is written: its value in `unit`, with `digits` decimals. */
interface ByteScale {
  divisor: number;
  unit: string;
  digits: number;
}

/** The unit and decimals that show `bytes` with three significant digits. */
function byteScale(bytes: number): ByteScale {
  if (!Number.isFinite(bytes) || bytes < 1024) return { divisor: 1, unit: UNITS[0], digits: 0 };
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  // 1023.9 KiB would round to "1024 KiB"; show the next unit instead.
  if (Number(value.toFixed(digits)) >= 1024 && unit < UNITS.length - 1) {
    return { divisor: 1024 ** (unit + 1), unit: UNITS[unit + 1], digits: 2 };
  }
  return { divisor: 1024 ** unit, unit: UNITS[unit], digits };
}

function scaled(bytes: number, scale: ByteScale): string {
  const value = Math.max(0, bytes) / scale.divisor;
  return scale.divisor === 1 ? String(Math.round(value)) : value.toFixed(scale.digits);
}

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
  const scale = byteScale(bytes);
  return `${scaled(Number.isFinite(bytes) ? bytes : 0, scale)} ${scale.unit}`;
}

/**
 * Formats `done` of `total` bytes in the total's unit, `done` padded to the total's width, so
 * the text keeps one width while `done` grows from 0 to `total`: `0.50/2.90 GiB`, ` 12/150 MiB`.
 *
 * @example
 * ```ts
 * import { formatBytePair } from "./format.ts";
 * console.log(formatBytePair(512 * 1024 ** 2, 3 * 1024 ** 3)); // "0.50/3.00 GiB"
 * ```
 */
export function formatBytePair(done: number, total: number): string {
  const scale = byteScale(total);
  const whole = scaled(total, scale);
  return `${scaled(Math.min(done, total), scale).padStart(whole.length)}/${whole} ${scale.unit}`;
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
