/**
 * `ocipart pull` of artifacts other tools write with one file per layer, built here as ORAS,
 * ModelPack and Docker's model packaging lay them out and pushed to Distribution: the layer is
 * pulled with the blob engine, resumably and verified; hostile ones (a name that is not a plain
 * file name, a size that lies, bytes that do not match) are refused with nothing committed.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { exists } from "../fixtures/expect.ts";
import { sha256Bytes } from "../fixtures/files.ts";
import { putBlobByHand } from "./_images.ts";
import { lines, runCli, spawnCli } from "./_cli.ts";
import { randomBytes } from "../fixtures/random.ts";

const MiB = 1024 * 1024;
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const EMPTY = new TextEncoder().encode("{}");

/** Uploads `bytes` as a blob of `repository` (monolithic POST + PUT). */
function putBlob(host: string, repository: string, bytes: Uint8Array): Promise<string> {
  return putBlobByHand(`http://${host}`, repository, bytes);
}

interface Layer {
  mediaType: string;
  bytes: Uint8Array;
  annotations?: Record<string, string>;
  /** The size the manifest states, when it lies. */
  size?: number;
}

/** Pushes a manifest with `configType` and `layers` under `tag`; returns the reference. */
async function pushArtifact(
  host: string,
  repository: string,
  tag: string,
  configType: string,
  layers: Layer[],
  artifactType?: string,
): Promise<string> {
  const config = { mediaType: configType, digest: await putBlob(host, repository, EMPTY), size: 2 };
  const descriptors = [];
  for (const layer of layers) {
    descriptors.push({
      mediaType: layer.mediaType,
      digest: await putBlob(host, repository, layer.bytes),
      size: layer.size ?? layer.bytes.length,
      ...(layer.annotations ? { annotations: layer.annotations } : {}),
    });
  }
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    ...(artifactType ? { artifactType } : {}),
    config,
    layers: descriptors,
  };
  const put = await fetch(`http://${host}/v2/${repository}/manifests/${tag}`, {
    method: "PUT",
    body: JSON.stringify(manifest),
    headers: { "content-type": OCI_MANIFEST },
  });
  const text = await put.text();
  assertStrictEquals(put.status, 201, text);
  return `${host}/${repository}:${tag}`;
}

const oras = (name: string, bytes: Uint8Array): Layer => ({
  mediaType: "application/vnd.oci.image.layer.v1.tar",
  bytes,
  annotations: { "org.opencontainers.image.title": name },
});
const modelpack = (path: string, bytes: Uint8Array, kind = "weight"): Layer => ({
  mediaType: `application/vnd.cncf.model.${kind}.v1.raw`,
  bytes,
  annotations: { "org.cncf.model.filepath": path },
});

/** Bytes the blob GETs of the log asked for. */
function rangedBytes(proxy: FaultProxy, whole: number): number {
  return proxy.log
    .filter((r) => r.method === "GET" && /\/blobs\/sha256:/.test(r.path))
    .map((r) => {
      const range = /^bytes=(\d+)-(\d+)$/.exec(r.headers.range ?? "");
      return range === null ? whole : Number(range[2]) - Number(range[1]) + 1;
    })
    .reduce((a, b) => a + b, 0);
}

