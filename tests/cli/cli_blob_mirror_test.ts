/**
 * Mirrors for `ocipart blob pull` and the pull of a one-file artifact, against two Distribution
 * registries (one the registry, one its mirror), each behind a fault proxy that counts what it
 * serves: the blob's bytes come from the mirror; a mirror that lacks the blob leaves it to the
 * registry; a hostile mirror that serves other bytes under the digest never yields a wrong file
 * (the registry's bytes are fetched and written instead); `--registries-conf` works as `--mirror`.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { exists } from "../fixtures/expect.ts";
import { sha256Bytes } from "../fixtures/files.ts";
import { putBlobByHand } from "./_images.ts";
import { runCli, spawnCli } from "./_cli.ts";
import { randomBytes } from "../fixtures/random.ts";

const MiB = 1024 * 1024;
const SIZE = 3 * MiB + 7;
const REPOSITORY = "team/data";
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

/** Uploads `bytes` as a blob of the repository (monolithic POST + PUT). */
function putBlob(host: string, bytes: Uint8Array): Promise<string> {
  return putBlobByHand(`http://${host}`, REPOSITORY, bytes);
}

/** Pushes an ORAS-style artifact of one file, `name`, under `tag`. */
async function pushOrasArtifact(host: string, name: string, bytes: Uint8Array): Promise<void> {
  const config = await putBlob(host, new TextEncoder().encode("{}"));
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: "application/vnd.example.file",
    config: { mediaType: "application/vnd.oci.empty.v1+json", digest: config, size: 2 },
    layers: [{
      mediaType: "application/vnd.oci.image.layer.v1.tar",
      digest: await putBlob(host, bytes),
      size: bytes.length,
      annotations: { "org.opencontainers.image.title": name },
    }],
  };
  const put = await fetch(`http://${host}/v2/${REPOSITORY}/manifests/v1`, {
    method: "PUT",
    body: JSON.stringify(manifest),
    headers: { "content-type": OCI_MANIFEST },
  });
  const text = await put.text();
  assertStrictEquals(put.status, 201, text);
}

/** Bytes of `digest` the proxy served to blob GETs (each Range's length, or the whole blob). */
function servedBytes(proxy: FaultProxy, digest: string, whole: number): number {
  return proxy.log
    .filter((r) => r.method === "GET" && r.path.endsWith(`/blobs/${digest}`) && r.status === 206)
    .map((r) => {
      const range = /^bytes=(\d+)-(\d+)$/.exec(r.headers.range ?? "");
      return range === null ? whole : Number(range[2]) - Number(range[1]) + 1;
    })
    .reduce((a, b) => a + b, 0);
}

/** The registry and its mirror, each behind a counting proxy; the mirror spoilt on request. */
async function registryAndMirror() {
  const registry = await startRegistry();
  const mirror = await startRegistry();
  const atRegistry = await startFaultProxy({ target: registry.url });
  const atMirror = await startFaultProxy({ target: mirror.url });
  const tmp = await tempDir();
  return {
    registry,
    mirror,
    atRegistry,
    atMirror,
    tmp,
    /** A random blob of `SIZE` bytes stored in both registries: its bytes and digest. */
    async blobOnBoth(): Promise<{ bytes: Uint8Array; digest: string }> {
      const bytes = randomBytes(SIZE);
      const digest = await putBlob(registry.host, bytes);
      await putBlob(mirror.host, bytes);
      return { bytes, digest };
    },
    /** Changes one byte of the mirror's stored copy of `digest`: it serves other bytes. */
    async spoil(digest: string): Promise<void> {
      const path = mirror.blobPath(digest);
      const bytes = await Deno.readFile(path);
      bytes[MiB] ^= 0xff;
      await Deno.writeFile(path, bytes);
    },
    async [Symbol.asyncDispose]() {
      await atRegistry.close();
      await atMirror.close();
      await registry.stop();
      await mirror.stop();
      await tmp[Symbol.asyncDispose]();
    },
  };
}

function blobPull(reference: string, dest: string, ...flags: string[]): string[] {
  return [
    "blob",
    "pull",
    "--plain-http",
    "--progress",
    "none",
    "--json",
    "--workers",
    "4",
    "--chunk-size",
    "256KiB",
    ...flags,
    reference,
    dest,
  ];
}

registryTest(
  "blob pull --mirror: the blob's bytes come from the mirror; --debug names its exchanges",
  async () => {
    await using env = await registryAndMirror();
    const { bytes, digest } = await env.blobOnBoth();
    const dest = `${env.tmp.path}/out.bin`;
    const reference = `${env.atRegistry.host}/${REPOSITORY}@${digest}`;
    const run = await runCli(
      blobPull(reference, dest, "--mirror", env.atMirror.host, "--debug"),
      { tmp: env.tmp.path },
    );
    assertStrictEquals(run.code, 0, run.stderr);
    assertEquals(await Deno.readFile(dest), bytes);
    assertStrictEquals(servedBytes(env.atMirror, digest, SIZE), SIZE);
    assertStrictEquals(
      servedBytes(env.atRegistry, digest, SIZE),
      0,
      "no blob bytes at the registry",
    );
    assertStrictEquals(JSON.parse(run.stdout).bytesFetched, SIZE);
    const debug = run.stderr.split("\n").filter((line) => line.startsWith("debug: GET "));
    const reads = Math.ceil(SIZE / (256 * 1024));
    assertStrictEquals(debug.filter((l) => l.startsWith("debug: GET mirror 206 ")).length, reads);
    assertStrictEquals(debug.filter((l) => l.startsWith("debug: GET registry ")).length, 0);
  },
);

