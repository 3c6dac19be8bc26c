/**
 * A part fetched in stripes: byte ranges of one part that several connections fetch at once,
 * so that a pull into a stream has its next part whole (and verified) early instead of every
 * part of the window at the end together. The stripes land in the part's held place; the part is
 * hashed in order as the stripes in front complete, and verified once all are in. Only then may
 * its bytes leave, as for a part fetched whole.
 *
 * A registry that answers a range with the whole blob (200), or a part whose bytes hash wrong
 * after a mirror sent some of them, is fetched again whole from the registry by one connection
 * (`downloadPart`); a registry that sent every byte of a wrong part gives its verdict,
 * `DigestMismatchError`.
 *
 * @module
 */
import { ProtocolError } from "../errors/kinds.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { openStreamHash } from "../hashing/stream_sha256.ts";
import { DigestCheck } from "../remote/digest_check.ts";
import { mirrorSpoiled } from "../remote/mirror_reads.ts";
import { FilePart, type HeldPart, MemoryPart } from "./held_part.ts";
import type { PartDescriptor } from "./manifest.ts";
import { once } from "./once.ts";
import { downloadPart, downloadRange, type PartDownloadContext } from "./part_download.ts";

/**
 * The least bytes of one stripe: small enough that the hash follows the connections closely (the
 * part verifies soon after its last bytes arrive), large enough that a request's cost is noise.
 */
export const STRIPE_BYTES: number = 16 << 20;

/**
 * The most stripes of one part (the default worker count), but for the file's last part: every
 * stripe is a request, and each costs the registry too. Distribution spent 0.35–0.5 CPU-s more
 * serving 2 GiB in 128 stripes of 16 MiB than in 32 of 64 MiB, on the two cores the pull shares
 * with it. The file's last part keeps small stripes: stripes fetched side by side land together
 * and are hashed one after the other, so all but the first stripe of a part are hashed after its
 * last bytes arrive, and after the last part nothing else runs meanwhile.
 */
export const STRIPES_PER_PART = 8;

const MiB = 1 << 20;

/**
 * Bytes of each stripe of a part of `partSize`: {@linkcode STRIPE_BYTES}, or more for a part of
 * over {@linkcode STRIPES_PER_PART} of them (a whole MiB count).
 *
 * @example
 * ```ts
 * import { stripeBytes } from "./striped_part.ts";
 * console.log(stripeBytes(40 << 20) >> 20, stripeBytes(512 << 20) >> 20); // 16 64
 * ```
 */
export function stripeBytes(partSize: number): number {
  return Math.max(STRIPE_BYTES, Math.ceil(partSize / STRIPES_PER_PART / MiB) * MiB);
}

/** Whether the registry answered a range with the whole blob: later parts are fetched whole. */
export interface RangeSupport {
  refused: boolean;
}

/** One stripe: bytes `[start, end]` of a part (offsets within the part). */
export interface Stripe {
  part: PartDescriptor;
  /** The stripe's place among the part's stripes. */
  index: number;
  start: number;
  end: number;
}

/**
 * The stripes of `part`: one (the whole part) when it is at most two stripes long, else
 * {@linkcode stripeBytes} each (of {@linkcode STRIPE_BYTES} when `last`: the part that ends the
 * file's last part-size bytes), the last one shorter.
 *
 * @example
 * ```ts
 * import { STRIPE_BYTES, stripesOf } from "./striped_part.ts";
 * const part = { index: 0, offset: 0, size: 3 * STRIPE_BYTES + 1, digest: "sha256:…" };
 * console.log(stripesOf(part, false).map((s) => s.end - s.start + 1).length); // 4
 * ```
 */
export function stripesOf(part: PartDescriptor, last: boolean): Stripe[] {
  const size = last ? STRIPE_BYTES : stripeBytes(part.size);
  if (part.size <= 2 * size) {
    return [{ part, index: 0, start: 0, end: part.size - 1 }];
  }
  const count = Math.ceil(part.size / size);
  return Array.from({ length: count }, (_, index) => ({
    part,
    index,
    start: index * size,
    end: Math.min(part.size, (index + 1) * size) - 1,
  }));
}

/**
 * The part's verdict, handed to the call that brought in its last stripe: `verified` settles
 * once the part has verified (it may then be read out) or has failed.
 */
export interface PartVerdict {
  verified: Promise<void>;
}

/**
 * One part being fetched in stripes into `held`: `fetch` each stripe (from any number of
 * connections at once); the call that brings in the last one gets the part's verdict to come.
 *
 * @example
 * ```ts ignore
 * const striped = new StripedPart(context, part, held, ranges, stripesOf(part, false));
 * const fetched = await striped.fetch(stripe);
 * if (fetched !== "fetched") fetched.verified.then(() => ready.resolve(held));
 * ```
 */
export class StripedPart {
  /** The pull's context, with a signal that also stops when the part's stripes are stopped. */
  readonly #context: PartDownloadContext;
  /** The pull's own signal: a whole fetch of the part runs on it. */
  readonly #pullSignal: AbortSignal;
  readonly #part: PartDescriptor;
  readonly #held: HeldPart;
  readonly #stripes: Stripe[];
  /** Which stripes are in place. */
  readonly #done: boolean[];
  readonly #running = new Set<Promise<unknown>>();
  /** The verdict under way, once every stripe is in. */
  #verifying: Promise<void> | undefined;
  readonly #hash: FrontHash;
  readonly #ranges: RangeSupport;
  /** The stripes before it are in place and handed to the hash. */
  #front = 0;
  #mirrored = false;
  /** The part is fetched whole instead; stripes still running are not waited for. */
  #whole = false;
  /** Stops the stripes still running (the part failed, or is fetched whole). */
  readonly #stop = new AbortController();

