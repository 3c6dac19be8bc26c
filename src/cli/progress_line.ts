/**
 * Lays out the one-line progress bar to fit a terminal width.
 *
 * @module
 */

/** What the bar line shows, already formatted. */
export interface BarLineParts {
  /** The phase name. */
  phase: string;
  /** 0..1. */
  fraction: number;
  /** `1.20 GiB / 2.90 GiB`. */
  bytes: string;
  /** `3/8 parts`, or undefined when parts are not counted. */
  parts: string | undefined;
  /** `215 MiB/s`. */
  rate: string;
  /** `ETA 8s` or `in 12s`. */
  tail: string;
}

const MIN_BAR = 10;
const MAX_BAR = 40;

/**
 * Builds `phase  42% [=====>     ] 1.20 GiB / 2.90 GiB  3/8 parts  215 MiB/s  ETA 8s` in at
 * most `width` characters. What does not fit is left out whole, least useful first (rate, then
 * parts, then bytes), so a narrow terminal still shows the bar and the time left rather than a
 * cut word; below that the bar goes, and the phase and percentage always stay.
 *
 * @example
 * ```ts
 * import { barLine } from "./progress_line.ts";
 * const line = barLine({ phase: "uploading", fraction: 0.5, bytes: "5 B / 10 B", parts: "1/2 parts", rate: "1 B/s", tail: "ETA 5s" }, 39);
 * console.log(line); // "uploading   50% [=======>      ] ETA 5s"
 * ```
 */
export function barLine(parts: BarLineParts, width: number): string {
  const percent = `${Math.floor(parts.fraction * 100)}%`.padStart(4);
  const phase = parts.phase.length < 11 ? parts.phase.padEnd(11) : `${parts.phase} `;
  const head = `${phase}${percent}`;
  // Optional fields, most useful first; the tail (ETA or elapsed time) outranks them all.
  const optional = [parts.bytes, parts.parts, parts.rate].filter((s) => s !== undefined);
  for (let keep = optional.length; keep >= 0; keep--) {
    const fields = [...optional.slice(0, keep), parts.tail];
    for (const separator of ["  ", " "]) {
      const rest = fields.join(separator);
      const room = width - head.length - rest.length - 4; // spaces and brackets
      if (room >= MIN_BAR) return `${head} ${bar(parts.fraction, Math.min(MAX_BAR, room))} ${rest}`;
    }
  }
  for (const rest of [parts.tail, ""]) {
    const line = rest === "" ? head : `${head} ${rest}`;
    if (line.length <= width) return line;
  }
  return head.slice(0, width);
}

function bar(fraction: number, width: number): string {
  const filled = Math.floor(fraction * width);
  const arrow = filled < width ? ">" : "";
  return `[${"=".repeat(filled)}${arrow}${" ".repeat(width - filled - arrow.length)}]`;
}
