/**
 * Mirrors that misbehave mid-transfer: a body that stalls or breaks off (the part continues
 * from the registry), and a redirect from the mirror to the registry's origin (followed
 * without any credential).
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File } from "../fixtures/files.ts";
import { PartedClient, toFile } from "../../src/parted/mod.ts";
import { recordingClock } from "../parted/_helpers.ts";
import { blobGets, type MirrorEnv, mirrorEnv, P, REPO } from "../mirrors/_setup.ts";

function client(env: MirrorEnv, extra: Record<string, unknown> = {}) {
  return new PartedClient({
    plainHttp: true,
    mirrors: { [env.registry.host]: [{ location: env.mirror.host, plainHttp: true }] },
    clock: recordingClock(),
    ...extra,
  });
}

const ref = (env: MirrorEnv) => `${env.registry.host}/${REPO}@${env.manifestDigest}`;

Deno.test("hostile mirror: a part that stalls mid-body continues from the registry", async () => {
  await using env = await mirrorEnv();
  const digest = env.parts[1];
  env.mirror.fault({
    method: "GET",
    path: new RegExp(digest.slice(7)),
    times: Infinity,
    stallAfter: 1000,
  });
  using c = client(env, { stallTimeoutMs: 300 });
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(ref(env), toFile(dest));
  assertEquals(await sha256File(dest), env.fileDigest);
  assertEquals(blobGets(env.mirror, digest), 1, "the stalled mirror is not asked again");
  const atRegistry = env.registry.log.filter((r) => r.route === "blob" && r.path.endsWith(digest));
  assertEquals(atRegistry.length, 1);
  assertEquals(atRegistry[0].headers.range, "bytes=1000-", "continued from the byte reached");
});

Deno.test("hostile mirror: a body cut short continues from the registry; the joined part verifies", async () => {
  await using env = await mirrorEnv();
  const digest = env.parts[3];
  env.mirror.fault({ method: "GET", path: new RegExp(digest.slice(7)), cutAfter: P / 2 });
  using c = client(env);
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(ref(env), toFile(dest));
  assertEquals(await sha256File(dest), env.fileDigest);
  assertEquals(blobGets(env.registry), 1);
  assertEquals(blobGets(env.registry, digest), 1);
});

Deno.test("hostile mirror: a redirect to the registry's origin is followed with no credential", async () => {
  await using env = await mirrorEnv();
  const digest = env.parts[0];
  // The mirror wants a login first, then sends one part to the registry.
  env.mirror.fault({
    method: "GET",
    respond: { status: 401, headers: { "www-authenticate": 'Basic realm="mirror"' } },
  });
  env.mirror.fault({
    method: "GET",
    path: new RegExp(digest.slice(7)),
    times: Infinity,
    respond: {
      status: 307,
      headers: { location: `${env.registry.url}/v2/${REPO}/blobs/${digest}` },
    },
  });
  using c = client(env, {
    credentials: {
      get: (host: string) =>
        Promise.resolve(host === env.mirror.host ? { username: "m", password: "hunter2" } : {}),
    },
  });
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(ref(env), toFile(dest));
  assertEquals(await sha256File(dest), env.fileDigest);
  const redirected = env.registry.log.filter((r) => r.route === "blob");
  assertEquals(redirected.length, 1);
  assertEquals(redirected[0].headers.authorization, undefined, "no credential on the hop");
  assert(
    env.mirror.log.some((r) => r.headers.authorization === `Basic ${btoa("m:hunter2")}`),
    "the mirror had its own login",
  );
});
