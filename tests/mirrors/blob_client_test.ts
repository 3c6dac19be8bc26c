/**
 * `BlobClient` with mirrors: `pull` and `pullRange` read a blob from the mirror first, the
 * registry takes over when the mirror fails, a body that broke from the mirror sends the blob's
 * later reads to the registry, a `"tag-only"` mirror never serves a blob, and `exists` never asks
 * a mirror.
 */
import { assertEquals } from "../fixtures/assert.ts";
import { BlobClient, type MirrorOptions } from "../../src/blob/mod.ts";
import { recordingClock } from "../parted/_helpers.ts";
import { blobGets, type MirrorEnv, mirrorEnv, P, REPO } from "./_setup.ts";

function client(env: MirrorEnv, mirror: Partial<MirrorOptions> = {}): BlobClient {
  return new BlobClient({
    plainHttp: true,
    mirrors: { [env.registry.host]: [{ location: env.mirror.host, plainHttp: true, ...mirror }] },
    clock: recordingClock(),
  });
}

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function partBytes(env: MirrorEnv, index: number): Promise<Uint8Array> {
  const file = await Deno.readFile(env.src);
  return file.subarray(index * P, (index + 1) * P);
}

Deno.test("blob client mirrors: pull and pullRange read from the mirror, exists from the registry", async () => {
  await using env = await mirrorEnv();
  using blobs = client(env);
  const repository = `${env.registry.host}/${REPO}`;
  const digest = env.parts[0];
  assertEquals(await bytesOf(await blobs.pull(repository, digest)), await partBytes(env, 0));
  const range = await bytesOf(await blobs.pullRange(repository, digest, 100, 1000));
  assertEquals(range, (await partBytes(env, 0)).subarray(100, 1100));
  assertEquals(await blobs.exists(repository, digest), true);
  assertEquals(blobGets(env.registry), 0, "blob GETs at the registry");
  assertEquals(blobGets(env.mirror), 2);
  assertEquals(env.mirror.log.filter((r) => r.method === "HEAD").length, 0, "HEADs at the mirror");
});

Deno.test("blob client mirrors: a mirror's error sends the read to the registry", async () => {
  await using env = await mirrorEnv();
  env.mirror.fault({ method: "GET", path: /\/blobs\//, respond: { status: 503 } });
  using blobs = client(env);
  const repository = `${env.registry.host}/${REPO}`;
  const range = await bytesOf(await blobs.pullRange(repository, env.parts[1], 0, P));
  assertEquals(range, await partBytes(env, 1));
  assertEquals(blobGets(env.registry), 1);
});

Deno.test("blob client mirrors: a body that broke from the mirror sends the blob's later reads to the registry", async () => {
  await using env = await mirrorEnv();
  env.mirror.fault({ method: "GET", path: /\/blobs\//, nth: 1, cutAfter: () => 1000 });
  using blobs = client(env);
  const repository = `${env.registry.host}/${REPO}`;
  const digest = env.parts[2];
  assertEquals(
    await bytesOf(await blobs.pullRange(repository, digest, 0, P)),
    await partBytes(env, 2),
  );
  assertEquals(
    await bytesOf(await blobs.pullRange(repository, digest, 0, 10)),
    (await partBytes(env, 2)).subarray(0, 10),
  );
  assertEquals(blobGets(env.mirror), 1, "the mirror was asked once");
  assertEquals(blobGets(env.registry), 2, "the continuation and the next read");
});

Deno.test("blob client mirrors: a tag-only mirror never serves a blob", async () => {
  await using env = await mirrorEnv();
  using blobs = client(env, { pullFromMirror: "tag-only" });
  const repository = `${env.registry.host}/${REPO}`;
  assertEquals(await bytesOf(await blobs.pull(repository, env.parts[3])), await partBytes(env, 3));
  assertEquals(env.mirror.log.length, 0);
});
