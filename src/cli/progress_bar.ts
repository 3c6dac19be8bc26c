/**
 * A progress bar that redraws one terminal line in place.
 *
 * @module
 */
import { formatBytes, formatRate, formatSeconds } from "./format.ts";
import { progressStatus } from "./progress_status.ts";
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
 * Draws `phase  42% [=====>     ] 1.20 GiB / 2.90 GiB  215 MiB/s  ETA 8s` on one line of a
 * terminal, redrawing in place with a carriage return and erase-to-end-of-line, at most ten times
 * a second (a phase change and the final state always draw; a snapshot held back by the
 * throttle is drawn when the interval ends, so a stalled transfer shows its latest state). The line is cut to the terminal
 * width so it never wraps, which would break the in-place redraw. `finish` draws the final state
 * and ends the line.
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
    const percent = `${Math.floor(status.fraction * 100)}%`.padStart(4);
    const bytes = `${formatBytes(status.shownBytes)} / ${formatBytes(snapshot.totalBytes)}`;
    const tail = done
      ? `${formatRate(rate)}  in ${formatSeconds(this.#meter.elapsed() / 1000)}`
      : `${formatRate(rate)}  ETA ${formatSeconds(status.etaSeconds)}`;
    const head = `${snapshot.phase.padEnd(11)}${percent} `;
    const rest = ` ${bytes}  ${tail}`;
    const width = Math.max(20, this.#columns()) - 1;
    const barWidth = Math.min(40, width - head.length - rest.length - 2);
    let line = head;
    if (barWidth >= 10) {
      const filled = Math.floor(status.fraction * barWidth);
      const arrow = filled < barWidth ? ">" : "";
      line += `[${"=".repeat(filled)}${arrow}${" ".repeat(barWidth - filled - arrow.length)}]`;
    }
    line += rest;
    this.#write(`${REDRAW}${line.slice(0, width)}${CLEAR_TO_EOL}`);
  }
}
