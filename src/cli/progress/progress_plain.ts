/**
 * Progress as occasional plain lines, for logs.
 *
 * @module
 */
import { formatBytePair, formatBytes, formatRate, formatSeconds } from "../words/format.ts";
import { resumingLine, skippedPartsLine } from "./progress_status.ts";
import type { PartEvent } from "../../parted/mod.ts";
import {
  defaultSchedule,
  type ProgressRenderer,
  type RendererOptions,
  type TransferSnapshot,
} from "./progress_types.ts";
import { type ProgressFields, ProgressView } from "./progress_view.ts";

/** How often `--progress plain` writes a line besides label changes. */
export const PLAIN_INTERVAL_MS = 5000;

/** How plain lines are paced. */
export interface PlainOptions {
  /** A line at least this often while the transfer runs, even when nothing moved. */
  intervalMs?: number;
  /** One line per part event (default true). */
  partLines?: boolean;
  /**
   * No line until the transfer has run this long (default 0): a short transfer in a log stays
   * silent, a long one shows life from then on and ends with its final line.
   */
  quietStartMs?: number;
}

/**
 * Writes one self-contained line (`uploading 42% 1.20/2.90 GiB 3/6 parts, 2 active 215 MiB/s
 * ETA 8s`) when the label changes (a phase, or `checking` → `uploading` once bytes move) and
 * otherwise every `intervalMs` (five seconds by default) whether or not a snapshot arrived, so
 * a stalled transfer still shows life and its falling speed; one line per part event (`part 3/8
 * uploaded`; the events are `exists`, `uploaded`, `mounted`, `resumed` and `verified`) unless
 * `partLines` is false; `resuming: 2.10 GiB of 3.00 GiB on disk` once when a resumed pull says
 * it; then a final line from `finish` (unless that state was just written) and, on success,
 * `7 of 8 parts already present` when parts needed no transfer. No control characters, so it
 * suits CI logs and files.
 *
 * @example
 * ```ts
 * import { PlainProgress } from "./progress_plain.ts";
 * const lines: string[] = [];
 * const p = new PlainProgress({ write: (t) => lines.push(t), now: () => 0, schedule: () => () => {} });
 * p.update({ completedBytes: 0, wireBytes: 0, totalBytes: 10, phase: "uploading" });
 * console.log(lines); // [ "checking 0% 0/10 B -- B/s ETA --\n" ]
 * ```
 */
export class PlainProgress implements ProgressRenderer {
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #schedule: (callback: () => void, delayMs: number) => () => void;
  readonly #intervalMs: number;
  readonly #partLines: boolean;
  readonly #quietStartMs: number;
  #startedAt: number | undefined;
  readonly #view = new ProgressView();
  #cancelBeat: (() => void) | undefined;
  #lastLineAt = -Infinity;
  #writtenLabel: string | undefined;
  #written: TransferSnapshot | undefined;
  #resumingSaid = false;
  #finished = false;

  /** Creates a renderer that writes through `options.write`, paced by `plain`. */
  constructor(options: RendererOptions, plain: PlainOptions = {}) {
    this.#write = options.write;
    this.#now = options.now ?? (() => performance.now());
    this.#schedule = options.schedule ?? defaultSchedule;
    this.#intervalMs = plain.intervalMs ?? PLAIN_INTERVAL_MS;
    this.#partLines = plain.partLines ?? true;
    this.#quietStartMs = plain.quietStartMs ?? 0;
  }

