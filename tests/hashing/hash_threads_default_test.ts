/**
 * The default hashing mode: inline where one core hashes at 600 MB/s or faster, else one thread
 * per core; measured once per process.
 */
import { assertEquals } from "../fixtures/assert.ts";
import {
  defaultHashThreads,
  hashThreadsFor,
  INLINE_HASH_MIN_RATE,
} from "../../src/hashing/hash_threads_default.ts";
import { coreCount } from "../../src/hashing/sha256_threads.ts";

Deno.test("hashing default: inline at or above 600 MB/s on one core, one thread per core below", () => {
  assertEquals(INLINE_HASH_MIN_RATE, 6e8);
  assertEquals(hashThreadsFor(1.8e9, 4), 0);
  assertEquals(hashThreadsFor(6e8, 4), 0);
  assertEquals(hashThreadsFor(5.99e8, 4), 4);
  assertEquals(hashThreadsFor(0.3e9, 2), 2);
});

Deno.test("hashing default: measured once, then the same answer for every client", () => {
  const first = defaultHashThreads();
  assertEquals(first === 0 || first === coreCount(), true, `${first}`);
  const started = performance.now();
  for (let i = 0; i < 1000; i++) assertEquals(defaultHashThreads(), first);
  assertEquals(performance.now() - started < 500, true, "later calls do not measure again");
});
