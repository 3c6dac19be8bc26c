/**
 * A mirror never receives the registry's credentials: it is asked with its own (the docker
 * configuration's entry for the mirror's host), also when it tries to send the client to the
 * registry's token realm.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { registryTest } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startTokenRegistry } from "../auth/_registry_helpers.ts";
import { runCli } from "../cli/_cli.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";

const KiB = 1024;
const PART = 128 * KiB;
const SIZE = 2 * PART + 99; // 3 parts
const REPO = "fleet/model";
const REGISTRY_BASIC = `Basic ${btoa("ci:s3cret")}`;
const MIRROR_BASIC = `Basic ${btoa("mirror-user:hunter2")}`;

/** A token registry and a fake mirror holding the same artifact. */
async function setup() {
  const upstream = await startTokenRegistry({ users: { ci: "s3cret" } });
  const mirror = await startFakeRegistry();
  const dir = await tempDir("ocipart-mirror-cred-");
  const src = `${dir.path}/src.bin`;
  const fileDigest = await writePatternFile(src, SIZE, 21);
  using pusher = new PartedClient({
    plainHttp: true,
    credential: { username: "ci", password: "s3cret" },
  });
  const pushed = await pusher.push(`${upstream.registry.host}/${REPO}:v1`, fromFile(src), {
    partSize: PART,
  });
  using plain = new PartedClient({ plainHttp: true });
  await plain.push(`${mirror.host}/${REPO}:v1`, fromFile(src), { partSize: PART });
  mirror.log.length = 0;
  upstream.tokens.requests.length = 0;
  return {
    upstream,
    mirror,
    dir,
    fileDigest,
    ref: `${upstream.registry.host}/${REPO}@${pushed.digest}`,
    async [Symbol.asyncDispose]() {
      await mirror.close();
      await upstream[Symbol.asyncDispose]();
      await dir[Symbol.asyncDispose]();
    },
  };
}

registryTest(
  "mirror credentials: --username is the registry's; the mirror gets its docker-config login only",
  async () => {
    await using env = await setup();
    // The mirror wants Basic credentials on its first request.
    env.mirror.fault({
      method: "GET",
      respond: { status: 401, headers: { "www-authenticate": 'Basic realm="mirror"' } },
    });
    const dockerDir = `${env.dir.path}/docker`;
    await Deno.mkdir(dockerDir);
    await Deno.writeTextFile(
      `${dockerDir}/config.json`,
      JSON.stringify({ auths: { [env.mirror.host]: { auth: btoa("mirror-user:hunter2") } } }),
    );
    const dest = `${env.dir.path}/out.bin`;
    const result = await runCli([
      "pull",
      "--plain-http",
      "--progress",
      "none",
      "--username",
      "ci",
      "--password-stdin",
      "--mirror",
      env.mirror.host,
      env.ref,
      dest,
    ], { tmp: env.dir.path, stdin: "s3cret\n", env: { DOCKER_CONFIG: dockerDir } });
    assertEquals(result.code, 0, result.stderr);
    assertEquals(await sha256File(dest), env.fileDigest);
    const seen = env.mirror.log.map((r) => r.headers.authorization ?? null);
    assert(seen.includes(MIRROR_BASIC), `the mirror's own login was used: ${seen}`);
    assert(
      seen.every((a) => a === null || a === MIRROR_BASIC),
      "nothing but the mirror's login reached the mirror",
    );
    assert(env.mirror.log.filter((r) => r.route === "blob").length === 3, "parts from the mirror");
  },
);

registryTest(
  "mirror credentials: a mirror pointing at the registry's token realm gets no token of the registry's user",
  async () => {
    await using env = await setup();
    // Every request: "get a token from the registry's realm".
    env.mirror.fault({
      method: "GET",
      times: Infinity,
      respond: {
        status: 401,
        headers: {
          "www-authenticate":
            `Bearer realm="${env.upstream.tokens.realm}",service="evil-mirror",scope="repository:${REPO}:pull"`,
        },
      },
    });
    using client = new PartedClient({
      plainHttp: true,
      credential: { username: "ci", password: "s3cret" },
      mirrors: { [env.upstream.registry.host]: [{ location: env.mirror.host, plainHttp: true }] },
    });
    const dest = `${env.dir.path}/out.bin`;
    await client.pull(env.ref, toFile(dest));
    assertEquals(await sha256File(dest), env.fileDigest, "the registry served the pull");
    const forMirror = env.upstream.tokens.requests.filter((r) => r.query.includes("evil-mirror"));
    assert(
      forMirror.every((r) => r.authorization === null),
      "token requests made for the mirror carry no credential",
    );
    const seen = env.mirror.log.map((r) => r.headers.authorization ?? "");
    assert(!seen.some((a) => a === REGISTRY_BASIC), "the registry's password never reached it");
    const registryTokens = env.upstream.tokens.requests.filter((r) => r.user === "ci");
    assert(registryTokens.length > 0, "the registry's own exchange happened");
  },
);

registryTest(
  "mirror credentials: a credentials source is asked for the mirror's host and answers for it",
  async () => {
    await using env = await setup();
    env.mirror.fault({
      method: "GET",
      respond: { status: 401, headers: { "www-authenticate": 'Basic realm="mirror"' } },
    });
    const asked: string[] = [];
    using client = new PartedClient({
      plainHttp: true,
      credentials: {
        get(host: string) {
          asked.push(host);
          return Promise.resolve(
            host === env.mirror.host
              ? { username: "mirror-user", password: "hunter2" }
              : { username: "ci", password: "s3cret" },
          );
        },
      },
      mirrors: { [env.upstream.registry.host]: [{ location: env.mirror.host, plainHttp: true }] },
    });
    await client.pull(env.ref, toFile(`${env.dir.path}/out.bin`));
    assert(asked.includes(env.mirror.host), `asked: ${asked}`);
    const seen = env.mirror.log.map((r) => r.headers.authorization ?? null);
    assert(seen.every((a) => a === null || a === MIRROR_BASIC), `mirror saw ${seen}`);
    assertEquals(env.mirror.log.filter((r) => r.route === "blob").length, 3);
  },
);
