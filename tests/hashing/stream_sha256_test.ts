import { createHash } from "node:crypto";
import { assertEquals } from "../fixtures/assert.ts";
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";
import { openStreamHash, THREADED_HASH_MIN_BYTES } from "../../src/hashing/stream_sha256.ts";

const sha = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

Deno.test("stream hash: threaded and inline hashes agree over uneven chunks reused at once", async () => {
  const size = THREADED_HASH_MIN_BYTES + 777_777;
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i += 4096) data[i] = (i * 31) & 0xff;
  const threads = new Sha256Threads(2);
  try {
    for (const expected of [size, undefined, 100]) {
      const hash = openStreamHash(expected, threads);
      // One scratch chunk reused for every update: the hash must have copied what it needed.
      const scratch = new Uint8Array(3 << 20);
      let offset = 0;
      let step = 1;
      while (offset < size) {
        const take = Math.min(size - offset, step);
        scratch.set(data.subarray(offset, offset + take));
        await hash.update(scratch.subarray(0, take));
        scratch.fill(0xee, 0, take);
        offset += take;
        step = (step * 7 + 13) % (3 << 20) || 1;
      }
      assertEquals(hash.bytes, size);
      assertEquals(await hash.digest(), sha(data));
      hash.close();
    }
  } finally {
    threads.close();
  }
});

Deno.test("stream hash: a closed set of threads falls back to hashing inline", async () => {
  const threads = new Sha256Threads(1);
  threads.close();
  const hash = openStreamHash(THREADED_HASH_MIN_BYTES, threads);
  const data = new Uint8Array(THREADED_HASH_MIN_BYTES).fill(7);
  await hash.update(data);
  assertEquals(await hash.digest(), sha(data));
  hash.close();
});
