import { patternBytes, sha256Bytes, sha256File, writePatternFile } from "../fixtures/files.ts";
import { assert, assertEquals, assertNotEquals } from "../fixtures/assert.ts";
import { withTempDir } from "../fixtures/tmp.ts";

Deno.test("files: the pattern file matches patternBytes and its digest, seeds differ", async () => {
  await withTempDir(async (dir) => {
    const size = (3 << 20) + 12345; // not a whole number of blocks
    const digest = await writePatternFile(`${dir}/a`, size, 5);
    assertEquals((await Deno.stat(`${dir}/a`)).size, size);
    assertEquals(await sha256File(`${dir}/a`), digest);
    const whole = patternBytes(size, 5);
    assertEquals(sha256Bytes(whole), digest);
    // Any window of the pattern can be produced on its own.
    assertEquals(
      patternBytes(5000, 5, (1 << 20) - 100),
      whole.subarray((1 << 20) - 100, (1 << 20) + 4900),
    );
    assertNotEquals(await writePatternFile(`${dir}/b`, size, 6), digest);
  });
});

Deno.test("files: blocks of the pattern differ, so a misplaced part changes the digest", () => {
  const bytes = patternBytes(4 << 20, 1);
  const blocks = new Set<string>();
  for (let i = 0; i < 4; i++) blocks.add(sha256Bytes(bytes.subarray(i << 20, (i + 1) << 20)));
  assertEquals(blocks.size, 4);
  const swapped = new Uint8Array(bytes);
  swapped.set(bytes.subarray(0, 1 << 20), 1 << 20);
  swapped.set(bytes.subarray(1 << 20, 2 << 20), 0);
  assert(sha256Bytes(swapped) !== sha256Bytes(bytes));
});
