/**
 * What a person reads from a sequence of progress snapshots: the label, the bytes, the parts,
 * the speed of what really moves, the time left.
 *
 * @module
 */
import { progressStatus } from "./progress_status.ts";
import type { TransferSnapshot } from "./progress_types.ts";
import { RateMeter } from "./rate_meter.ts";

/** The displayed state of a transfer, before formatting. */
export interface ProgressFields {
  /** The phase, or `checking` while parts are only hashed or looked up (no byte moved yet). */
  label: string;
  /** 0..1; exactly 1 only once the transfer is done. */
  fraction: number;
  /** Bytes shown as done. */
  shownBytes: number;
  /** The file size. */
  totalBytes: number;
  /** The part counters, when the reporter counts parts. */
  parts: { done: number; total: number; active: number | undefined } | undefined;
  /**
   * Bytes are moving or being checked in this phase (not while resolving the manifest or
   * writing it, nor while committing): a speed and a time left mean something.
   */
  moving: boolean;
  /**
   * Bytes per second of what moves now; once done, the average. Undefined while unknown or
   * while nothing moves.
   */
  rate: number | undefined;
  /** Seconds left at `rate`, when known. */
  etaSeconds: number | undefined;
  /** Seconds since the first snapshot. */
  elapsedSeconds: number;
  /** The transfer finished. */
  done: boolean;
}

/** Phases that carry bytes; before the first wire byte, they are only checking parts. */
const MOVING = new Set(["uploading", "downloading", "verifying"]);
/** Phases in which bytes move or are checked. */
const WORKING = new Set([...MOVING, "hashing"]);

/**
 * Turns snapshots into {@linkcode ProgressFields}. A re-push, the resume pass of a pull and a
 * verification hash the local file and look parts up without sending or receiving a byte: that
 * is labelled `checking`, with the speed of the bytes checked and the time the check needs,
 * never as an upload with no speed. The label switches to the phase once wire bytes move, and
 * from then on the speed is that of the wire. `tick` lets a renderer show a stall (the speed
 * falls, the time left grows) when no snapshot arrives.
 *
 * @example
 * ```ts
 * import { ProgressView } from "./progress_view.ts";
 * const view = new ProgressView();
 * view.update({ completedBytes: 0, wireBytes: 0, totalBytes: 100, phase: "hashing" }, 0);
 * view.update({ completedBytes: 50, wireBytes: 0, totalBytes: 100, phase: "uploading" }, 1000);
 * const fields = view.fields()!;
 * console.log(fields.label, fields.rate); // "checking" 50
 * ```
 */
export class ProgressView {
  readonly #checked = new RateMeter();
  #wire = new RateMeter();
  #snapshot: TransferSnapshot | undefined;
  #firstAt: number | undefined;
  #lastAt = 0;
  #snapshotAt: number | undefined;
  #wireStarted = false;
  #checking = false;

  /** The latest snapshot, if any. */
  get snapshot(): TransferSnapshot | undefined {
    return this.#snapshot;
  }

  /** Takes `snapshot`, taken at monotonic time `now` (milliseconds). */
  update(snapshot: TransferSnapshot, now: number): void {
    if (snapshot.wireBytes > 0 && !this.#wireStarted) {
      // The first wire bytes, which moved since the previous snapshot: the wire's speed is
      // measured from then on, not diluted by the time spent checking before.
      this.#wireStarted = true;
      this.#wire = new RateMeter();
      if (this.#snapshotAt !== undefined) this.#wire.sample(this.#snapshotAt, 0);
    }
    this.#snapshot = snapshot;
    this.#snapshotAt = now;
    // Hashing before any transfer (a push), or a resume pass or verification: a check.
    if (
      snapshot.wireBytes === 0 &&
      (snapshot.phase === "hashing" || snapshot.phase === "verifying")
    ) {
      this.#checking = true;
    }
    this.tick(now);
  }

  /** Records that time passed without a new snapshot (the speed of a stall falls). */
  tick(now: number): void {
    const snapshot = this.#snapshot;
    if (snapshot === undefined) return;
    this.#firstAt ??= now;
    this.#lastAt = now;
    this.#checked.sample(now, progressStatus(snapshot, undefined).shownBytes);
    this.#wire.sample(now, snapshot.wireBytes);
  }

  /**
   * The label the latest snapshot shows. Before its first byte is sent, a push is hashing parts
   * and looking them up; a pull is checking only once it hashed what is on disk (a fresh one is
   * just waiting for its first bytes). A resumed pull is checking until the check of its
   * partial file is over, even while the parts it found torn already download: what the check
   * found is said first, and only then does the bar show a download and its speed.
   */
  label(): string {
    const s = this.#snapshot;
    if (s === undefined) return "";
    const checking = MOVING.has(s.phase) && (
      s.resumeChecked === false ||
      (s.wireBytes === 0 && (this.#checking || s.phase === "uploading" || s.completedBytes > 0))
    );
    return checking ? "checking" : s.phase;
  }

  /** The displayed state; undefined before the first snapshot. */
  fields(): ProgressFields | undefined {
    const snapshot = this.#snapshot;
    if (snapshot === undefined) return undefined;
    const done = snapshot.phase === "done";
    const label = this.label();
    const wireMoved = snapshot.wireBytes > 0;
    const meter = label === "checking" || (done && !wireMoved) ? this.#checked : this.#wire;
    const moving = done || WORKING.has(snapshot.phase);
    const rate = !moving ? undefined : done ? meter.average() : meter.rate();
    const status = progressStatus(snapshot, rate);
    return {
      label,
      fraction: status.fraction,
      shownBytes: status.shownBytes,
      totalBytes: Math.max(0, snapshot.totalBytes),
      parts: snapshot.partsTotal === undefined ? undefined : {
        done: snapshot.partsDone ?? 0,
        total: snapshot.partsTotal,
        active: snapshot.partsActive,
      },
      moving,
      rate,
      etaSeconds: status.etaSeconds,
      elapsedSeconds: (this.#lastAt - (this.#firstAt ?? this.#lastAt)) / 1000,
      done,
    };
  }
}
