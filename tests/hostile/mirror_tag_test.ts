/**
 * A mirror that answers a tag with another artifact (a stale or poisoned cache): while the
 * registry answers, the tag is the registry's, for pull, inspect, verify and copy, from the
 * `mirrors` option, `--mirror` and the registries configuration. Only a registry that cannot be
 * reached lets an `all` mirror answer for the tag, and that mirror is named.
 */
import { assert, assertEquals, assertMatch, assertRejects } from "../fixtures/assert.ts";
import { patternBytes, sha256File } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import type { MirrorOptions } from "../../src/parted/mod.ts";
import { recordingClock } from "../parted/_helpers.ts";
import { runCli } from "../cli/_cli.ts";
import {
  manifestGets,
  type MirrorEnv,
  mirrorEnv,
  P,
  refusedHost,
  REPO,
  SIZE,
} from "../mirrors/_setup.ts";

/** The mirror's `:v1` becomes another file; returns that artifact's manifest digest. */
async function poisonTag(env: MirrorEnv): Promise<string> {
  const other = `${env.dir.path}/other.bin`;
  await Deno.writeFile(other, patternBytes(SIZE, 99));
  using pusher = new PartedClient({ plainHttp: true });
  const pushed = await pusher.push(`${env.mirror.host}/${REPO}:v1`, fromFile(other), {
    partSize: P,
  });
  env.mirror.log.length = 0;
  return pushed.digest;
}

function client(prefix: string, mirrors: MirrorOptions[], extra: Record<string, unknown> = {}) {
  return new PartedClient({
    plainHttp: true,
    mirrors: { [prefix]: mirrors },
    clock: recordingClock(),
    ...extra,
  });
}

for (const mode of ["all", "tag-only"] as const) {
  Deno.test(`hostile mirror: a pull-from-mirror ${mode} mirror's other :v1 never decides the tag while the registry answers`, async () => {
    await using env = await mirrorEnv();
    await poisonTag(env);
    const told: string[] = [];
    using c = client(env.registry.host, [
      { location: env.mirror.host, plainHttp: true, pullFromMirror: mode },
    ], { onMirrorTag: (mirror: string) => told.push(mirror) });
    const ref = `${env.registry.host}/${REPO}:v1`;
    const dest = `${env.dir.path}/out.bin`;
    await c.pull(ref, toFile(dest));
    assertEquals(await sha256File(dest), env.fileDigest, "the registry's file");
    assertEquals(manifestGets(env.registry, "v1"), 1, "one manifest request at the registry");
    assertEquals(manifestGets(env.mirror, "v1"), 0, "the mirror is not asked for the tag");
    assertEquals((await c.inspect(ref)).manifestDigest, env.manifestDigest, "inspect");
    assert((await c.verify(ref, env.src)).identical, "verify");
    await using target = await startFakeRegistry();
    const copied = await c.copy(ref, `${target.host}/${REPO}:v1`);
    assertEquals(copied.descriptor.digest, env.manifestDigest, "copy");
    assertEquals(manifestGets(env.mirror, "v1"), 0);
    assertEquals(told, [], "no mirror chose a tag");
  });
}

Deno.test("hostile mirror: a registry that cannot be reached lets an all mirror answer for the tag, named", async () => {
  await using env = await mirrorEnv();
  const registry = await refusedHost();
  const told: string[][] = [];
  using c = client(registry, [{
    location: env.mirror.host,
    plainHttp: true,
    pullFromMirror: "all",
  }], {
    onMirrorTag: (mirror: string, tag: string) => told.push([mirror, tag]),
  });
  const dest = `${env.dir.path}/out.bin`;
  await c.pull(`${registry}/${REPO}:v1`, toFile(dest));
  assertEquals(await sha256File(dest), env.fileDigest);
  assertEquals(told, [[env.mirror.host, "v1"]]);
});

Deno.test("hostile mirror: a registry's refusal of the tag is final; an all mirror does not answer instead", async () => {
  await using env = await mirrorEnv();
  env.registry.store.deleteManifest(REPO, "v1");
  using c = client(env.registry.host, [
    { location: env.mirror.host, plainHttp: true, pullFromMirror: "all" },
  ]);
  await assertRejects(() => c.pull(`${env.registry.host}/${REPO}:v1`, toFile(`${env.dir.path}/o`)));
  assertEquals(manifestGets(env.mirror, "v1"), 0, "the mirror was not asked for the tag");
});

Deno.test("hostile mirror: the CLI with registries.conf (pull-from-mirror all by default) pulls the registry's :v1", async () => {
  await using env = await mirrorEnv();
  await poisonTag(env);
  const dir = `${env.dir.path}/.config/containers`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/registries.conf`,
    `[[registry]]\nlocation = "${env.registry.host}"\n\n[[registry.mirror]]\nlocation = "${env.mirror.host}"\n`,
  );
  const ref = `${env.registry.host}/${REPO}:v1`;
  const dest = `${env.dir.path}/out.bin`;
  const pulled = await runCli(["pull", "--plain-http", "--progress", "none", ref, dest], {
    tmp: env.dir.path,
  });
  assertEquals(pulled.code, 0, pulled.stderr);
  assertEquals(await sha256File(dest), env.fileDigest);
  const inspected = await runCli(["inspect", "--plain-http", ref], { tmp: env.dir.path });
  assertMatch(inspected.stdout, new RegExp(`manifest: +${env.manifestDigest}`));
  const verified = await runCli(["verify", "--plain-http", ref, env.src], { tmp: env.dir.path });
  assertEquals(verified.code, 0, verified.stderr);
  assertEquals(manifestGets(env.mirror, "v1"), 0, "the mirror never answered the tag");
  assertEquals(manifestGets(env.registry, "v1"), 3);
});

Deno.test("hostile mirror: the CLI names the mirror that chose the tag when the registry cannot be reached", async () => {
  await using env = await mirrorEnv();
  const registry = await refusedHost();
  const conf = `${env.dir.path}/registries.conf`;
  await Deno.writeTextFile(
    conf,
    `[[registry]]\nlocation = "${registry}"\n\n[[registry.mirror]]\nlocation = "${env.mirror.host}"\n`,
  );
  const dest = `${env.dir.path}/out.bin`;
  const result = await runCli([
    "pull",
    "--plain-http",
    "--progress",
    "none",
    "--registries-conf",
    conf,
    `${registry}/${REPO}:v1`,
    dest,
  ], { tmp: env.dir.path });
  assertEquals(result.code, 0, result.stderr);
  assertEquals(
    result.stderr,
    `ocipart pull: warning: the registry cannot be reached; mirror ${env.mirror.host} chose ` +
      "what the tag v1 names\n",
  );
});
