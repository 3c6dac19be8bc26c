/**
 * A mirror host is reached like any registry host: by its per-registry settings (`registries`),
 * else by the client-wide ones; a mirror's own `plainHttp`/`insecure` become its host's
 * settings, and a contradiction is refused before anything is opened.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File } from "../fixtures/files.ts";
import { PartedClient, type PartedClientOptions, toFile } from "../../src/parted/mod.ts";
import { recordingClock } from "../parted/_helpers.ts";
import { blobGets, type MirrorEnv, mirrorEnv, REPO } from "./_setup.ts";

async function pullByDigest(env: MirrorEnv, options: PartedClientOptions): Promise<void> {
  using client = new PartedClient({ clock: recordingClock(), ...options });
  const dest = `${env.dir.path}/out.bin`;
  await client.pull(`${env.registry.host}/${REPO}@${env.manifestDigest}`, toFile(dest));
  assertEquals(await sha256File(dest), env.fileDigest, "pulled content");
  await Deno.remove(dest);
}

Deno.test("mirror settings: a mirror host is reached as its registries entry says", async () => {
  await using env = await mirrorEnv();
  await pullByDigest(env, {
    registries: {
      [env.registry.host]: { plainHttp: true },
      [env.mirror.host]: { plainHttp: true },
    },
    mirrors: { [env.registry.host]: [{ location: env.mirror.host }] },
  });
  assertEquals(env.registry.log.length, 0, "requests at the registry");
  assertEquals(blobGets(env.mirror), env.parts.length);
});

Deno.test("mirror settings: a mirror without settings of its own takes the client-wide ones", async () => {
  await using env = await mirrorEnv();
  await pullByDigest(env, {
    plainHttp: true,
    mirrors: { [env.registry.host]: [{ location: env.mirror.host }] },
  });
  assertEquals(env.registry.log.length, 0, "requests at the registry");
  // A registries entry of the mirror's host wins over the client-wide setting: HTTPS to a
  // plain-HTTP mirror fails, and the registry serves.
  await pullByDigest(env, {
    plainHttp: true,
    registries: { [env.mirror.host]: { plainHttp: false } },
    mirrors: { [env.registry.host]: [{ location: env.mirror.host }] },
  });
  assertEquals(blobGets(env.registry), env.parts.length, "the registry served the parts");
});

Deno.test("mirror settings: an insecure mirror that speaks plain HTTP is reached after HTTPS, whatever the client-wide scheme", async () => {
  await using env = await mirrorEnv();
  await pullByDigest(env, {
    plainHttp: true,
    mirrors: { [env.registry.host]: [{ location: env.mirror.host, insecure: true }] },
  });
  assertEquals(env.registry.log.length, 0, "requests at the registry");
  assertEquals(blobGets(env.mirror), env.parts.length);
});

Deno.test("mirror settings: a mirror's plainHttp or insecure that contradicts its host's settings is refused", () => {
  const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  const cases: [PartedClientOptions, RegExp][] = [
    [
      {
        registries: { "cache.lan": { plainHttp: false } },
        mirrors: { "ghcr.io": [{ location: "cache.lan", plainHttp: true }] },
      },
      /mirrors\["ghcr\.io"\]\[0\]: plainHttp contradicts the plainHttp setting of "cache\.lan"/,
    ],
    [
      {
        registries: { "Cache.LAN:5000": { insecureTls: false } },
        mirrors: { "ghcr.io": [{ location: "cache.lan:5000/gh", insecure: true }] },
      },
      /insecure contradicts the insecureTls setting of "cache\.lan:5000"/,
    ],
    [
      {
        registries: { "cache.lan": { caCerts: [PEM] } },
        mirrors: { "ghcr.io": [{ location: "cache.lan", plainHttp: true }] },
      },
      /plainHttp cannot go with insecureTls or caCerts/,
    ],
    [
      {
        mirrors: {
          "ghcr.io": [{ location: "cache.lan", plainHttp: true }],
          "quay.io": [{ location: "cache.lan/quay", insecure: true }],
        },
      },
      /mirrors\["quay\.io"\]\[0\]: insecure contradicts the plainHttp setting of "cache\.lan"/,
    ],
  ];
  for (const [options, message] of cases) {
    let thrown: unknown;
    try {
      new PartedClient(options).close();
    } catch (err) {
      thrown = err;
    }
    assert(thrown instanceof RangeError, `refused: ${message} (${thrown})`);
    assert(message.test(thrown.message), `${thrown.message} ~ ${message}`);
  }
  // Settings that agree, or that a mirror's field completes, are kept.
  new PartedClient({
    registries: { "cache.lan": { caCerts: [PEM] }, "plain.lan": { plainHttp: true } },
    mirrors: {
      "ghcr.io": [{ location: "cache.lan", insecure: true }, { location: "plain.lan" }],
      "quay.io": [{ location: "plain.lan/quay", plainHttp: true }],
    },
  }).close();
});
