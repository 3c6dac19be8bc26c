/**
 * BlobClient progress on the real registry: the same snapshot shape as PartedClient, at most
 * about ten pull callbacks a second plus the one that reaches the total, never backwards.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { BlobClient, type ProgressSnapshot } from "../../src/blob/mod.ts";
import { fileBody } from "../../src/transport/file_body.ts";
import { digestOf } from "./_helpers.ts";

const MiB = 1024 * 1024;

registryTest("blob progress: parted's snapshot shape, throttled pulls, monotonic", async () => {
  await using registry = await startRegistry();
  await using dir = await tempDir();
  using client = new BlobClient({ plainHttp: true });
  const size = 48 * MiB;
  const path = `${dir.path}/b.bin`;
  const digest = await writePatternFile(path, size, 7);
  const repo = `${registry.host}/progress/blob`;
  const pushed: ProgressSnapshot[] = [];
  await client.push(repo, digest, size, () => fileBody(path, 0, size), {
    onProgress: (done, total, s) => {
      assertEquals([s.completedBytes, s.totalBytes], [done, total]);
      pushed.push(s);
    },
  });
  assertEquals(pushed.at(-1), {
    completedBytes: size,
    transferredBytes: size,
    wireBytes: size,
    totalBytes: size,
    phase: "uploading",
  });

  for (const slow of [false, true]) {
    const seen: ProgressSnapshot[] = [];
    const started = performance.now();
    const stream = await client.pull(repo, digest, {
      onProgress: (done, total, s) => {
        assertEquals([s.completedBytes, s.totalBytes], [done, total]);
        seen.push(s);
      },
    });
    let consumed = stream;
    if (slow) {
      // A reader that takes its time: the held-back values still arrive, throttled.
      consumed = stream.pipeThrough(
        new TransformStream({
          async transform(chunk, controller) {
            await new Promise((resolve) => setTimeout(resolve, 1));
            controller.enqueue(chunk);
          },
        }),
      );
    }
    assertEquals(await digestOf(consumed), { digest, size });
    const seconds = (performance.now() - started) / 1000;
    assert(
      seen.length <= Math.ceil(seconds * 10) + 2,
      `${seen.length} calls in ${seconds.toFixed(2)}s`,
    );
    assert(seen.length >= 2, `${seen.length} calls`);
    for (let i = 1; i < seen.length; i++) {
      assert(seen[i].completedBytes > seen[i - 1].completedBytes, "grows");
    }
    assertEquals(seen.at(-1)!.completedBytes, size);
    assertEquals(seen.at(-1)!.phase, "downloading");
    const calls = seen.length;
    await new Promise((resolve) => setTimeout(resolve, 250));
    assertEquals(seen.length, calls, "no call after the stream ended");
  }
});
