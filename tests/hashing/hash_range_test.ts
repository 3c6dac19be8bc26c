import { assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { hashRangeInline, ShortFileError } from "../../src/hashing/hash_range.ts";
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";
import { sliceDigest } from "../parted/_helpers.ts";

Deno.test("hash threads: ranges hash like an independent hash; a short file and an abort reject", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f.bin`;
  await writePatternFile(path, 9 * 1024 * 1024 + 3);
  const pool = new Sha256Threads(2);
  try {
    const ranges = [[0, 0], [0, 1], [5, 4 << 20], [1 << 20, 8 << 20], [9 << 20, 3]];
    for (const [offset, size] of ranges) {
      const expected = await sliceDigest(path, offset, size);
      assertEquals(await pool.hashRange(path, offset, size), expected);
      assertEquals(await hashRangeInline(path, offset, size), expected);
    }
    await assertRejects(() => pool.hashRange(path, 9 << 20, 10), ShortFileError);
    await assertRejects(() => hashRangeInline(path, 9 << 20, 10), ShortFileError);
    const controller = new AbortController();
    const pending = pool.hashRange(path, 0, 9 << 20, controller.signal);
    controller.abort(new DOMException("stop", "AbortError"));
    const err = await pending.then(() => undefined, (e) => e);
    assertInstanceOf(err, DOMException);
    // The pool keeps working after a thread was stopped.
    assertEquals(await pool.hashRange(path, 0, 1), await sliceDigest(path, 0, 1));
  } finally {
    pool.close();
  }
});

Deno.test("hash threads: an abort with 4,096 ranges queued rejects them all within 1 s and the pool stays usable", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f.bin`;
  await writePatternFile(path, 4096 * 16384);
  const pool = new Sha256Threads(2);
  try {
    const controller = new AbortController();
    const ranges = Array.from(
      { length: 4096 },
      (_, i) => pool.hashRange(path, i * 16384, 16384, controller.signal),
    );
    await ranges[0];
    const started = performance.now();
    controller.abort(new DOMException("stop", "AbortError"));
    const outcomes = await Promise.allSettled(ranges);
    const elapsed = performance.now() - started;
    const rejected = outcomes.filter((o) => o.status === "rejected");
    assertEquals(rejected.length > 4000, true, `${rejected.length} rejected`);
    for (const r of rejected) assertInstanceOf((r as PromiseRejectedResult).reason, DOMException);
    assertEquals(elapsed < 1000, true, `queue cancelled in ${elapsed.toFixed(0)} ms`);
    assertEquals(await pool.hashRange(path, 0, 1), await sliceDigest(path, 0, 1));
  } finally {
    pool.close();
  }
});
