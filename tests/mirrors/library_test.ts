/**
 * Pulls through mirrors with the library: where each request goes, fallbacks to the registry,
 * and a poisoned mirror that can never produce a corrupt file.
 */
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { sha256File } from "../fixtures/files.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { recordingClock } from "../parted/_helpers.ts";
import {
  blobGets,
  manifestGets,
  type MirrorEnv,
  mirrorEnv,
  P,
  refusedHost,
  REPO,
  SIZE,
} from "./_setup.ts";
import type { MirrorOptions } from "../../src/parted/mod.ts";
import { patternBytes } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";

function client(env: MirrorEnv, mirrors: MirrorOptions[], prefix = env.registry.host) {
  return new PartedClient({
    plainHttp: true,
    mirrors: { [prefix]: mirrors },
    clock: recordingClock(),
  });
}

async function pulledRight(env: MirrorEnv, dest: string): Promise<void> {
  assertEquals(await sha256File(dest), env.fileDigest, "pulled content");
}

Deno.test("mirrors: a pull by digest takes every byte from the mirror, none from the registry", async () => {
  await using env = await mirrorEnv();
  using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(env.registry.log.length, 0, "requests at the registry");
  assertEquals(blobGets(env.mirror), env.parts.length);
  assertEquals(manifestGets(env.mirror, env.manifestDigest), 1);
  env.mirror.expectNoUnexpected();
});

Deno.test("mirrors: digest-only resolves the tag at the registry and takes the parts from the mirror", async () => {
  await using env = await mirrorEnv();
  using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}:v1`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(manifestGets(env.registry, "v1"), 1, "tag resolved at the registry");
  assertEquals(blobGets(env.registry), 0, "blob GETs at the registry");
  assertEquals(manifestGets(env.mirror), 0, "the mirror is never asked for a manifest");
  assertEquals(blobGets(env.mirror), env.parts.length);
});

Deno.test("mirrors: pullFromMirror all still resolves the tag at the registry; the parts come from the mirror", async () => {
  await using env = await mirrorEnv();
  using c = client(env, [{ location: env.mirror.host, plainHttp: true, pullFromMirror: "all" }]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}:v1`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(manifestGets(env.registry, "v1"), 1, "one manifest request at the registry");
  assertEquals(blobGets(env.registry), 0, "blob GETs at the registry");
  assertEquals(manifestGets(env.mirror, "v1"), 0, "the mirror is not asked for the tag");
  assertEquals(blobGets(env.mirror), env.parts.length);
});

