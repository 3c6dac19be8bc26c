/**
 * File names, caller annotations and the whole-file digest check, on the real registry.
 * Manifests with a hostile title or a wrong file digest are crafted by hand and written with a
 * plain manifest PUT, as another tool could have written them.
 */
import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { DigestMismatchError, findError } from "../../src/errors/mod.ts";
import { InvalidManifestError } from "../../src/errors/kinds.ts";
import {
  ANNOTATION_FILE_DIGEST,
  ANNOTATION_TITLE,
  fromFile,
  PartedClient,
  toDirectory,
  toFile,
} from "../../src/parted/mod.ts";
import { rawManifest } from "./_helpers.ts";

const P = 64 * 1024;
const SIZE = 5 * P + 7;

async function putManifest(url: string, repository: string, tag: string, json: unknown) {
  const response = await fetch(`${url}/v2/${repository}/manifests/${tag}`, {
    method: "PUT",
    headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" },
    body: JSON.stringify(json),
  });
  await response.body?.cancel();
  if (response.status !== 201) throw new Error(`manifest PUT: ${response.status}`);
}

async function listDir(path: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(path)) names.push(entry.name);
  return names.sort();
}

registryTest(
  "names: push records the base name and the caller's annotations; a directory pull uses the name",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/weights.safetensors`;
    const digest = await writePatternFile(src, SIZE);
    using client = new PartedClient({ plainHttp: true });
    const ref = `${registry.host}/names/a:v1`;
    await client.push(ref, fromFile(src), {
      partSize: P,
      annotations: { "org.opencontainers.image.source": "https://example.test/repo", "x": "" },
    });
    const { json } = await rawManifest(registry.url, "names/a", "v1");
    const annotations = json.annotations as Record<string, string>;
    assertEquals(annotations[ANNOTATION_TITLE], "weights.safetensors");
    assertEquals(annotations["org.opencontainers.image.source"], "https://example.test/repo");
    assertEquals(annotations["x"], "");

    const out = `${dir.path}/out`;
    await Deno.mkdir(out);
    await client.pull(ref, toDirectory(out));
    assertEquals(await listDir(out), ["weights.safetensors"]);
    assertEquals(await sha256File(`${out}/weights.safetensors`), digest);

    // A base name a directory pull would refuse is not recorded at all.
    const odd = `${dir.path}/line\nbreak.bin`;
    await Deno.copyFile(src, odd);
    await client.push(`${registry.host}/names/a:odd`, fromFile(odd), { partSize: P });
    const oddManifest = await rawManifest(registry.url, "names/a", "odd");
    assertEquals(
      (oddManifest.json.annotations as Record<string, string>)[ANNOTATION_TITLE],
      undefined,
    );

    for (const key of [ANNOTATION_TITLE, "dev.ocipart.parted.v1.part-size"]) {
      const err = await assertRejects(() =>
        client.push(ref, fromFile(src), { annotations: { [key]: "x" } })
      );
      assertInstanceOf(err, RangeError);
    }
  },
);

registryTest(
  "names: a title that is not a plain file name is refused before anything is written",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, SIZE);
    using client = new PartedClient({ plainHttp: true });
    await client.push(`${registry.host}/names/b:v1`, fromFile(src), { partSize: P });
    const { json } = await rawManifest(registry.url, "names/b", "v1");
    const out = `${dir.path}/out`;
    await Deno.mkdir(out);
    const hostile = ["..", ".", "", "../escape.bin", "a/b", "a\\b", "nul\0.bin", "x".repeat(256)];
    for (const [i, title] of [...hostile, undefined].entries()) {
      const annotations = { ...(json.annotations as Record<string, string>) };
      if (title === undefined) delete annotations[ANNOTATION_TITLE];
      else annotations[ANNOTATION_TITLE] = title;
      await putManifest(registry.url, "names/b", `t${i}`, { ...json, annotations });
      const err = await assertRejects(() =>
        client.pull(`${registry.host}/names/b:t${i}`, toDirectory(out))
      );
      assertInstanceOf(findError(err, InvalidManifestError), InvalidManifestError, String(err));
      assert(/title/.test((err as Error).message), (err as Error).message);
      assertEquals(await listDir(out), [], `nothing written for title ${JSON.stringify(title)}`);
      assertEquals(await listDir(dir.path), ["out", "src.bin"], "nothing written beside it");
    }
    // Pulled into a named file, the same hostile title is irrelevant.
    await client.pull(`${registry.host}/names/b:t0`, toFile(`${out}/named.bin`));
    assertEquals(await listDir(out), ["named.bin"]);
  },
);

registryTest(
  "file digest: checked while parts land when asked; a wrong annotation leaves no destination",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, SIZE);
    using client = new PartedClient({ plainHttp: true });
    const ref = `${registry.host}/names/c:v1`;
    await client.push(ref, fromFile(src), { partSize: P });
    await client.pull(ref, toFile(`${dir.path}/ok.bin`), { verifyFileDigest: true, workers: 3 });
    assertEquals(await sha256File(`${dir.path}/ok.bin`), digest);

    // Parts right, file digest wrong: every part verifies, the whole does not.
    const { json } = await rawManifest(registry.url, "names/c", "v1");
    const wrong = `sha256:${"0".repeat(64)}`;
    const annotations = { ...(json.annotations as Record<string, string>) };
    annotations[ANNOTATION_FILE_DIGEST] = wrong;
    await putManifest(registry.url, "names/c", "wrong", { ...json, annotations });
    const dest = `${dir.path}/bad.bin`;
    const err = await assertRejects(() =>
      client.pull(`${registry.host}/names/c:wrong`, toFile(dest), { verifyFileDigest: true })
    );
    assertInstanceOf(findError(err, DigestMismatchError), DigestMismatchError, String(err));
    assert(!(await Deno.stat(dest).then(() => true, () => false)), "no destination");
    // Without the check the same artifact pulls (the spec's default: parts only).
    await client.pull(`${registry.host}/names/c:wrong`, toFile(dest));
    assertEquals(await sha256File(dest), digest);
  },
);
