import { assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { HashPool, hashRangeInline, ShortFileError } from "../../src/parted/fs_hash_pool.ts";
import { sliceDigest } from "./_helpers.ts";

Deno.test("hash pool: ranges hash like an independent hash; a short file and an abort reject", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f.bin`;
  await writePatternFile(path, 9 * 1024 * 1024 + 3);
  const pool = new HashPool(2);
  try {
    const ranges = [[0, 0], [0, 1], [5, 4 << 20], [1 << 20, 8 << 20], [9 << 20, 3]];
    for (const [offset, size] of ranges) {
      const expected = await sliceDigest(path, offset, size);
      assertEquals(await pool.hash(path, offset, size), expected);
      assertEquals(await hashRangeInline(path, offset, size), expected);
    }
    await assertRejects(() => pool.hash(path, 9 << 20, 10), ShortFileError);
    await assertRejects(() => hashRangeInline(path, 9 << 20, 10), ShortFileError);
    const controller = new AbortController();
    const pending = pool.hash(path, 0, 9 << 20, controller.signal);
    controller.abort(new DOMException("stop", "AbortError"));
    const err = await pending.then(() => undefined, (e) => e);
    assertInstanceOf(err, DOMException);
    // The pool keeps working after a thread was stopped.
    assertEquals(await pool.hash(path, 0, 1), await sliceDigest(path, 0, 1));
  } finally {
    pool.close();
  }
});
