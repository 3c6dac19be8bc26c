import { open } from "node:fs/promises";
import { createHash } from "node:crypto";
import { assertEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { fromFile, PartedClient } from "../../src/parted/mod.ts";
import { rawManifest } from "./_helpers.ts";

async function skopeo(...args: string[]): Promise<Uint8Array> {
  const out = await new Deno.Command("skopeo", { args, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(`skopeo failed: ${new TextDecoder().decode(out.stderr)}`);
  return out.stdout;
}

registryTest(
  "interop: skopeo reads our manifest and copies the artifact; its layers concatenate to the file",
  {
    needs: ["skopeo"],
  },
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const fileDigest = await writePatternFile(src, 3 * 1024 * 1024 + 12345, 5);
    using client = new PartedClient({ plainHttp: true });
    const descriptor = await client.push(`${registry.host}/interop/file:v1`, fromFile(src), {
      partSize: 1024 * 1024,
    });
    const ours = await rawManifest(registry.url, "interop/file", "v1");

    const raw = await skopeo(
      "inspect",
      "--tls-verify=false",
      "--raw",
      `docker://${registry.host}/interop/file:v1`,
    );
    assertEquals(new TextDecoder().decode(raw).trim(), new TextDecoder().decode(ours.bytes));

    const layout = `${dir.path}/layout`;
    await skopeo(
      "copy",
      "--src-tls-verify=false",
      `docker://${registry.host}/interop/file:v1`,
      `oci:${layout}:v1`,
    );
    const index = JSON.parse(await Deno.readTextFile(`${layout}/index.json`));
    assertEquals(index.manifests[0].digest, descriptor.digest, "manifest copied byte for byte");
    const manifest = JSON.parse(
      await Deno.readTextFile(`${layout}/blobs/sha256/${descriptor.digest.slice(7)}`),
    );
    const hash = createHash("sha256");
    for (const layer of manifest.layers as { digest: string }[]) {
      const handle = await open(`${layout}/blobs/sha256/${layer.digest.slice(7)}`, "r");
      for await (const chunk of handle.readableWebStream()) {
        hash.update(new Uint8Array(chunk as ArrayBuffer));
      }
      await handle.close();
    }
    assertEquals(`sha256:${hash.digest("hex")}`, fileDigest);
  },
);
