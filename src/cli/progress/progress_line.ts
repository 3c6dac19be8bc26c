/**
 * Lays out the one-line progress bar in fixed-width fields, to fit a terminal width.
 *
 * @module
 */
import { formatBytePair, formatRate, formatSeconds } from "../words/format.ts";
import type { ProgressFields } from "./progress_view.ts";

const MIN_BAR = 10;
const MAX_BAR = 40;
/** The longest label, `downloading`. */
const LABEL_WIDTH = 11;
/** `1.00 KiB/s`, the longest rate below a PiB/s. */
const RATE_WIDTH = 10;
/** `ETA 59m59s`, `in 23h59m`. */
const TAIL_WIDTH = 10;

/** The optional fields, most useful first: what does not fit is left out from the end. */
const PRIORITY = ["tail", "bytes", "parts", "active", "rate"] as const;
type Field = typeof PRIORITY[number];

/**
 * Builds `downloading  42% [=====>     ] 1.20/2.90 GiB  3/6 parts, 2 active  215 MiB/s  ETA 8s`
 * in at most `width` characters. Every field has a fixed width for the whole transfer (sizes
 * in the total's unit, counters padded to the part count's digits, the speed and the time
 * padded), so nothing moves between two frames: the same terminal width gives the same
 * positions from the first frame to the last. What does not fit is left out whole, least
 * useful first (speed, active parts, parts, bytes, time left); the bar takes the room left (10
 * to 40 columns), and goes only when even the label, percentage and time left leave it no room.
 *
 * @example
 * ```ts
 * import { barLine } from "./progress_line.ts";
 * const MiB = 1024 * 1024;
 * const line = barLine({
 *   label: "uploading", fraction: 0.5, shownBytes: 5 * MiB, totalBytes: 10 * MiB, moving: true,
 *   rate: MiB, etaSeconds: 5, elapsedSeconds: 5, done: false,
 *   parts: { done: 1, total: 2, active: 1 },
 * }, 78);
 * console.log(line);
 * // "uploading    50% [======>     ]  5.0/10.0 MiB  1/2 parts, 1 active  ETA 5s    "
 * ```
 */
export function barLine(fields: ProgressFields, width: number): string {
  const head = `${fields.label.padEnd(LABEL_WIDTH)} ${
    `${Math.floor(fields.fraction * 100)}%`.padStart(4)
  }`;
  const texts = fieldTexts(fields);
  const present = PRIORITY.filter((name) => texts[name] !== undefined);
  for (let keep = present.length; keep >= 0; keep--) {
    const rest = compose(texts, new Set(present.slice(0, keep)));
    const room = width - head.length - (rest === "" ? 3 : rest.length + 4); // spaces, brackets
    if (room >= MIN_BAR) {
      const bar = progressBar(fields.fraction, Math.min(MAX_BAR, room));
      return rest === "" ? `${head} ${bar}` : `${head} ${bar} ${rest}`;
    }
  }
  // No room for a bar: the label, the percentage and as many fields as fit.
  for (let keep = present.length; keep >= 0; keep--) {
    const rest = compose(texts, new Set(present.slice(0, keep)));
    const line = rest === "" ? head : `${head} ${rest}`;
    if (line.length <= width) return line;
  }
  return head.slice(0, width);
}

/** Each field's text at its fixed width; undefined for fields this transfer does not have. */
function fieldTexts(fields: ProgressFields): Record<Field, string | undefined> {
  const parts = fields.parts;
  const digits = parts === undefined ? 0 : String(parts.total).length;
  // Room for the active count whenever there are several parts, so that its coming and going
  // moves nothing.
  const active = parts !== undefined && parts.total > 1
    ? ((parts.active ?? 0) > 0 ? `, ${String(parts.active).padStart(digits)} active` : "")
      .padEnd(digits + 9)
    : undefined;
  const time = fields.done
    ? `in ${shortSeconds(fields.elapsedSeconds)}`
    : fields.moving
    ? `ETA ${shortSeconds(fields.etaSeconds)}`
    : "";
  return {
    tail: time.padEnd(TAIL_WIDTH),
    bytes: formatBytePair(fields.shownBytes, fields.totalBytes),
    parts: parts === undefined
      ? undefined
      : `${String(parts.done).padStart(digits)}/${parts.total} parts`,
    active,
    // Blank while nothing moves, and once done when it was too short to measure.
    rate:
      (fields.moving && !(fields.done && fields.rate === undefined) ? formatRate(fields.rate) : "")
        .padStart(RATE_WIDTH),
  };
}

/** The kept fields in display order: bytes, parts with their active count, speed, time. */
function compose(texts: Record<Field, string | undefined>, kept: Set<Field>): string {
  const shown = (name: Field) => kept.has(name) ? texts[name] : undefined;
  const parts = shown("parts") === undefined ? undefined : `${texts.parts}${shown("active") ?? ""}`;
  return [shown("bytes"), parts, shown("rate"), shown("tail")]
    .filter((text) => text !== undefined).join("  ");
}

/** `formatSeconds`, with `>99h` past 99 hours so the time keeps its width. */
function shortSeconds(seconds: number | undefined): string {
  return seconds !== undefined && seconds >= 100 * 3600 ? ">99h" : formatSeconds(seconds);
}

function progressBar(fraction: number, width: number): string {
  const filled = Math.floor(fraction * width);
  const arrow = filled < width ? ">" : "";
  return `[${"=".repeat(filled)}${arrow}${" ".repeat(width - filled - arrow.length)}]`;
}
