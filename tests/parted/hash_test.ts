import { createHash } from "node:crypto";
import { assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { HashThreads } from "../../src/parted/hash_offload.ts";
import { HashPool, hashRangeInline, ShortFileError } from "../../src/parted/fs_hash_pool.ts";
import { sliceDigest } from "./_helpers.ts";

const sha = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

Deno.test("hash threads: running hashes continue, reset, and give every buffer back", async () => {
  const threads = new HashThreads(2);
  try {
    const recycled: ArrayBuffer[] = [];
    const a = threads.open((b) => recycled.push(b));
    const b = threads.open(() => {});
    const data = new Uint8Array(3000).map((_, i) => i * 7);
    for (const [start, end] of [[0, 1000], [1000, 2500], [2500, 3000]]) {
      const buffer = new ArrayBuffer(4096);
      new Uint8Array(buffer).set(data.subarray(start, end));
      a.update(buffer, end - start);
    }
    assertEquals(await a.digest(), sha(data));
    assertEquals(recycled.length, 3);
    a.reset();
    assertEquals(await a.digest(), sha(new Uint8Array()));
    assertEquals(await b.digest(), sha(new Uint8Array()));
    a.close();
    b.close();
  } finally {
    threads.close();
  }
});

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
