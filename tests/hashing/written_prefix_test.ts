import { createHash } from "node:crypto";
import { assertEquals } from "../fixtures/assert.ts";
import { randomInt, seededRandom } from "../fixtures/random.ts";
import { scanWrittenPrefix } from "../../src/hashing/written_prefix.ts";
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";

const sha = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

/** The rule, by brute force: up to the first all-zero block, then back to the last nonzero. */
function expectedPrefix(range: Uint8Array, block: number): number {
  let end = range.length;
  for (let start = 0; start < range.length; start += block) {
    if (range.subarray(start, start + block).every((b) => b === 0)) {
      end = start;
      break;
    }
  }
  let last = end - 1;
  while (last >= 0 && range[last] === 0) last--;
  return last + 1;
}

/** A range written up to `written`, with zero runs inside the data, then zeros. */
function layout(random: () => number, size: number, block: number): Uint8Array {
  const range = new Uint8Array(size);
  const written = randomInt(random, 0, size);
  for (let i = 0; i < written; i++) range[i] = randomInt(random, 0, 3) === 0 ? 0 : 1 + (i % 251);
  // Zeros that are data: short runs, and now and then a whole block or more.
  const runs = randomInt(random, 0, 4);
  for (let r = 0; r < runs && written > 0; r++) {
    const at = randomInt(random, 0, written - 1);
    const length = randomInt(random, 1, randomInt(random, 0, 1) === 0 ? 8 : 3 * block);
    range.fill(0, at, Math.min(written, at + length));
  }
  return range;
}

Deno.test("written prefix: 3,000 seeded layouts, any chunking, match the rule and hash exactly", () => {
  const random = seededRandom(20260101);
  for (let trial = 0; trial < 3000; trial++) {
    const block = [1, 3, 16, 64][trial % 4];
    const range = layout(random, randomInt(random, 0, 6 * block + 5), block);
    const hash = createHash("sha256");
    const scan = scanWrittenPrefix(hash, block);
    for (let at = 0; at < range.length;) {
      const n = randomInt(random, 1, 2 * block + 1);
      scan.update(range.subarray(at, at + n));
      at += n;
    }
    const { prefix, prefixHash } = scan.finish();
    const expected = expectedPrefix(range, block);
    assertEquals(prefix, expected, `trial ${trial}: prefix`);
    assertEquals(`sha256:${prefixHash.digest("hex")}`, sha(range.subarray(0, expected)));
    assertEquals(`sha256:${hash.digest("hex")}`, sha(range), `trial ${trial}: whole range`);
  }
});

Deno.test("written prefix: a scanned range's prefix hash continues with the rest, on a thread and inline", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/f.bin`;
    const MiB = 1 << 20;
    // Two ranges: [0, 5 MiB) written to 3 MiB + 4,321 (then zeros); [5 MiB, 7 MiB) all zeros.
    const file = new Uint8Array(7 * MiB);
    for (let i = 0; i < 3 * MiB + 4321; i++) file[i] = 1 + (i % 253);
    await Deno.writeFile(path, file);
    for (const count of [2, 0]) {
      const threads = new Sha256Threads(count);
      try {
        const scan = await threads.scanRange(path, 0, 5 * MiB);
        assertEquals([scan.digest, scan.prefix], [sha(file.subarray(0, 5 * MiB)), 3 * MiB + 4321]);
        const recycled: ArrayBuffer[] = [];
        const hash = scan.continueHash((buffer) => recycled.push(buffer));
        const rest = file.slice(scan.prefix, 5 * MiB);
        hash.update(rest.buffer, rest.length);
        assertEquals(await hash.digest(), sha(file.subarray(0, 5 * MiB)), `${count} threads`);
        assertEquals(recycled.length, 1);
        hash.close();
        const zeros = await threads.scanRange(path, 5 * MiB, 2 * MiB);
        assertEquals([zeros.digest, zeros.prefix], [sha(new Uint8Array(2 * MiB)), 0]);
        zeros.release();
        // Plain range hashes still work beside scans.
        assertEquals(await threads.hashRange(path, 0, 10), sha(file.subarray(0, 10)));
      } finally {
        threads.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("written prefix: an aborted scan rejects with the reason and the pool stays usable", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/f.bin`;
    await Deno.writeFile(path, new Uint8Array(32 << 20).fill(9));
    const threads = new Sha256Threads(1);
    try {
      const stop = new AbortController();
      const scanning = threads.scanRange(path, 0, 32 << 20, stop.signal);
      stop.abort(new Error("stop"));
      const err = await scanning.then(() => undefined, (e) => e);
      assertEquals((err as Error)?.message, "stop");
      const scan = await threads.scanRange(path, 0, 1 << 20);
      assertEquals(scan.prefix, 1 << 20);
      scan.release();
    } finally {
      threads.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
