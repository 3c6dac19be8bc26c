/**
 * The default hashing mode: a thread per core for local passes over files; downloads inline where
 * one core hashes at 600 MB/s or faster, measured once per process.
 */
import { assertEquals } from "../fixtures/assert.ts";
import {
  defaultHashThreads,
  hashesInlineAt,
  hashesInlineByDefault,
  INLINE_HASH_MIN_RATE,
} from "../../src/hashing/hash_threads_default.ts";
import { coreCount } from "../../src/hashing/sha256_threads.ts";

Deno.test("hashing default: downloads inline at or above 600 MB/s on one core, on threads below", () => {
  assertEquals(INLINE_HASH_MIN_RATE, 6e8);
  assertEquals(hashesInlineAt(1.8e9), true);
  assertEquals(hashesInlineAt(6e8), true);
  assertEquals(hashesInlineAt(5.99e8), false);
  assertEquals(hashesInlineAt(0.3e9), false);
  assertEquals(defaultHashThreads(), coreCount());
});

Deno.test("hashing default: measured once, then the same answer for every client", () => {
  const first = hashesInlineByDefault();
  const started = performance.now();
  for (let i = 0; i < 1000; i++) assertEquals(hashesInlineByDefault(), first);
  assertEquals(performance.now() - started < 500, true, "later calls do not measure again");
});
