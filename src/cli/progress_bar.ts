/**
 * A progress bar that redraws one terminal line in place.
 *
 * @module
 */
import { formatBytes, formatRate, formatSeconds } from "./format.ts";
import { barLine } from "./progress_line.ts";
import { progressStatus, skippedPartsLine } from "./progress_status.ts";
import {
  defaultSchedule,
  type ProgressRenderer,
  type RendererOptions,
  type TransferSnapshot,
} from "./progress_types.ts";
import { RateMeter } from "./rate_meter.ts";

/** Redraws at most this often (10 per second). */
const MIN_REDRAW_MS = 100;
/** Carriage return, then erase to the end of the line. */
const REDRAW = "\r";
const CLEAR_TO_EOL = "\x1b[K";

/**
 * Draws `phase  42% [=====>     ] 1.20 GiB / 2.90 GiB  3/8 parts  215 MiB/s  ETA 8s` on one line
 * of a terminal, redrawing in place with a carriage return and erase-to-end-of-line, at most ten times
 * a second (a phase change and the final state always draw; a snapshot held back by the
 * throttle is drawn when the interval ends, so a stalled transfer shows its latest state). The
 * line fits the terminal width (fields left out whole, see `barLine`) so it never wraps, which
 * would break the in-place redraw. `finish` draws the final state, ends the line, and adds
 * `7 of 8 parts already present` when parts needed no transfer.
 *
 * @example
 * ```ts
 * import { ProgressBar } from "./progress_bar.ts";
 * let out = "";
 * const bar = new ProgressBar({ write: (t) => out += t, now: () => 0 });
 * bar.update({ completedBytes: 100, wireBytes: 100, totalBytes: 100, phase: "done" });
 * bar.finish(0);
 * console.log(out.includes("100%")); // true
 * ```
 */
export class ProgressBar implements ProgressRenderer {
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #columns: () => number;
  readonly #schedule: (callback: () => void, delayMs: number) => () => void;
  #cancelPending: (() => void) | undefined;
  readonly #meter = new RateMeter();
  #last: TransferSnapshot | undefined;
  #lastDrawAt = -Infinity;
  #lastPhase: string | undefined;
  #drawn: TransferSnapshot | undefined;
  #finished = false;

  /** Creates a bar that writes through `options.write`. */
  constructor(options: RendererOptions) {
    this.#write = options.write;
    this.#now = options.now ?? (() => performance.now());
    this.#columns = options.columns ?? (() => 80);
    this.#schedule = options.schedule ?? defaultSchedule;
  }

  /** Takes a snapshot and redraws when the throttle allows or the phase changed. */
  update(snapshot: TransferSnapshot): void {
    if (this.#finished) return;
    const now = this.#now();
    this.#meter.sample(now, snapshot.wireBytes);
    this.#last = snapshot;
    if (snapshot.phase !== this.#lastPhase || now - this.#lastDrawAt >= MIN_REDRAW_MS) {
      this.#draw(now);
    } else if (this.#cancelPending === undefined) {
      // Held back by the throttle: draw it later unless a newer snapshot draws first.
      this.#cancelPending = this.#schedule(() => {
        this.#cancelPending = undefined;
        if (!this.#finished) this.#draw(this.#now());
      }, MIN_REDRAW_MS - (now - this.#lastDrawAt));
    }
  }

  /** Draws the final state and ends the line; later calls do nothing. */
  finish(_exitCode: number): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#cancelPending?.();
    this.#cancelPending = undefined;
    if (this.#last === undefined) return;
    if (this.#drawn !== this.#last) {
      const now = this.#now();
      this.#meter.sample(now, this.#last.wireBytes);
      this.#draw(now);
    }
    this.#write("\n");
    const skipped = skippedPartsLine(this.#last);
    if (skipped !== undefined) this.#write(`${skipped}\n`);
  }

  #draw(now: number): void {
    const snapshot = this.#last;
    if (snapshot === undefined) return;
    this.#cancelPending?.();
    this.#cancelPending = undefined;
    this.#lastDrawAt = now;
    this.#lastPhase = snapshot.phase;
    this.#drawn = snapshot;
    const done = snapshot.phase === "done";
    const rate = done ? this.#meter.average() : this.#meter.rate();
    const status = progressStatus(snapshot, rate);
    const width = Math.max(20, this.#columns()) - 1;
    const line = barLine({
      phase: snapshot.phase,
      fraction: status.fraction,
      bytes: `${formatBytes(status.shownBytes)} / ${formatBytes(snapshot.totalBytes)}`,
      parts: partsField(snapshot),
      rate: formatRate(rate),
      tail: done
        ? `in ${formatSeconds(this.#meter.elapsed() / 1000)}`
        : `ETA ${formatSeconds(status.etaSeconds)}`,
    }, width);
    this.#write(`${REDRAW}${line.slice(0, width)}${CLEAR_TO_EOL}`);
  }
}

/** `5/8 parts`, with `(3 present)` when parts needed no transfer; undefined without counters. */
function partsField(snapshot: TransferSnapshot): string | undefined {
  if (snapshot.partsTotal === undefined) return undefined;
  const skipped = snapshot.partsSkipped ?? 0;
  const present = skipped > 0 ? ` (${skipped} present)` : "";
  return `${snapshot.partsDone ?? 0}/${snapshot.partsTotal} parts${present}`;
}
