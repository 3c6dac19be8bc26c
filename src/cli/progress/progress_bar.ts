/**
 * A progress bar that redraws one terminal line in place.
 *
 * @module
 */
import { EXIT_CODES } from "../words/exit_code.ts";
import { barLine } from "./progress_line.ts";
import { resumingLine, skippedPartsLine } from "./progress_status.ts";
import {
  defaultSchedule,
  type ProgressRenderer,
  type RendererOptions,
  type TransferSnapshot,
} from "./progress_types.ts";
import { ProgressView } from "./progress_view.ts";

/** Redraws at most this often (10 per second). */
const MIN_REDRAW_MS = 100;
/** Without new snapshots, redraws this often, so a stall shows its falling speed. */
const STALL_REDRAW_MS = 1000;
/** Carriage return, then erase to the end of the line. */
const REDRAW = "\r";
const CLEAR_TO_EOL = "\x1b[K";
/**
 * Columns kept free at the end of the line: the terminal echoes `^C` after the cursor, and an
 * echo that wrapped onto the next line could not be erased by the redraw that ends the bar.
 */
const ECHO_ROOM = 2;

/**
 * Draws `downloading  42% [=====>   ] 1.20/2.90 GiB  3/6 parts, 2 active  215 MiB/s  ETA 8s`
 * on one line of a terminal (see `barLine` for the fixed-width layout), redrawing in place
 * with a carriage return and erase-to-end-of-line, at most ten times a second; a phase change,
 * a label change (`checking` → `uploading`), a part done and the final state draw at once. A
 * snapshot held back by the throttle is drawn when the interval ends, and without new
 * snapshots the line is redrawn every second, so a stalled transfer shows its speed falling.
 * The line fits the terminal width with room for the `^C` echo, so it never wraps, which would
 * break the in-place redraw. When a resumed pull says what it found on disk, that line
 * (`resuming: 2.10 GiB of 3.00 GiB on disk`) is written above the bar. `interrupt` redraws the
 * line over the `^C` echo and ends it; `finish` draws the final state, ends the line, and on
 * success adds `7 of 8 parts already present` when parts needed no transfer; after a failure
 * that is not a stop signal it erases the line, where the failure report then starts.
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
  readonly #view = new ProgressView();
  #cancelPending: (() => void) | undefined;
  #pendingAt = Infinity;
  #lastDrawAt = -Infinity;
  #drawnKey: string | undefined;
  #drawn: TransferSnapshot | undefined;
  #resumingSaid = false;
  #lineOpen = false;
  #ended = false;

  /** Creates a bar that writes through `options.write`. */
  constructor(options: RendererOptions) {
    this.#write = options.write;
    this.#now = options.now ?? (() => performance.now());
    this.#columns = options.columns ?? (() => 80);
    this.#schedule = options.schedule ?? defaultSchedule;
  }

  /** Takes a snapshot and redraws when the throttle allows, or at once on a change of state. */
  update(snapshot: TransferSnapshot): void {
    if (this.#ended) return;
    const now = this.#now();
    this.#view.update(snapshot, now);
    this.#sayResuming(snapshot);
    if (this.#key() !== this.#drawnKey || now - this.#lastDrawAt >= MIN_REDRAW_MS) {
      this.#draw(now);
    } else {
      this.#later(MIN_REDRAW_MS - (now - this.#lastDrawAt));
    }
  }

  /** Ends the line over the terminal's `^C` echo; draws nothing more until `finish`. */
  interrupt(): void {
    if (this.#ended) return;
    if (this.#view.snapshot !== undefined) this.#draw(this.#now());
    else this.#write(`${REDRAW}${CLEAR_TO_EOL}`);
    this.#end();
  }

  /**
   * Draws the final state and ends the line; later calls do nothing. A transfer that failed
   * before it was done (not stopped by a signal, which keeps the state it reached) erases its
   * line instead: the failure report follows, and a bar stopped at `checking 0%` above it would
   * only say that nothing happened.
   */
  finish(exitCode: number): void {
    if (this.#ended) return;
    const last = this.#view.snapshot;
    if (failedBeforeDone(exitCode, last)) {
      if (this.#lineOpen) this.#write(`${REDRAW}${CLEAR_TO_EOL}`);
      this.#lineOpen = false;
      this.#end();
      return;
    }
    if (last !== undefined && this.#drawn !== last) this.#draw(this.#now());
    this.#end();
    const skipped = last === undefined ? undefined : skippedPartsLine(last);
    if (exitCode === 0 && skipped !== undefined) this.#write(`${skipped}\n`);
  }

  #end(): void {
    this.#ended = true;
    this.#cancelPending?.();
    this.#cancelPending = undefined;
    if (this.#lineOpen) this.#write("\n");
    this.#lineOpen = false;
  }

  /** What must be drawn at once when it changes: the label and the parts done. */
  #key(): string {
    return `${this.#view.label()} ${this.#view.snapshot?.partsDone ?? 0}`;
  }

  /** Writes the resuming line once, above the bar, when the snapshot first says it. */
  #sayResuming(snapshot: TransferSnapshot): void {
    const line = this.#resumingSaid ? undefined : resumingLine(snapshot);
    if (line === undefined) return;
    this.#resumingSaid = true;
    this.#write(`${this.#lineOpen ? `${REDRAW}${CLEAR_TO_EOL}` : ""}${line}\n`);
    this.#lineOpen = false;
    this.#drawnKey = undefined; // the bar is drawn again below it
  }

  /** Draws after `delayMs` unless something draws first (the sooner of two requests wins). */
  #later(delayMs: number): void {
    const at = this.#now() + delayMs;
    if (this.#cancelPending !== undefined && this.#pendingAt <= at) return;
    this.#cancelPending?.();
    this.#pendingAt = at;
    this.#cancelPending = this.#schedule(() => {
      this.#cancelPending = undefined;
      if (this.#ended) return;
      const now = this.#now();
      this.#view.tick(now);
      this.#draw(now);
    }, delayMs);
  }

  #draw(now: number): void {
    const fields = this.#view.fields();
    if (fields === undefined) return;
    this.#cancelPending?.();
    this.#cancelPending = undefined;
    this.#lastDrawAt = now;
    this.#drawnKey = this.#key();
    this.#drawn = this.#view.snapshot;
    const width = Math.max(20, this.#columns()) - ECHO_ROOM;
    this.#write(`${REDRAW}${barLine(fields, width)}${CLEAR_TO_EOL}`);
    this.#lineOpen = true;
    if (!fields.done) this.#later(STALL_REDRAW_MS);
  }
}

/** A failure other than a stop signal, before the transfer was done. */
function failedBeforeDone(exitCode: number, last: TransferSnapshot | undefined): boolean {
  const stopped = exitCode === EXIT_CODES.sigint || exitCode === EXIT_CODES.sigterm;
  return exitCode !== EXIT_CODES.success && !stopped && last?.phase !== "done";
}
