/**
 * Distribution in proxy mode (a pull-through cache) as the mirror of a token-authenticated
 * upstream Distribution: by tag and by digest, cold and warm, through the library and the CLI,
 * every byte verified against the upstream's manifest; the upstream's credentials never reach
 * the cache.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { sliceDigest } from "../parted/_helpers.ts";
import { runCli } from "../cli/_cli.ts";
import { startCountingFront, startPullThroughCache } from "../fixtures/pull_through_cache.ts";
import { registryTest } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startTokenRegistry } from "../auth/_registry_helpers.ts";
import { fromFile, PartedClient, type PullFromMirror, toFile } from "../../src/parted/mod.ts";

const KiB = 1024;
const PART = 256 * KiB;
const SIZE = 3 * PART + 12_345; // 4 parts
const REPO = "fleet/model";
const CREDENTIAL = { username: "ci", password: "s3cret" };

/** Checks `path` part by part and whole against the manifest the upstream itself serves. */
async function assertUpstreamBytes(path: string, upstreamHost: string, ref: string) {
  using direct = new PartedClient({ plainHttp: true, credential: CREDENTIAL });
  const upstream = await direct.inspect(`${upstreamHost}/${ref}`);
  assertEquals((await Deno.stat(path)).size, upstream.fileSize);
  for (const part of upstream.parts) {
    assertEquals(
      await sliceDigest(path, part.offset, part.size),
      part.digest,
      `part ${part.index}`,
    );
  }
  assertEquals(await sha256File(path), upstream.fileDigest);
}

