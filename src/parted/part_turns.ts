/**
 * When each part of a push of a file goes: once its digest is known (asked for, then PUT), or
 * before, sent while it is hashed. Parts are taken in file order, the order the hashing read
 * finds their digests in. Once the registry has lacked a part, every part whose digest is not
 * known yet is sent while it is hashed (`LiveChoice.wantedWhole`), its first chunk alone until
 * the registry has taken a chunk of the push, so a registry without chunked uploads is sent one
 * chunk from each part on its way, never a part. A part found present stops that until a part is
 * missing again, so a rerun, whose parts are present, sends nothing before asking. A link capped
 * per connection then carries the parts from the first verdict on, instead of each part waiting
 * for the digests of all the parts before it.
 *
 * @module
 */
import { abortable } from "../transport/abortable.ts";
import { type LiveChoice, LiveUpload, type LiveUploadContext } from "./live_upload.ts";
import type { PartDescriptor } from "./manifest.ts";
import type { PartRange } from "./plan.ts";
import { type Deferred, deferred } from "../transport/deferred.ts";

/** A part's turn: its descriptor (digest known), and its session if it was sent early. */
export interface PartTurn {
  part: PartDescriptor;
  live: LiveUpload | undefined;
}

/** What a part sent early needs beyond its file, index and place. */
export type EarlyContext = Omit<LiveUploadContext, "path" | "offset" | "index">;

/**
 * The parts of one push, handed to workers in file order.
 *
 * @example
 * ```ts ignore
 * const turns = new PartTurns(plan, path, choice, context);
 * hashing.run((part) => turns.hashed(part));
 * const turn = await turns.next(); // undefined once every part was handed out
 * ```
 */
export class PartTurns {
  readonly #plan: readonly PartRange[];
  readonly #path: string;
  readonly #choice: LiveChoice;
  readonly #context: EarlyContext;
  readonly #digests: Deferred<PartDescriptor>[];
  readonly #known: (PartDescriptor | undefined)[];
  #next = 0;

  /** The turns of `plan`'s parts of the file at `path`. */
  constructor(plan: readonly PartRange[], path: string, choice: LiveChoice, context: EarlyContext) {
    this.#plan = plan;
    this.#path = path;
    this.#choice = choice;
    this.#context = context;
    this.#digests = plan.map(() => deferred<PartDescriptor>());
    this.#known = plan.map(() => undefined);
  }

  /** The hashing read found a part's digest. */
  hashed(part: PartDescriptor): void {
    this.#known[part.index] = part;
    this.#digests[part.index].resolve(part);
  }

  /**
   * The next part in file order once its digest is known, or sent early before it: undefined
   * when every part was handed out. Rejects when the push stops.
   */
  async next(): Promise<PartTurn | undefined> {
    const index = this.#next++;
    const range = this.#plan[index];
    if (range === undefined) return undefined;
    const { signal } = this.#context;
    let live: LiveUpload | undefined;
    for (;;) {
      const part = this.#known[index];
      if (part !== undefined) return { part, live };
      if (live === undefined && this.#choice.wantedWhole) live = this.#send(range);
      const change = live === undefined ? [this.#choice.changed()] : [];
      await abortable(Promise.race([this.#digests[index].promise, ...change]), signal);
    }
  }

  /** Opens the part's session and sends the part (the trial's first chunk alone first). */
  #send(range: PartRange): LiveUpload {
    const live = new LiveUpload({
      ...this.#context,
      path: this.#path,
      offset: range.offset,
      index: range.index,
    });
    live.offerWhole(range.size);
    return live;
  }
}