registryTest(
  "file artifacts: ORAS, ModelPack and Docker-model layers are pulled as stored, into a file or a directory",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const host = registry.host;
    const weights = randomBytes(3 * MiB + 7);
    const readme = new TextEncoder().encode("# model\n");
    const orasRef = await pushArtifact(
      host,
      "tools/oras",
      "v1",
      "application/vnd.oci.empty.v1+json",
      [oras("weights.bin", weights)],
      "application/vnd.example.weights",
    );
    const packRef = await pushArtifact(
      host,
      "tools/modelpack",
      "v1",
      "application/vnd.cncf.model.config.v1+json",
      [modelpack("model.safetensors", weights), modelpack("README.md", readme, "doc")],
      "application/vnd.cncf.model.manifest.v1+json",
    );
    const dockerRef = await pushArtifact(
      host,
      "tools/docker-model",
      "v1",
      "application/vnd.docker.ai.model.config.v0.1+json",
      [
        { mediaType: "application/vnd.docker.ai.gguf.v3", bytes: weights },
        // The license travels as a layer of its own, naming no file.
        { mediaType: "application/vnd.docker.ai.license", bytes: readme },
      ],
    );

    // inspect lists the files, one per layer.
    const listed = await runCli(["inspect", "--plain-http", packRef], { tmp: tmp.path });
    assertStrictEquals(listed.code, 0, listed.stderr);
    const weightsDigest = sha256Bytes(weights);
    const readmeDigest = sha256Bytes(readme);
    assertEquals(listed.stdout.split("\n"), [
      "files (each layer is delivered as stored, not unpacked):",
      "",
      `   size  ${"digest".padEnd(71)}  name`,
      `3145735  ${weightsDigest}  model.safetensors`,
      `      8  ${readmeDigest}  README.md`,
      "",
    ]);

    // ORAS into a file, then into a directory under its title.
    const file = `${tmp.path}/oras.bin`;
    const pulled = await runCli(["pull", "--plain-http", orasRef, file], { tmp: tmp.path });
    assertStrictEquals(pulled.code, 0, pulled.stderr);
    assertStrictEquals(pulled.stdout, `${file}\n`);
    assertEquals(await Deno.readFile(file), weights);
    assert(!await exists(`${file}.blob-partial`));
    assert(!await exists(`${file}.parted-partial`), "the parted pull left nothing behind");
    const dir = `${tmp.path}/dir`;
    await Deno.mkdir(dir);
    const intoDir = await runCli(["pull", "--plain-http", orasRef, dir], { tmp: tmp.path });
    assertStrictEquals(intoDir.code, 0, intoDir.stderr);
    assertStrictEquals(intoDir.stdout, `${dir}/weights.bin\n`);
    assertEquals(await Deno.readFile(`${dir}/weights.bin`), weights);
    const again = await runCli(["pull", "--plain-http", orasRef, dir], { tmp: tmp.path });
    assertStrictEquals(again.code, 1, "a file of that name is not replaced without --overwrite");
    assert(again.stderr.includes("--overwrite"), again.stderr);

    // ModelPack: two files, so --file chooses; without it, a usage error names them.
    const two = await runCli(["pull", "--plain-http", packRef, dir], { tmp: tmp.path });
    assertStrictEquals(two.code, 2, two.stderr);
    assertStrictEquals(
      two.stderr.split("\n")[0],
      'ocipart pull: the artifact holds 2 files: "model.safetensors", "README.md"; choose one with --file NAME',
    );
    const chosen = await runCli(
      ["pull", "--plain-http", "--file", "README.md", packRef, dir],
      { tmp: tmp.path },
    );
    assertStrictEquals(chosen.code, 0, chosen.stderr);
    assertEquals(await Deno.readFile(`${dir}/README.md`), readme);
    const model = await runCli(
      ["pull", "--plain-http", "--file", "model.safetensors", packRef, `${tmp.path}/m.st`],
      { tmp: tmp.path },
    );
    assertStrictEquals(model.code, 0, model.stderr);
    assertEquals(await Deno.readFile(`${tmp.path}/m.st`), weights);

    // Docker's model packaging: a GGUF layer without a title is model.gguf.
    const gguf = await runCli(["pull", "--plain-http", dockerRef, dir], { tmp: tmp.path });
    assertStrictEquals(gguf.code, 0, gguf.stderr);
    assertStrictEquals(gguf.stdout, `${dir}/model.gguf\n`);
    assertEquals(await Deno.readFile(`${dir}/model.gguf`), weights);

    // --file for a parted artifact: its layers name no file.
    const parted = await runCli(
      ["push", "--plain-http", `${host}/tools/parted:v1`, `${tmp.path}/m.st`],
      { tmp: tmp.path },
    );
    assertStrictEquals(parted.code, 0, parted.stderr);
    const wrongFile = await runCli(
      ["pull", "--plain-http", "--file", "m.st", `${host}/tools/parted:v1`, `${tmp.path}/p`],
      { tmp: tmp.path },
    );
    assertStrictEquals(wrongFile.code, 2, wrongFile.stderr);
    assertStrictEquals(
      wrongFile.stderr.split("\n")[0],
      "ocipart pull: --file: the layers of this artifact name no file; a parted artifact is pulled whole, without --file",
    );
    assert(!await exists(`${tmp.path}/p`));

    // An artifact with no file to take keeps its exit 4.
    const none = await pushArtifact(
      host,
      "tools/image",
      "v1",
      "application/vnd.oci.image.config.v1+json",
      [
        { mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", bytes: readme },
      ],
    );
    const four = await runCli(["pull", "--plain-http", none, `${tmp.path}/x`], { tmp: tmp.path });
    assertStrictEquals(four.code, 4, four.stderr);
    assert(!await exists(`${tmp.path}/x`));
  },
);