registryTest("blob pull --mirror to standard output: the bytes come from the mirror", async () => {
  await using env = await registryAndMirror();
  const { bytes, digest } = await env.blobOnBoth();
  const reference = `${env.atRegistry.host}/${REPOSITORY}@${digest}`;
  const args = blobPull(reference, "-", "--mirror", env.atMirror.host);
  const piped = spawnCli(args.filter((a) => a !== "--json"), { tmp: env.tmp.path });
  await piped.stdin.close();
  const output = await piped.output();
  assertStrictEquals(output.code, 0, new TextDecoder().decode(output.stderr));
  assertEquals(output.stdout, bytes);
  assert(servedBytes(env.atMirror, digest, SIZE) > 0, "the mirror served the chunks");
});

registryTest(
  "blob pull --mirror: a mirror without the blob leaves it to the registry",
  async () => {
    await using env = await registryAndMirror();
    const bytes = randomBytes(SIZE);
    const digest = await putBlob(env.registry.host, bytes);
    const dest = `${env.tmp.path}/out.bin`;
    const reference = `${env.atRegistry.host}/${REPOSITORY}@${digest}`;
    const run = await runCli(blobPull(reference, dest, "--mirror", env.atMirror.host), {
      tmp: env.tmp.path,
    });
    assertStrictEquals(run.code, 0, run.stderr);
    assertEquals(await Deno.readFile(dest), bytes);
    assertStrictEquals(servedBytes(env.atRegistry, digest, SIZE), SIZE);
    assert(env.atMirror.log.some((r) => r.status === 404), "the mirror was asked first");
  },
);

registryTest(
  "blob pull --mirror: a hostile mirror's other bytes are fetched again from the registry",
  async () => {
    await using env = await registryAndMirror();
    const { bytes, digest } = await env.blobOnBoth();
    await env.spoil(digest);
    const dest = `${env.tmp.path}/out.bin`;
    const reference = `${env.atRegistry.host}/${REPOSITORY}@${digest}`;
    const run = await runCli(blobPull(reference, dest, "--mirror", env.atMirror.host), {
      tmp: env.tmp.path,
    });
    assertStrictEquals(run.code, 0, run.stderr);
    assertEquals(await Deno.readFile(dest), bytes, "the registry's bytes, not the mirror's");
    assert(!await exists(`${dest}.blob-partial`));
    assertStrictEquals(servedBytes(env.atMirror, digest, SIZE), SIZE);
    assertStrictEquals(servedBytes(env.atRegistry, digest, SIZE), SIZE);
    // What the mirror sent counts too: the pull says what it cost.
    assertStrictEquals(JSON.parse(run.stdout).bytesFetched, 2 * SIZE);
  },
);

registryTest(
  "blob pull --mirror: the registry's own wrong bytes still exit 5, after the mirror's",
  async () => {
    await using env = await registryAndMirror();
    const { digest } = await env.blobOnBoth();
    await env.spoil(digest);
    const stored = env.registry.blobPath(digest);
    const changed = await Deno.readFile(stored);
    changed[2 * MiB] ^= 0xff;
    await Deno.writeFile(stored, changed);
    const dest = `${env.tmp.path}/out.bin`;
    const reference = `${env.atRegistry.host}/${REPOSITORY}@${digest}`;
    const run = await runCli(blobPull(reference, dest, "--mirror", env.atMirror.host), {
      tmp: env.tmp.path,
    });
    assertStrictEquals(run.code, 5, run.stderr);
    assert(!await exists(dest), "nothing committed");
    assert(!await exists(`${dest}.blob-partial`), "the bytes that do not match are not kept");
  },
);

registryTest(
  "pull of a one-file artifact with --registries-conf: the layer from the mirror, and a spoilt " +
    "copy there never reaches the file",
  async () => {
    await using env = await registryAndMirror();
    const bytes = randomBytes(SIZE);
    await pushOrasArtifact(env.registry.host, "model.gguf", bytes);
    await pushOrasArtifact(env.mirror.host, "model.gguf", bytes);
    const digest = sha256Bytes(bytes);
    const conf = `${env.tmp.path}/registries.conf`;
    await Deno.writeTextFile(
      conf,
      `[[registry]]\nlocation = "${env.atRegistry.host}"\ninsecure = true\n\n` +
        `[[registry.mirror]]\nlocation = "${env.atMirror.host}"\ninsecure = true\n`,
    );
    const pull = (dir: string) =>
      runCli([
        "pull",
        "--plain-http",
        "--progress",
        "none",
        "--registries-conf",
        conf,
        `${env.atRegistry.host}/${REPOSITORY}:v1`,
        dir,
      ], { tmp: env.tmp.path });

    await Deno.mkdir(`${env.tmp.path}/first`);
    const first = await pull(`${env.tmp.path}/first`);
    assertStrictEquals(first.code, 0, first.stderr);
    assertEquals(await Deno.readFile(`${env.tmp.path}/first/model.gguf`), bytes);
    assertStrictEquals(servedBytes(env.atMirror, digest, SIZE), SIZE);
    assertStrictEquals(servedBytes(env.atRegistry, digest, SIZE), 0);

    await env.spoil(digest);
    env.atMirror.log.length = 0;
    await Deno.mkdir(`${env.tmp.path}/second`);
    const second = await pull(`${env.tmp.path}/second`);
    assertStrictEquals(second.code, 0, second.stderr);
    assertEquals(await Deno.readFile(`${env.tmp.path}/second/model.gguf`), bytes);
    assertStrictEquals(servedBytes(env.atRegistry, digest, SIZE), SIZE);
  },
);