async function setup() {
  const upstream = await startTokenRegistry({ users: { ci: "s3cret" } });
  const dir = await tempDir("ocipart-ptc-");
  const src = `${dir.path}/src.bin`;
  const fileDigest = await writePatternFile(src, SIZE, 11);
  using pusher = new PartedClient({ plainHttp: true, credential: CREDENTIAL });
  const pushed = await pusher.push(`${upstream.registry.host}/${REPO}:v1`, fromFile(src), {
    partSize: PART,
  });
  const cache = await startPullThroughCache({
    upstream: upstream.registry.url,
    username: CREDENTIAL.username,
    password: CREDENTIAL.password,
  });
  const { parts } = await pusher.inspect(`${upstream.registry.host}/${REPO}:v1`);
  // What the client says to the cache.
  const toCache = await startCountingFront(cache.registry.url);
  return {
    upstream,
    cache,
    toCache,
    dir,
    src,
    fileDigest,
    digest: pushed.digest,
    client(pullFromMirror: PullFromMirror = "digest-only") {
      return new PartedClient({
        plainHttp: true,
        credential: CREDENTIAL,
        mirrors: {
          [upstream.registry.host]: [{ location: toCache.host, plainHttp: true, pullFromMirror }],
        },
      });
    },
    /** Blob bytes the upstream served to the cache since the last reset. */
    upstreamBlobBytes: () => cache.front!.bytesServed(/\/blobs\/sha256:/),
    /**
     * Waits until the cache holds every part: it stores a blob it fetched after its answer to the
     * client has ended, so a count reset before that would count the cold fetch as a warm one.
     */
    async cacheSettled(): Promise<void> {
      const stored = async (part: { digest: string; size: number }) =>
        (await Deno.stat(cache.registry.blobPath(part.digest)).catch(() => null))?.size ===
          part.size;
      const deadline = performance.now() + 10_000;
      while (!(await Promise.all(parts.map(stored))).every(Boolean)) {
        assert(performance.now() < deadline, "the cache stored every part within 10 s");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async [Symbol.asyncDispose]() {
      await toCache.close();
      await cache.stop();
      await upstream[Symbol.asyncDispose]();
      await dir[Symbol.asyncDispose]();
    },
  };
}

registryTest(
  "pull-through cache: by digest, cold then warm; the warm pull costs the upstream no blob byte",
  async () => {
    await using env = await setup();
    const ref = `${env.upstream.registry.host}/${REPO}@${env.digest}`;
    using client = env.client();
    await client.pull(ref, toFile(`${env.dir.path}/cold.bin`));
    assertEquals(await sha256File(`${env.dir.path}/cold.bin`), env.fileDigest);
    // Cold: the cache fetched every part from the upstream (at least once).
    assert(env.upstreamBlobBytes() >= SIZE, `cold upstream bytes ${env.upstreamBlobBytes()}`);
    await env.cacheSettled();
    env.cache.front!.reset();
    using second = env.client(); // another machine of the fleet
    await second.pull(ref, toFile(`${env.dir.path}/warm.bin`));
    assertEquals(await sha256File(`${env.dir.path}/warm.bin`), env.fileDigest);
    assertEquals(env.upstreamBlobBytes(), 0, "warm: blob bytes from the upstream");
    assertEquals(
      env.cache.front!.log.filter((r) => r.path.includes("/manifests/")).length,
      0,
      "warm: the manifest by digest is the cache's own",
    );
  },
);

registryTest(
  "pull-through cache: by tag, digest-only: the tag at the upstream, every part through the cache",
  async () => {
    await using env = await setup();
    using client = env.client();
    await client.pull(`${env.upstream.registry.host}/${REPO}:v1`, toFile(`${env.dir.path}/a.bin`));
    assertEquals(await sha256File(`${env.dir.path}/a.bin`), env.fileDigest);
    const toCache = env.toCache.log;
    assertEquals(toCache.filter((r) => r.path.includes("/manifests/")).length, 0);
    assertEquals(toCache.filter((r) => r.method === "GET" && r.path.includes("/blobs/")).length, 4);
    // The upstream's token never reached the cache (the cache is anonymous here).
    assert(toCache.every((r) => r.authorization === null), "no credential sent to the cache");
  },
);

registryTest(
  "pull-through cache: by tag with pullFromMirror all: the upstream answers, so the tag is its own; the parts through the cache",
  async () => {
    await using env = await setup();
    using client = env.client("all");
    await client.pull(`${env.upstream.registry.host}/${REPO}:v1`, toFile(`${env.dir.path}/a.bin`));
    assertEquals(await sha256File(`${env.dir.path}/a.bin`), env.fileDigest);
    const tagAsked = env.toCache.log.filter((r) => r.path.endsWith("/manifests/v1"));
    assertEquals(tagAsked.length, 0, "the cache is not asked for the tag");
    const blobGets = env.toCache.log.filter((r) =>
      r.method === "GET" && r.path.includes("/blobs/")
    );
    assertEquals(blobGets.map((r) => r.status), [200, 200, 200, 200]);
  },
);

registryTest(
  "pull-through cache: a cache whose upstream credential is wrong is bypassed; the pull completes",
  async () => {
    await using upstream = await startTokenRegistry({ users: { ci: "s3cret" } });
    await using dir = await tempDir("ocipart-ptc-");
    const src = `${dir.path}/src.bin`;
    const fileDigest = await writePatternFile(src, SIZE, 12);
    using pusher = new PartedClient({ plainHttp: true, credential: CREDENTIAL });
    const pushed = await pusher.push(`${upstream.registry.host}/${REPO}:v1`, fromFile(src), {
      partSize: PART,
    });
    await using cache = await startPullThroughCache({
      upstream: upstream.registry.url,
      username: "ci",
      password: "wrong",
    });
    using client = new PartedClient({
      plainHttp: true,
      credential: CREDENTIAL,
      mirrors: { [upstream.registry.host]: [{ location: cache.registry.host, plainHttp: true }] },
    });
    await client.pull(
      `${upstream.registry.host}/${REPO}@${pushed.digest}`,
      toFile(`${dir.path}/o`),
    );
    assertEquals(await sha256File(`${dir.path}/o`), fileDigest);
  },
);

registryTest(
  "pull-through cache: by tag, warm: the tag at the upstream or the cache, no blob byte from the upstream",
  async () => {
    await using env = await setup();
    const ref = `${env.upstream.registry.host}/${REPO}:v1`;
    using cold = env.client();
    await cold.pull(ref, toFile(`${env.dir.path}/cold.bin`));
    await assertUpstreamBytes(`${env.dir.path}/cold.bin`, env.upstream.registry.host, `${REPO}:v1`);
    assert(env.upstreamBlobBytes() >= SIZE, `cold upstream bytes ${env.upstreamBlobBytes()}`);

    await env.cacheSettled();
    for (const pullFromMirror of ["digest-only", "all"] as const) {
      env.cache.front!.reset();
      env.toCache.reset();
      using warm = env.client(pullFromMirror); // another machine of the fleet
      const dest = `${env.dir.path}/warm-${pullFromMirror}.bin`;
      await warm.pull(ref, toFile(dest));
      await assertUpstreamBytes(dest, env.upstream.registry.host, `${REPO}:v1`);
      assertEquals(env.upstreamBlobBytes(), 0, `${pullFromMirror}: blob bytes from the upstream`);
      const blobGets = env.toCache.log.filter((r) =>
        r.method === "GET" && /\/blobs\//.test(r.path)
      );
      assertEquals(blobGets.map((r) => r.status), [200, 200, 200, 200], pullFromMirror);
      const tagAtCache = env.toCache.log.filter((r) => r.path.endsWith("/manifests/v1"));
      assertEquals(tagAtCache.length, 0, `${pullFromMirror}: the tag is the upstream's`);
      assert(env.toCache.log.every((r) => r.authorization === null), "no credential to the cache");
    }
  },
);

registryTest(
  "pull-through cache through the CLI: --mirror names the cache; every byte matches the upstream's manifest",
  async () => {
    await using env = await setup();
    const dockerConfig = `${env.dir.path}/docker`;
    await Deno.mkdir(dockerConfig);
    const auth = btoa(`${CREDENTIAL.username}:${CREDENTIAL.password}`);
    await Deno.writeTextFile(
      `${dockerConfig}/config.json`,
      JSON.stringify({ auths: { [env.upstream.registry.host]: { auth } } }),
    );
    const options = { tmp: env.dir.path, env: { DOCKER_CONFIG: dockerConfig } };
    const ref = `${env.upstream.registry.host}/${REPO}:v1`;
    for (const name of ["cold", "warm"]) {
      if (name === "warm") await env.cacheSettled();
      env.cache.front!.reset();
      env.toCache.reset();
      const dest = `${env.dir.path}/${name}.bin`;
      const args = ["pull", "--plain-http", "--progress", "none", "--mirror", env.toCache.host];
      const result = await runCli([...args, ref, dest], options);
      assertEquals(result.code, 0, result.stderr);
      assertEquals(result.stdout, `${dest}\n`);
      await assertUpstreamBytes(dest, env.upstream.registry.host, `${REPO}:v1`);
      const blobGets = env.toCache.log.filter((r) =>
        r.method === "GET" && /\/blobs\//.test(r.path)
      );
      assertEquals(
        blobGets.map((r) => r.status),
        [200, 200, 200, 200],
        `${name}: parts at the cache`,
      );
      assert(env.toCache.log.every((r) => r.authorization === null), "no credential to the cache");
      if (name === "warm") assertEquals(env.upstreamBlobBytes(), 0, "warm: blob bytes upstream");
    }
  },
);
