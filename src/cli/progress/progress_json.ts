/**
 * Progress as JSON lines, for programs.
 *
 * @module
 */
import { jsonText, type PartEvent } from "../../parted/mod.ts";
import { resumingLine } from "./progress_status.ts";
import {
  defaultSchedule,
  type ProgressRenderer,
  type RendererOptions,
  type TransferSnapshot,
} from "./progress_types.ts";

/** At least this many milliseconds between two lines, except on a phase change. */
const MIN_INTERVAL_MS = 100;

/**
 * Writes one JSON object per line: `{"completedBytes":…,"wireBytes":…,"totalBytes":…,
 * "phase":…,"transferredBytes":…,"partsDone":…,"partsSkipped":…,"partsTotal":…,
 * "partsActive":…,"resumedBytes":…,"events":[…]}` (the fields the library reported; `events`,
 * when there are some: the part events since the previous line), at most ten a second (a phase
 * change, and the first snapshot of a resumed pull that says what it found on disk, always
 * write; a snapshot held back by the throttle is written when the interval ends, so a stalled
 * transfer still reports its latest state). `finish` always writes a last
 * line carrying the final snapshot plus `"exitCode"`, the CLI's exit code, so a reader knows how
 * the transfer ended from the stream alone; the `"done"` state is written only there, once.
 * `completedBytes` never decreases between lines.
 *
 * @example
 * ```ts
 * import { JsonProgress } from "./progress_json.ts";
 * let out = "";
 * const p = new JsonProgress({ write: (t) => out += t, now: () => 0 });
 * p.update({ completedBytes: 4, wireBytes: 4, totalBytes: 4, phase: "done" });
 * p.finish(0);
 * console.log(JSON.parse(out.trim().split("\n").at(-1)!).exitCode); // 0
 * ```
 */
export class JsonProgress implements ProgressRenderer {
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #schedule: (callback: () => void, delayMs: number) => () => void;
  #cancelPending: (() => void) | undefined;
  #last: TransferSnapshot = { completedBytes: 0, wireBytes: 0, totalBytes: 0, phase: "resolving" };
  #events: PartEvent[] = [];
  #lastLineAt = -Infinity;
  #lastPhase: string | undefined;
  #resumingSaid = false;
  #finished = false;

  /** Creates a renderer that writes through `options.write`. */
  constructor(options: RendererOptions) {
    this.#write = options.write;
    this.#now = options.now ?? (() => performance.now());
    this.#schedule = options.schedule ?? defaultSchedule;
  }

  /** Takes a snapshot; writes it on a phase change or when the throttle allows. */
  update(snapshot: TransferSnapshot): void {
    if (this.#finished) return;
    const now = this.#now();
    this.#last = {
      ...snapshot,
      completedBytes: Math.max(this.#last.completedBytes, snapshot.completedBytes),
    };
    delete this.#last.events;
    // The path is the pull's result (standard output), not a progress field of every line.
    delete this.#last.path;
    this.#events.push(...(snapshot.events ?? []));
    // The final state is the line `finish` writes, with the exit code: written once.
    if (snapshot.phase === "done") {
      this.#cancelPending?.();
      this.#cancelPending = undefined;
      return;
    }
    // What a resumed pull found on disk is said at once, as a phase change is.
    const resuming = resumingLine(snapshot) !== undefined && !this.#resumingSaid;
    if (resuming) this.#resumingSaid = true;
    if (
      resuming || snapshot.phase !== this.#lastPhase || now - this.#lastLineAt >= MIN_INTERVAL_MS
    ) {
      this.#line(now);
    } else if (this.#cancelPending === undefined) {
      // Held back by the throttle: write it later unless a newer snapshot writes first.
      this.#cancelPending = this.#schedule(() => {
        this.#cancelPending = undefined;
        if (!this.#finished) this.#line(this.#now());
      }, MIN_INTERVAL_MS - (now - this.#lastLineAt));
    }
  }

  #line(now: number): void {
    this.#cancelPending?.();
    this.#cancelPending = undefined;
    this.#lastLineAt = now;
    this.#lastPhase = this.#last.phase;
    this.#write(`${jsonText(this.#withEvents())}\n`);
  }

  /** The latest snapshot with the part events not yet written (taken). */
  #withEvents(): TransferSnapshot {
    const events = this.#events;
    this.#events = [];
    return events.length === 0 ? this.#last : { ...this.#last, events };
  }

  /** Lines are whole: nothing to end. */
  interrupt(): void {}

  /** Writes the last line with `exitCode`; later calls do nothing. */
  finish(exitCode: number): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#cancelPending?.();
    this.#cancelPending = undefined;
    this.#write(`${jsonText({ ...this.#withEvents(), exitCode })}\n`);
  }
}
