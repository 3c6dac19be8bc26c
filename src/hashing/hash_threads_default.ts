/**
 * The default hashing mode, chosen by measuring this machine once per process. Three kinds of
 * work hash, and they want different homes:
 *
 * - Local passes over a file (a pull's resume pass, `verify`, a push from a stream) hash as fast
 *   as cores allow: one thread per core, so two passes run side by side and the transfer's own
 *   thread stays free.
 * - Downloads hash bytes as they arrive. Where one core hashes at least
 *   {@linkcode INLINE_HASH_MIN_RATE} bytes a second, they hash on the thread that receives them: a
 *   thread would cost a second JavaScript runtime (about 12–25 MiB) and a hand-over of every buffer,
 *   more CPU per GiB than the hash it moves, while the hash alone outruns any one link's bytes.
 * - A push's part and file digests, on such a core, start on the calling thread too: both digests
 *   together outrun what a registry takes. Once a part turns out to be present, hashing is what
 *   the push waits for and its parts move to threads (`parted/push_hashing.ts`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { coreCount } from "./sha256_threads.ts";

/**
 * One core hashing sha256 at least this fast (bytes a second) hashes downloads inline by default:
 * cores with SHA extensions measure 1.0–1.8 GB/s under load, cores without 0.15–0.5 GB/s.
 */
export const INLINE_HASH_MIN_RATE = 600_000_000;

// Eight samples of 1 MiB (under 1 ms each on a core with SHA extensions, shorter than a time
// slice): the best one counts, so being descheduled on a busy machine does not decide for the
// whole process.
const SAMPLE_BYTES = 1024 * 1024;
const SAMPLES = 8;

let inline: boolean | undefined;

/**
 * The default number of hashing threads: one per core (threads start only when work needs them,
 * and downloads on a fast core need none).
 *
 * @example Default hashing threads
 * ```ts
 * import { defaultHashThreads } from "./hash_threads_default.ts";
 * console.log(defaultHashThreads() >= 1); // true
 * ```
 */
export function defaultHashThreads(): number {
  return coreCount();
}

/**
 * Whether downloads, and a push until it finds a part present, hash on the calling thread by
 * default: one core hashes at {@linkcode INLINE_HASH_MIN_RATE} or faster. Measured at the first
 * call, then kept.
 *
 * @example
 * ```ts
 * import { hashesInlineByDefault } from "./hash_threads_default.ts";
 * console.log(typeof hashesInlineByDefault()); // "boolean"
 * ```
 */
export function hashesInlineByDefault(): boolean {
  inline ??= hashesInlineAt(oneCoreHashRate());
  return inline;
}

/**
 * The rule: downloads hash inline where one core hashes `bytesPerSecond` at or above
 * {@linkcode INLINE_HASH_MIN_RATE}.
 *
 * @example A core with SHA extensions, and one without
 * ```ts
 * import { hashesInlineAt } from "./hash_threads_default.ts";
 * console.log(hashesInlineAt(1.6e9), hashesInlineAt(0.4e9)); // true false
 * ```
 */
export function hashesInlineAt(bytesPerSecond: number): boolean {
  return bytesPerSecond >= INLINE_HASH_MIN_RATE;
}

/** Bytes a second one sha256 hashes on this thread (best of the samples). */
function oneCoreHashRate(): number {
  const sample = new Uint8Array(SAMPLE_BYTES).fill(0x5a);
  let best = Infinity;
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    createHash("sha256").update(sample).digest();
    best = Math.min(best, performance.now() - started);
  }
  return SAMPLE_BYTES / (Math.max(best, 0.001) / 1000);
}
