/**
 * How many hashing threads a client uses when its options name none, chosen by measuring this
 * machine once per process: none (every hash on the calling thread) when one core hashes at
 * least {@linkcode INLINE_HASH_MIN_RATE} bytes a second, else one per core.
 *
 * Why: a hashing thread is a second JavaScript runtime (about 25 MiB each) and every buffer
 * crosses to it and back; on a core with SHA extensions that costs more CPU per GiB than the
 * hash it moves, and the hash alone outruns any one transfer's bytes. Where a core hashes slower
 * than that, the threads let receiving, writing and hashing use separate cores.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { coreCount } from "./sha256_threads.ts";

/**
 * One core hashing sha256 at least this fast (bytes a second) hashes inline by default: cores with
 * SHA extensions measure 1.0–1.8 GB/s under load, cores without 0.15–0.5 GB/s.
 */
export const INLINE_HASH_MIN_RATE = 600_000_000;

// Eight samples of 1 MiB (under 1 ms each on a core with SHA extensions, shorter than a time
// slice): the best one counts, so being descheduled on a busy machine does not decide for the
// whole process.
const SAMPLE_BYTES = 1024 * 1024;
const SAMPLES = 8;

let chosen: number | undefined;

/**
 * The default hashing thread count: `0` where one core hashes at {@linkcode INLINE_HASH_MIN_RATE}
 * or faster, else the number of cores. Measured at the first call, then kept.
 *
 * @example Default hashing threads
 * ```ts
 * import { defaultHashThreads } from "./hash_threads_default.ts";
 * const threads = defaultHashThreads();
 * console.log(threads >= 0); // true
 * ```
 */
export function defaultHashThreads(): number {
  chosen ??= hashThreadsFor(oneCoreHashRate(), coreCount());
  return chosen;
}

/**
 * The rule: no thread where one core hashes `bytesPerSecond` at or above
 * {@linkcode INLINE_HASH_MIN_RATE}, else one per core.
 *
 * @example A core with SHA extensions, and one without
 * ```ts
 * import { hashThreadsFor } from "./hash_threads_default.ts";
 * console.log(hashThreadsFor(1.6e9, 8), hashThreadsFor(0.4e9, 8)); // 0 8
 * ```
 */
export function hashThreadsFor(bytesPerSecond: number, cores: number): number {
  return bytesPerSecond >= INLINE_HASH_MIN_RATE ? 0 : cores;
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