Deno.test("mirrors: a digest-only mirror that would answer the tag with another artifact is never asked for it", async () => {
  await using env = await mirrorEnv();
  // The mirror's v1 is another file entirely.
  const other = `${env.dir.path}/other.bin`;
  await Deno.writeFile(other, patternBytes(SIZE, 99));
  using pusher = new PartedClient({ plainHttp: true });
  await pusher.push(`${env.mirror.host}/${REPO}:v1`, fromFile(other), { partSize: P });
  env.mirror.log.length = 0;
  using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}:v1`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(manifestGets(env.mirror), 0, "manifest requests at the mirror");
  assertEquals(blobGets(env.mirror), env.parts.length, "the parts still come from the mirror");
});

Deno.test("mirrors: a mirror that refuses connections leaves the pull to the registry", async () => {
  await using env = await mirrorEnv();
  using c = client(env, [{ location: await refusedHost(), plainHttp: true }]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(blobGets(env.registry), env.parts.length);
});

Deno.test("mirrors: a part the mirror lacks (404) comes from the registry, the rest from the mirror", async () => {
  await using env = await mirrorEnv();
  env.mirror.store.deleteBlob(REPO, env.parts[2]);
  using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(blobGets(env.registry), 1, "blob GETs at the registry");
  assertEquals(blobGets(env.registry, env.parts[2]), 1);
  assertEquals(blobGets(env.mirror), env.parts.length);
});

for (const status of [401, 403, 500, 503]) {
  Deno.test(`mirrors: a mirror answering ${status} for a part hands that part to the registry`, async () => {
    await using env = await mirrorEnv();
    const digest = env.parts[1];
    env.mirror.fault({
      method: "GET",
      path: new RegExp(digest.slice(7)),
      times: Infinity,
      respond: { status },
    });
    using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
    const dest = `${env.dir.path}/out.bin`;
    await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
    await pulledRight(env, dest);
    assertEquals(blobGets(env.registry), 1);
    assertEquals(blobGets(env.registry, digest), 1);
  });
}

Deno.test("mirrors: a mirror's tampered part is fetched again from the registry; the file is right", async () => {
  await using env = await mirrorEnv();
  const digest = env.parts[3];
  const wrong = patternBytes(P, 1234); // same length: only the digest tells
  env.mirror.store.tamperBlob(digest, wrong);
  const clock = recordingClock();
  using c = new PartedClient({
    plainHttp: true,
    mirrors: { [env.registry.host]: [{ location: env.mirror.host, plainHttp: true }] },
    clock,
  });
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(blobGets(env.mirror, digest), 1, "the mirror is asked once");
  assertEquals(blobGets(env.registry, digest), 1, "the registry serves that part");
  assertEquals(blobGets(env.registry), 1);
  assertEquals(clock.waits.length, 1, "one attempt spent");
});

Deno.test("mirrors: a mirror's part of another length falls through to the registry in the same attempt", async () => {
  await using env = await mirrorEnv();
  const digest = env.parts[0];
  env.mirror.store.tamperBlob(digest, patternBytes(P + 10, 5));
  const clock = recordingClock();
  using c = new PartedClient({
    plainHttp: true,
    mirrors: { [env.registry.host]: [{ location: env.mirror.host, plainHttp: true }] },
    clock,
  });
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(blobGets(env.registry, digest), 1);
  assertEquals(clock.waits.length, 0, "no attempt spent");
});

Deno.test("mirrors: a mirror's manifest that does not match the digest is taken from the registry", async () => {
  await using env = await mirrorEnv();
  const stored = env.mirror.store.getManifest(REPO, env.manifestDigest)!;
  const bytes = stored.bytes.slice();
  bytes[bytes.length - 2] ^= 1;
  // Served under the right digest, with other bytes.
  env.mirror.fault({
    method: "GET",
    path: /\/manifests\//,
    times: Infinity,
    respond: {
      status: 200,
      headers: { "content-type": stored.mediaType, "docker-content-digest": env.manifestDigest },
      body: bytes,
    },
  });
  using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(manifestGets(env.registry, env.manifestDigest), 1);
  assertEquals(blobGets(env.registry), 0);
});

Deno.test("mirrors: mirrors are tried in order; a namespace location maps the repository", async () => {
  await using env = await mirrorEnv();
  // The second mirror keeps the artifact under a namespace of its own.
  using pusher = new PartedClient({ plainHttp: true });
  await pusher.push(`${env.mirror.host}/cache/${REPO}:v1`, fromFile(env.src), { partSize: P });
  env.mirror.store.deleteBlob(REPO, env.parts[0]);
  env.mirror.log.length = 0;
  using c = client(env, [
    { location: await refusedHost(), plainHttp: true },
    { location: `${env.mirror.host}/cache`, plainHttp: true },
  ]);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  await pulledRight(env, dest);
  assertEquals(env.registry.log.length, 0);
  assert(env.mirror.log.every((r) => r.repository === `cache/${REPO}`), "mapped repository");
});

Deno.test("mirrors: the longest matching prefix picks the mirrors; another repository has none", async () => {
  await using env = await mirrorEnv();
  using c = new PartedClient({
    plainHttp: true,
    mirrors: {
      [env.registry.host]: [{ location: await refusedHost(), plainHttp: true }],
      // The location stands for the prefix: `<registry>/fleet/model` is `<mirror>/fleet/model`.
      [`${env.registry.host}/fleet`]: [{ location: `${env.mirror.host}/fleet`, plainHttp: true }],
      [`${env.registry.host}/fleetx`]: [{ location: await refusedHost(), plainHttp: true }],
    },
  });
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  assertEquals(env.registry.log.length, 0);
});

Deno.test("mirrors: pushes never go to a mirror", async () => {
  await using env = await mirrorEnv();
  using c = client(env, [{ location: env.mirror.host, plainHttp: true, pullFromMirror: "all" }]);
  await c.push(`${env.registry.host}/${REPO}:v2`, fromFile(env.src), { partSize: P });
  assertEquals(env.mirror.log.length, 0, "requests at the mirror");
});

Deno.test("mirrors: inspect and verify resolve the tag at the registry; copy reads its source's parts from the mirror", async () => {
  await using env = await mirrorEnv();
  using c = client(env, [{ location: env.mirror.host, plainHttp: true, pullFromMirror: "all" }]);
  const ref = `${env.registry.host}/${REPO}:v1`;
  const description = await c.inspect(ref);
  assertEquals(description.manifestDigest, env.manifestDigest);
  const report = await c.verify(ref, env.src);
  assert(report.identical);
  await using target = await startFakeRegistry();
  const copied = await c.copy(ref, `${target.host}/${REPO}:v1`);
  assertEquals(copied.descriptor.digest, env.manifestDigest);
  assertEquals(target.log.filter((r) => r.method === "GET").length, 0, "the target is written");
  assertEquals(manifestGets(env.registry, "v1"), 3, "the tag at the registry, once per command");
  assertEquals(manifestGets(env.mirror, "v1"), 0, "the mirror is not asked for the tag");
  assertEquals(blobGets(env.registry), 0, "blob GETs at the registry");
  // Every part and the empty config blob.
  assertEquals(blobGets(env.mirror), env.parts.length + 1, "the copy streamed from the mirror");
});

Deno.test("mirrors: a mirror's tampered part in a copy is fetched again from the registry", async () => {
  await using env = await mirrorEnv();
  env.mirror.store.tamperBlob(env.parts[4], patternBytes(SIZE - 4 * P, 3));
  using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
  await using target = await startFakeRegistry();
  const copied = await c.copy(
    `${env.registry.host}/${REPO}@${env.manifestDigest}`,
    `${target.host}/${REPO}:v1`,
  );
  assertEquals(copied.copied, env.parts.length);
  assertEquals(blobGets(env.registry, env.parts[4]), 1);
  assertEquals(blobGets(env.registry), 1);
  const dest = `${env.dir.path}/out.bin`;
  using plain = new PartedClient({ plainHttp: true });
  await plain.pull(`${target.host}/${REPO}:v1`, toFile(dest));
  await pulledRight(env, dest);
});

Deno.test("mirrors: without the registry, a pull by digest still fails cleanly when the mirror lacks a part", async () => {
  await using env = await mirrorEnv();
  env.mirror.store.deleteBlob(REPO, env.parts[1]);
  env.registry.store.deleteBlob(REPO, env.parts[1]);
  using c = client(env, [{ location: env.mirror.host, plainHttp: true }]);
  const dest = `${env.dir.path}/out.bin`;
  const { findError, NotFoundError } = await import("../../src/errors/mod.ts");
  const err = await assertRejects(() =>
    c.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest))
  );
  assert(findError(err, NotFoundError) !== undefined, "the registry's 404 is the one reported");
});

Deno.test("mirrors: invalid mirror options are refused before anything is opened", () => {
  const cases: [unknown, RegExp][] = [
    [{ "ghcr.io": [{ location: "https://cache.lan" }] }, /https:\/\/cache\.lan/],
    [{ "ghcr.io": [{ location: "cache.lan", pullFromMirror: "tags" }] }, /"tags"/],
    [{ "ghcr.io": [{ location: "cache.lan", plainHttp: true, insecure: true }] }, /exclude/],
    [{ "ghcr.io": { location: "cache.lan" } }, /array/],
    [{ "gh cr.io": [] }, /"gh cr\.io"/],
    [{ "*.io:5000": [] }, /\*\.io:5000/],
    [[], /object/],
  ];
  for (const [mirrors, message] of cases) {
    let thrown: unknown;
    try {
      new PartedClient({ mirrors: mirrors as never });
    } catch (err) {
      thrown = err;
    }
    assert(thrown instanceof TypeError || thrown instanceof RangeError, `refused: ${message}`);
    assert(message.test((thrown as Error).message), `${(thrown as Error).message} ~ ${message}`);
  }
});