  /**
   * A part fetched in its `stripes` ({@linkcode stripesOf}) into `held` with the pull's
   * `context`; `ranges` is shared by the parts of one pull.
   */
  constructor(
    context: PartDownloadContext,
    part: PartDescriptor,
    held: HeldPart,
    ranges: RangeSupport,
    stripes: Stripe[],
  ) {
    this.#pullSignal = context.signal;
    this.#ranges = ranges;
    this.#part = part;
    this.#held = held;
    this.#stripes = stripes;
    this.#done = this.#stripes.map(() => false);
    this.#hash = frontHash(context, held);
    this.#context = { ...context, signal: AbortSignal.any([context.signal, this.#stop.signal]) };
  }

  /**
   * Fetches `stripe` into place and hashes what is in front. Resolves `"fetched"`, or for the
   * call that completed the part, its verdict: the hash of the stripes not hashed yet goes on
   * while the caller's connection takes its next stripe (stripes fetched side by side land
   * together, so that is most of a part when they are large).
   */
  async fetch(stripe: Stripe): Promise<"fetched" | PartVerdict> {
    if (this.#whole) return "fetched";
    if (this.#ranges.refused) return await this.#fetchWhole();
    const fetching = downloadRange(this.#context, this.#part, stripe.start, stripe.end);
    this.#running.add(fetching);
    try {
      const { mirrored } = await fetching;
      this.#mirrored ||= mirrored;
    } catch (err) {
      if (this.#whole) return "fetched";
      if (!(err instanceof ProtocolError && err.status === 200)) throw err;
      // The registry does not serve ranges: one connection fetches each part whole.
      this.#ranges.refused = true;
    } finally {
      this.#running.delete(fetching);
    }
    if (this.#ranges.refused && !this.#whole) return await this.#fetchWhole();
    if (this.#whole) return "fetched";
    this.#done[stripe.index] = true;
    this.#hashFront();
    // Every stripe is in once the front has passed the last one.
    if (this.#front < this.#stripes.length) return "fetched";
    // Kept: the part's place is let go only once the verdict is in (a mirror's wrong part is
    // fetched again whole into it, by one connection more than the workers).
    const verified = this.#verifying = this.#verify();
    verified.catch(() => {});
    return { verified };
  }

  /** Stops every stripe of the part still running (their fetches then fail or say `"fetched"`). */
  stop(): void {
    this.#stop.abort(new Error("the part's stripes were stopped"));
  }

  /** Waits until nothing writes or reads the part's place any more (before it is let go). */
  async settled(): Promise<void> {
    await this.#stripesSettled();
    await this.#verifying?.catch(() => {});
  }

  /** Waits until no stripe of the part is being written. */
  async #stripesSettled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** Hashes the stripes in front that are in, in order. */
  #hashFront(): void {
    while (this.#front < this.#stripes.length && this.#done[this.#front]) {
      const { start, end } = this.#stripes[this.#front];
      this.#hash.add(start, end - start + 1);
      this.#front++;
    }
  }

  /** Checks the part's digest; a mirror's wrong bytes send the part to the registry alone. */
  async #verify(): Promise<void> {
    const part = this.#part;
    try {
      await new DigestCheck(part.digest, `part ${part.index}`).verify(this.#hash);
    } catch (err) {
      if (!(err instanceof DigestMismatchError) || !this.#mirrored) throw err;
      // Kept as the reason in progress only: the registry is asked alone from here on.
      mirrorSpoiled(this.#context.repo, part.digest, `part ${part.index}`);
      await this.#fetchWhole();
    } finally {
      this.#hash.close();
    }
  }

  /** Fetches the part whole from byte zero, once every stripe still writing has stopped. */
  async #fetchWhole(): Promise<PartVerdict> {
    this.#whole = true;
    this.#hash.close();
    this.stop();
    await this.#stripesSettled();
    this.#context.progress.restartPart(this.#part.index);
    await downloadPart(
      { ...this.#context, signal: this.#pullSignal, partial: this.#held },
      this.#part,
    );
    return VERIFIED;
  }
}

/** The verdict of a part fetched whole: it verified as it arrived. */
const VERIFIED: PartVerdict = { verified: Promise.resolve() };

/** A part's hash fed with byte ranges of its held place, in order. */
interface FrontHash {
  /** Queues `length` bytes of the part from `from`, after every earlier range. */
  add(from: number, length: number): void;
  /** `sha256:<hex>` of every range added; rejects when one could not be read. */
  digest(): Promise<string>;
  close(): void;
}

/**
 * The hash of a held part: a file's ranges are read and hashed on a hashing thread (a pass over
 * local bytes); a part in memory goes through the stream hash downloads use (inline, or copied
 * for a thread).
 */
function frontHash(context: PartDownloadContext, held: HeldPart): FrontHash {
  const { hashThreads, signal } = context;
  if (held instanceof FilePart) {
    const hash = hashThreads.openFileHash();
    const path = held.file.path;
    return {
      add: (from, length) => void hash.add(path, from, length, signal).catch(() => {}),
      digest: () => hash.digest(),
      close: once(() => hash.close()),
    };
  }
  if (!(held instanceof MemoryPart)) {
    throw new TypeError("a striped part is held in a file or in memory");
  }
  const hash = openStreamHash(held.bytes.byteLength, hashThreads);
  let queue: Promise<void> = Promise.resolve();
  return {
    add: (from, length) => {
      queue = queue.then(() => hash.update(held.bytes.subarray(from, from + length)));
    },
    digest: async () => {
      await queue;
      return await hash.digest();
    },
    close: once(() => hash.close()),
  };
}
