import { createHash } from "node:crypto";
import { assertEquals } from "../fixtures/assert.ts";
import { Sha256Threads } from "../../src/registry/sha256_threads.ts";

const sha = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

Deno.test("sha256 threads: running hashes continue, reset, and give every buffer back", async () => {
  const threads = new Sha256Threads(2);
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
