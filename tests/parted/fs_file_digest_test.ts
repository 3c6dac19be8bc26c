/**
 * The whole-file digest check hashes while parts land: each part is read back as soon as it
 * extends the contiguous prefix, not after the last one.
 */
import { assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { DigestMismatchError } from "../../src/errors/sentinels.ts";
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";
import { FileDigestCheck } from "../../src/parted/fs_file_digest.ts";
import { planParts } from "../../src/parted/plan.ts";
import { overwrite } from "./_helpers.ts";

const P = 3 * 1024 * 1024 + 17;

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

for (const threads of [0, 2]) {
  Deno.test(`file digest check follows the contiguous prefix as parts land (${threads} threads)`, async () => {
    await using dir = await tempDir();
    const bytes = patternBytes(4 * P + 5);
    const path = `${dir.path}/f.parted-partial`;
    await Deno.writeFile(path, bytes);
    const parts = planParts(bytes.byteLength, P).map((p) => ({ ...p, digest: "" }));
    const pool = new Sha256Threads(threads);
    const check = new FileDigestCheck(path, parts, sha256Bytes(bytes), pool);
    try {
      // Out of order: nothing can be hashed until part 0 is there.
      check.partPlaced(2);
      check.partPlaced(1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assertEquals(check.hashedParts, 0);
      check.partPlaced(0);
      await until(() => check.hashedParts === 3);
      // Already hashed: changing part 0 on disk now does not change the result, which shows
      // the hash ran while parts were landing rather than after the last one.
      await overwrite(path, 10, new Uint8Array(100));
      check.partPlaced(4);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assertEquals(check.hashedParts, 3, "part 4 waits for part 3");
      check.partPlaced(3);
      await check.finish();
      assertEquals(check.hashedParts, 5);
    } finally {
      check.close();
      pool.close();
    }
  });
}

Deno.test("file digest check rejects with DigestMismatchError when the whole differs", async () => {
  await using dir = await tempDir();
  const bytes = patternBytes(2 * P);
  const path = `${dir.path}/g.parted-partial`;
  await Deno.writeFile(path, bytes);
  const parts = planParts(bytes.byteLength, P).map((p) => ({ ...p, digest: "" }));
  const pool = new Sha256Threads(0);
  const check = new FileDigestCheck(path, parts, `sha256:${"a".repeat(64)}`, pool);
  try {
    check.partPlaced(0);
    check.partPlaced(1);
    const err = await assertRejects(() => check.finish());
    assertInstanceOf(err, DigestMismatchError);
  } finally {
    check.close();
    pool.close();
  }
});
