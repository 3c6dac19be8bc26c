import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  ANNOTATION_FILE_DIGEST,
  ANNOTATION_FILE_SIZE,
  ANNOTATION_PART_SIZE,
  fromFile,
  PARTED_LAYER_MEDIA_TYPE,
  PartedClient,
  TooManyPartsError,
} from "../../src/parted/mod.ts";
import { rawManifest, sliceDigest } from "./_helpers.ts";

const P = 1024 * 1024;

registryTest("split rule on the real registry: sizes 0, 1, P-1, P, P+1, 3P, 3P+1", async () => {
  await using registry = await startRegistry();
  await using dir = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  for (const [i, size] of [0, 1, P - 1, P, P + 1, 3 * P, 3 * P + 1].entries()) {
    const path = `${dir.path}/f${i}.bin`;
    const fileDigest = await writePatternFile(path, size, i + 1);
    const descriptor = await client.push(`${registry.host}/split/f:s${i}`, fromFile(path), {
      partSize: P,
    });
    const { json, digest } = await rawManifest(registry.url, "split/f", `s${i}`);
    assertEquals(digest, descriptor.digest, `size ${size}: descriptor digest`);
    const layers = json.layers as { mediaType: string; digest: string; size: number }[];
    const expectedCount = size === 0 ? 1 : Math.ceil(size / P);
    assertEquals(layers.length, expectedCount, `size ${size}: layer count`);
    for (const [index, layer] of layers.entries()) {
      const offset = index * P;
      const length = Math.min(P, size - offset);
      assertEquals(layer.mediaType, PARTED_LAYER_MEDIA_TYPE);
      assertEquals(layer.size, length, `size ${size}: part ${index} size`);
      assertEquals(layer.digest, await sliceDigest(path, offset, length), `part ${index} digest`);
    }
    const annotations = json.annotations as Record<string, string>;
    assertEquals(annotations[ANNOTATION_FILE_DIGEST], fileDigest);
    assertEquals(annotations[ANNOTATION_FILE_SIZE], String(size));
    assertEquals(annotations[ANNOTATION_PART_SIZE], String(P));
    if (size <= P) assertEquals(layers[0].digest, await sha256File(path), "one part = the file");
  }
});

Deno.test("split rule: more than 4096 parts is refused before any request", async () => {
  await using fake = await startFakeRegistry();
  await using dir = await tempDir();
  const path = `${dir.path}/f.bin`;
  await writePatternFile(path, 4096 * 3 + 1);
  using client = new PartedClient({ plainHttp: true });
  const err = await assertRejects(
    () => client.push(`${fake.host}/split/f:v1`, fromFile(path), { partSize: 3 }),
    TooManyPartsError,
  );
  assertEquals(err.minPartSize, 4);
  assert(err.message.includes("the smallest part size that fits is 4 bytes"));
  assertEquals(fake.log.length, 0);
  // The size it names works.
  await client.push(`${fake.host}/split/f:v1`, fromFile(path), { partSize: 4 });
  fake.expectNoUnexpected();
});