registryTest(
  "file artifacts: a killed pull of an ORAS layer resumes, fetching only what is missing",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const SIZE = 32 * MiB;
    const weights = randomBytes(SIZE);
    await pushArtifact(registry.host, "tools/big", "v1", "application/vnd.oci.empty.v1+json", [
      oras("big.bin", weights),
    ]);
    const dest = `${tmp.path}/big.bin`;
    const args = (rate: string[]) => [
      "pull",
      "--plain-http",
      "--progress",
      "json",
      ...rate,
      `${proxy.host}/tools/big:v1`,
      dest,
    ];
    const child = spawnCli(args(["--limit-rate", "16MiB/s"]), { tmp: tmp.path });
    await child.stdin.close();
    const out = new Response(child.stdout).text();
    let sent = false;
    for await (const line of lines(child.stderr)) {
      if (!line.startsWith("{")) continue;
      const record = JSON.parse(line) as { completedBytes: number };
      if (!sent && record.completedBytes >= SIZE / 2) {
        sent = true;
        child.kill("SIGKILL");
      }
    }
    await child.status;
    await out;
    assert(sent);
    assert(!await exists(dest));
    const kept = (await Deno.stat(`${dest}.blob-partial`)).size;
    proxy.log.length = 0;
    const rerun = await runCli(args([]), { tmp: tmp.path });
    assertStrictEquals(rerun.code, 0, rerun.stderr);
    assertEquals(await Deno.readFile(dest), weights);
    const fetched = rangedBytes(proxy, SIZE);
    assertStrictEquals(fetched, SIZE - kept);
    assert(fetched <= 0.55 * SIZE, `fetched ${fetched}`);
  },
);

registryTest(
  "file artifacts: hostile layers (a name that is not plain, a size that lies, bytes that do not match) commit nothing",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const host = registry.host;
    const bytes = randomBytes(MiB);
    const dir = `${tmp.path}/dir`;
    await Deno.mkdir(dir);

    const escape = await pushArtifact(host, "bad/name", "v1", "application/vnd.oci.empty.v1+json", [
      oras("../escape.bin", bytes),
    ]);
    const refused = await runCli(["pull", "--plain-http", escape, dir], { tmp: tmp.path });
    assertStrictEquals(refused.code, 1, refused.stderr);
    assert(refused.stderr.includes("not a plain file name"), refused.stderr);
    assert(!await exists(`${tmp.path}/escape.bin`));
    assertEquals([...Deno.readDirSync(dir)], []);
    const shown = await runCli(["inspect", "--plain-http", escape], { tmp: tmp.path });
    assertStrictEquals(shown.code, 0, shown.stderr);
    assert(
      shown.stdout.includes(
        "../escape.bin (not a plain file name: a pull into a directory refuses it)",
      ),
      shown.stdout,
    );

    const control = await pushArtifact(
      host,
      "bad/control",
      "v1",
      "application/vnd.oci.empty.v1+json",
      [
        oras("a\x1b[31m.bin", bytes),
        oras("b.bin", bytes),
      ],
    );
    const named = await runCli(["pull", "--plain-http", control, dir], { tmp: tmp.path });
    assertStrictEquals(named.code, 2, named.stderr);
    assert(!named.stderr.includes("\x1b"), "names are escaped");
    assertStrictEquals(
      named.stderr.split("\n")[0],
      'ocipart pull: the artifact holds 2 files: "a\\x1b[31m.bin", "b.bin"; choose one with --file NAME',
    );

    const lies = await pushArtifact(host, "bad/size", "v1", "application/vnd.oci.empty.v1+json", [
      { ...oras("lies.bin", bytes), size: 2 * MiB },
    ]);
    const lied = await runCli(["pull", "--plain-http", lies, dir], { tmp: tmp.path });
    assertStrictEquals(lied.code, 5, lied.stderr);
    assert(!await exists(`${dir}/lies.bin`) && !await exists(`${dir}/lies.bin.blob-partial`));

    const damaged = await pushArtifact(
      host,
      "bad/bytes",
      "v1",
      "application/vnd.oci.empty.v1+json",
      [
        oras("damaged.bin", bytes),
      ],
    );
    const stored = registry.blobPath(sha256Bytes(bytes));
    const changed = await Deno.readFile(stored);
    changed[10] ^= 1;
    await Deno.writeFile(stored, changed);
    const mismatch = await runCli(["pull", "--plain-http", damaged, dir], { tmp: tmp.path });
    assertStrictEquals(mismatch.code, 5, mismatch.stderr);
    assert(!mismatch.stderr.includes("partial"), "nothing is kept to reuse, and no report says so");
    assert(!await exists(`${dir}/damaged.bin`) && !await exists(`${dir}/damaged.bin.blob-partial`));
  },
);