  /** Takes a snapshot; writes a line on a label change or when the interval passed. */
  update(snapshot: TransferSnapshot): void {
    if (this.#finished) return;
    const now = this.#now();
    this.#view.update(snapshot, now);
    const resuming = this.#resumingSaid ? undefined : resumingLine(snapshot);
    if (resuming !== undefined) {
      this.#resumingSaid = true;
      this.#write(`${resuming}\n`);
    }
    if (this.#quiet(now)) return;
    if (this.#partLines) {
      for (const event of snapshot.events ?? []) this.#write(`${partLine(event, snapshot)}\n`);
    }
    if (this.#view.label() !== this.#writtenLabel || now - this.#lastLineAt >= this.#intervalMs) {
      this.#line(now);
    }
  }

  /** Whether the quiet start still runs; its end is a beat of its own, stalled or not. */
  #quiet(now: number): boolean {
    if (this.#quietStartMs <= 0) return false;
    if (this.#startedAt === undefined) {
      this.#startedAt = now;
      this.#cancelBeat = this.#schedule(() => this.#beat(), this.#quietStartMs);
    }
    return now - this.#startedAt < this.#quietStartMs;
  }

  /** Lines are whole: nothing to end. */
  interrupt(): void {}

  /** Writes the final line unless it was just written; later calls do nothing. */
  finish(exitCode: number): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#cancelBeat?.();
    this.#cancelBeat = undefined;
    const last = this.#view.snapshot;
    if (last === undefined) return;
    // A transfer that ended within its quiet start leaves the log as it found it.
    if (this.#quietStartMs > 0 && this.#written === undefined) return;
    const done = last.phase === "done";
    if (!done || this.#written !== last) {
      const now = this.#now();
      this.#view.tick(now);
      this.#line(now, done ? undefined : exitCode);
    }
    const skipped = skippedPartsLine(last);
    if (exitCode === 0 && skipped !== undefined) this.#write(`${skipped}\n`);
  }

  #line(now: number, exitCode?: number): void {
    const fields = this.#view.fields();
    if (fields === undefined) return;
    this.#lastLineAt = now;
    this.#writtenLabel = fields.label;
    this.#written = this.#view.snapshot;
    this.#write(`${plainLine(fields, exitCode)}\n`);
    this.#cancelBeat?.();
    this.#cancelBeat = exitCode === undefined && !fields.done
      ? this.#schedule(() => this.#beat(), this.#intervalMs)
      : undefined;
  }

  /** The interval passed without a line: write the current state. */
  #beat(): void {
    this.#cancelBeat = undefined;
    if (this.#finished) return;
    const now = this.#now();
    this.#view.tick(now);
    this.#line(now);
  }
}

/** `label 42% 1.20/2.90 GiB 3/6 parts, 2 active 215 MiB/s ETA 8s`, or its stopped form. */
function plainLine(fields: ProgressFields, exitCode: number | undefined): string {
  const percent = `${Math.floor(fields.fraction * 100)}%`;
  const parts = fields.parts;
  const partsText = parts === undefined
    ? ""
    : ` ${parts.done}/${parts.total} parts${
      parts.active !== undefined && parts.active > 0 && parts.total > 1
        ? `, ${parts.active} active`
        : ""
    }`;
  let tail: string;
  if (fields.done) {
    // A transfer too short to measure has no average speed to show.
    const rate = fields.rate === undefined ? "" : ` ${formatRate(fields.rate)}`;
    tail = `${rate} in ${formatSeconds(fields.elapsedSeconds)}`;
  } else if (exitCode !== undefined) tail = ` stopped (exit ${exitCode})`;
  else if (fields.moving) {
    tail = ` ${formatRate(fields.rate)} ETA ${formatSeconds(fields.etaSeconds)}`;
  } else tail = "";
  const bytes = formatBytePair(fields.shownBytes, fields.totalBytes).trimStart();
  return `${fields.label} ${percent} ${bytes}${partsText}${tail}`;
}

const EVENT_WORDS: Record<PartEvent["kind"], string> = {
  exists: "exists (already in the registry)",
  uploaded: "uploaded",
  mounted: "mounted (from another repository)",
  resumed: "resumed (already on disk)",
  verified: "verified",
};

function partLine(event: PartEvent, snapshot: TransferSnapshot): string {
  const of = snapshot.partsTotal === undefined ? "" : `/${snapshot.partsTotal}`;
  return `part ${event.index + 1}${of} ${EVENT_WORDS[event.kind]} ${formatBytes(event.size)}`;
}
