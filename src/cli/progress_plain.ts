/**
 * Progress as occasional plain lines, for logs.
 *
 * @module
 */
import { formatBytes, formatRate, formatSeconds } from "./format.ts";
import { progressStatus, skippedPartsLine } from "./progress_status.ts";
import type { PartEvent } from "../parted/progress.ts";
import type { ProgressRenderer, RendererOptions, TransferSnapshot } from "./progress_types.ts";
import { RateMeter } from "./rate_meter.ts";

/** A line at most this often, besides phase changes and the final line. */
const INTERVAL_MS = 5000;

/**
 * Writes one self-contained line (`uploading 42% 1.20 GiB / 2.90 GiB 215 MiB/s ETA 8s`) when
 * the phase changes and otherwise every five seconds, one line per part event (`part 3/8
 * uploaded`; the events are `exists`, `uploaded`, `mounted`, `resumed` and `verified`), then a final line
 * from `finish` (unless that state was just written) and `7 of 8 parts already present` when
 * parts needed no transfer. No control characters, so it suits CI logs and files.
 *
 * @example
 * ```ts
 * import { PlainProgress } from "./progress_plain.ts";
 * const lines: string[] = [];
 * const p = new PlainProgress({ write: (t) => lines.push(t), now: () => 0 });
 * p.update({ completedBytes: 0, wireBytes: 0, totalBytes: 10, phase: "uploading" });
 * console.log(lines.length); // 1
 * ```
 */
export class PlainProgress implements ProgressRenderer {
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #meter = new RateMeter();
  #last: TransferSnapshot | undefined;
  #lastLineAt = -Infinity;
  #lastPhase: string | undefined;
  #written: TransferSnapshot | undefined;
  #finished = false;

  /** Creates a renderer that writes through `options.write`. */
  constructor(options: RendererOptions) {
    this.#write = options.write;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Takes a snapshot; writes a line on a phase change or when the interval passed. */
  update(snapshot: TransferSnapshot): void {
    if (this.#finished) return;
    const now = this.#now();
    this.#meter.sample(now, snapshot.wireBytes);
    this.#last = snapshot;
    for (const event of snapshot.events ?? []) this.#write(`${partLine(event, snapshot)}\n`);
    if (snapshot.phase !== this.#lastPhase || now - this.#lastLineAt >= INTERVAL_MS) {
      this.#line(now);
    }
  }

  /** Writes the final line unless it was just written; later calls do nothing. */
  finish(exitCode: number): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#last === undefined) return;
    if (exitCode !== 0 || this.#written !== this.#last) {
      const now = this.#now();
      this.#meter.sample(now, this.#last.wireBytes);
      this.#line(now, exitCode);
    }
    const skipped = skippedPartsLine(this.#last);
    if (skipped !== undefined) this.#write(`${skipped}\n`);
  }

  #line(now: number, exitCode?: number): void {
    const snapshot = this.#last;
    if (snapshot === undefined) return;
    this.#lastLineAt = now;
    this.#lastPhase = snapshot.phase;
    this.#written = snapshot;
    const done = snapshot.phase === "done";
    const rate = done ? this.#meter.average() : this.#meter.rate();
    const status = progressStatus(snapshot, rate);
    const percent = `${Math.floor(status.fraction * 100)}%`;
    const bytes = `${formatBytes(status.shownBytes)} / ${formatBytes(snapshot.totalBytes)}`;
    let tail: string;
    if (done) tail = `${formatRate(rate)} in ${formatSeconds(this.#meter.elapsed() / 1000)}`;
    else if (exitCode !== undefined) tail = `stopped (exit ${exitCode})`;
    else tail = `${formatRate(rate)} ETA ${formatSeconds(status.etaSeconds)}`;
    this.#write(`${snapshot.phase} ${percent} ${bytes} ${tail}\n`);
  }
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
