import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { randomInt } from "../fixtures/random.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { DigestMismatchError, findError, RetriesExhaustedError } from "../../src/errors/mod.ts";
import { fromFile, PartedClient, type ProgressSnapshot, toFile } from "../../src/parted/mod.ts";
import { THREADED_HASH_MIN_BYTES } from "../../src/hashing/stream_sha256.ts";
import { overwrite, rawManifest, recordingClock } from "./_helpers.ts";
import { exists } from "../fixtures/expect.ts";

const P = 512 * 1024;
const SIZE = 4 * P + 5; // 5 parts
const TRIALS = Number(Deno.env.get("PARTED_TRIALS") ?? 50);
// Files this large hash on threads (smaller ones inline): the same rules must hold.
const LARGE = THREADED_HASH_MIN_BYTES + 12_345;
const LARGE_P = 4 * 1024 * 1024; // 5 parts

interface Layer {
  digest: string;
  size: number;
}

async function setup(seed: number, size = SIZE, partSize = P) {
  const registry = await startRegistry();
  const proxy = await startFaultProxy({ target: registry.url, seed });
  const dir = await tempDir();
  const src = `${dir.path}/src.bin`;
  const fileDigest = await writePatternFile(src, size, seed);
  const clock = recordingClock();
  const client = new PartedClient({ plainHttp: true, clock });
  const pushed = await client.push(`${registry.host}/faults/base:v1`, fromFile(src), {
    partSize,
  });
  const { json } = await rawManifest(registry.url, "faults/base", "v1");
  const layers = json.layers as Layer[];
  return {
    registry,
    proxy,
    dir,
    src,
    fileDigest,
    clock,
    client,
    pushed,
    layers,
    async [Symbol.asyncDispose]() {
      await proxy.close();
      await registry.stop();
      await dir[Symbol.asyncDispose]();
    },
  };
}

const hexOf = (digest: string) => new RegExp(digest.slice("sha256:".length));

type Env = Awaited<ReturnType<typeof setup>>;

/**
 * One pull through a stream cut at a seeded offset of a seeded part, the continuation's range
 * ignored when asked; returns the last snapshot and the part's GET count, after checking bytes.
 */
async function cutTrial(env: Env, name: string, ignoreRange: boolean) {
  const { proxy, client, layers, dir } = env;
  proxy.clearFaults();
  proxy.log.length = 0;
  const k = randomInt(proxy.random, 0, layers.length - 1);
  const path = hexOf(layers[k].digest);
  proxy.fault({ method: "GET", path, cutAfter: randomInt(proxy.random, 1, layers[k].size - 1) });
  if (ignoreRange) proxy.fault({ method: "GET", path, nth: 2, ignoreRange: true });
  let last: ProgressSnapshot | undefined;
  const dest = `${dir.path}/${name}.bin`;
  await client.pull(`${proxy.host}/faults/base:v1`, toFile(dest), {
    onProgress: (s) => (last = s),
  });
  assertEquals(await sha256File(dest), env.fileDigest, `${name}: content`);
  await Deno.remove(dest);
  return { last: last!, gets: proxy.count({ method: "GET", path }) };
}

registryTest(`faults: ${TRIALS} pulls with the stream cut at seeded random offsets`, async () => {
  await using env = await setup(11);
  const { proxy, client, layers, dir } = env;
  for (let trial = 0; trial < TRIALS; trial++) {
    proxy.clearFaults();
    proxy.log.length = 0;
    const k = randomInt(proxy.random, 0, layers.length - 1);
    const cut = randomInt(proxy.random, 1, layers[k].size - 1);
    proxy.fault({ method: "GET", path: hexOf(layers[k].digest), cutAfter: cut });
    const dest = `${dir.path}/pull-${trial}.bin`;
    let last: ProgressSnapshot | undefined;
    await client.pull(`${proxy.host}/faults/base:v1`, toFile(dest), {
      workers: 2,
      onProgress: (s) => (last = s),
    });
    assertEquals(await sha256File(dest), env.fileDigest, `trial ${trial}: content`);
    const ranged = proxy.log.filter((r) => r.method === "GET" && r.headers.range !== undefined);
    assertEquals(ranged.length, 1, `trial ${trial}: one continuation`);
    assert(/^bytes=\d+-$/.test(ranged[0].headers.range), "open-ended continuation");
    assertEquals(last?.wireBytes, SIZE, `trial ${trial}: a continuation redoes no work`);
    await Deno.remove(dest);
  }
});

registryTest(`faults: ${TRIALS} pushes with the upload cut at seeded random offsets`, async () => {
  await using env = await setup(12);
  const { proxy, client, layers, src } = env;
  for (let trial = 0; trial < TRIALS; trial++) {
    proxy.clearFaults();
    const k = randomInt(proxy.random, 0, layers.length - 1);
    const cut = randomInt(proxy.random, 1, layers[k].size - 1);
    proxy.fault({
      method: "PUT",
      path: /\/blobs\/uploads\//,
      query: hexOf(layers[k].digest),
      cutRequestAfter: cut,
    });
    let last: ProgressSnapshot | undefined;
    const descriptor = await client.push(`${proxy.host}/faults/push${trial}:v1`, fromFile(src), {
      partSize: P,
      workers: 3,
      onProgress: (s) => (last = s),
    });
    assertEquals(descriptor.digest, env.pushed.digest, `trial ${trial}: same artifact`);
    assertEquals(proxy.faultsApplied, trial + 1, `trial ${trial}: the cut happened`);
    assert(last!.wireBytes > SIZE, `trial ${trial}: redone upload shows in wireBytes`);
    assertEquals(last!.completedBytes, SIZE);
  }
  // Each pushed artifact pulls back intact.
  await env.client.pull(
    `${env.registry.host}/faults/push${TRIALS - 1}:v1`,
    toFile(`${env.dir.path}/x`),
  );
  assertEquals(await sha256File(`${env.dir.path}/x`), env.fileDigest);
});

registryTest(
  "faults: a registry that ignores the continuation's range is consumed from byte zero",
  async () => {
    await using env = await setup(13);
    for (let trial = 0; trial < 10; trial++) {
      const { last, gets } = await cutTrial(env, `r${trial}`, true);
      assertEquals(gets, 2, "no extra request for the 200");
      assert(last.wireBytes > SIZE, "the re-sent prefix shows in wireBytes");
    }
  },
);

registryTest(
  "faults: 429 and 5xx with Retry-After are retried with the floor; wireBytes tells redone work",
  async () => {
    await using env = await setup(14);
    const { proxy, client, layers, dir, clock, src } = env;
    const pullSnaps: ProgressSnapshot[] = [];
    proxy.fault({
      method: "GET",
      path: hexOf(layers[1].digest),
      respond: { status: 429, headers: { "retry-after": "3" } },
    });
    proxy.fault({ method: "GET", path: /\/manifests\//, respond: { status: 503 } });
    clock.waits.length = 0;
    await client.pull(`${proxy.host}/faults/base:v1`, toFile(`${dir.path}/a.bin`), {
      onProgress: (s) => pullSnaps.push(s),
    });
    assertEquals(await sha256File(`${dir.path}/a.bin`), env.fileDigest);
    assert(clock.waits.some((w) => w >= 3000), "Retry-After is a floor");
    assertEquals(pullSnaps.at(-1)!.wireBytes, SIZE, "nothing redone");

    proxy.clearFaults();
    proxy.fault({
      method: "HEAD",
      path: hexOf(layers[2].digest),
      respond: { status: 429, headers: { "retry-after": "2" } },
    });
    proxy.fault({
      method: "PUT",
      path: /\/blobs\/uploads\//,
      query: hexOf(layers[3].digest),
      respond: { status: 502 },
    });
    proxy.fault({ method: "PUT", path: /\/manifests\//, respond: { status: 500 } });
    clock.waits.length = 0;
    const pushSnaps: ProgressSnapshot[] = [];
    const descriptor = await client.push(`${proxy.host}/faults/retry:v1`, fromFile(src), {
      partSize: P,
      onProgress: (s) => pushSnaps.push(s),
    });
    assertEquals(descriptor.digest, env.pushed.digest);
    assert(clock.waits.some((w) => w >= 2000), "Retry-After is a floor on push");
    assertEquals(pushSnaps.at(-1)!.wireBytes, SIZE + layers[3].size, "the re-sent part");

    // A budget of 4 attempts: a part that always fails ends with the attempt count.
    proxy.clearFaults();
    proxy.fault({
      method: "GET",
      path: hexOf(layers[0].digest),
      respond: { status: 503 },
      times: 4,
    });
    const err = await assertRejects(() =>
      client.pull(`${proxy.host}/faults/base:v1`, toFile(`${dir.path}/b.bin`))
    );
    const exhausted = findError(err, RetriesExhaustedError);
    assertEquals(exhausted?.attempts, 4);
    assert((err as Error).message.includes("part 0"), (err as Error).message);
    assert(await exists(`${dir.path}/b.bin.parted-partial`), "partial kept for a later resume");
  },
);

registryTest(
  "faults: a tampered blob is a digest mismatch naming the part; destination untouched",
  async () => {
    await using env = await setup(15);
    const { registry, client, layers, dir } = env;
    const dest = `${dir.path}/dest.bin`;
    await Deno.writeTextFile(dest, "previous content");
    await overwrite(registry.blobPath(layers[3].digest), 10, new Uint8Array([1, 2, 3]));
    const err = await assertRejects(() =>
      client.pull(`${registry.host}/faults/base:v1`, toFile(dest))
    );
    const mismatch = findError(err, DigestMismatchError);
    assertInstanceOf(mismatch, DigestMismatchError);
    assert((err as Error).message.includes("part 3"), (err as Error).message);
    assert(!(err as Error).message.includes("sha256:"), "no digest in the message");
    assertEquals(await Deno.readTextFile(dest), "previous content");
    assert(await exists(`${dest}.parted-partial`), "partial kept with the failing bytes");
    assertEquals(env.clock.waits.length, 0, "not retried");
  },
);

registryTest(
  "faults: a file hashed on threads survives cuts and an ignored range; tampering is a mismatch",
  async () => {
    await using env = await setup(16, LARGE, LARGE_P);
    const { client, layers, dir, registry } = env;
    for (let trial = 0; trial < 8; trial++) {
      // The last two trials also ignore the continuation's range.
      const ignore = trial >= 6;
      const { last, gets } = await cutTrial(env, `t${trial}`, ignore);
      assertEquals(gets, 2, `trial ${trial}: one more GET`);
      if (ignore) assert(last.wireBytes > LARGE, `trial ${trial}: the re-sent prefix counts`);
      else assertEquals(last.wireBytes, LARGE, `trial ${trial}: a continuation redoes no work`);
    }
    const dest = `${dir.path}/dest.bin`;
    await overwrite(registry.blobPath(layers[2].digest), 1_000_000, new Uint8Array([1, 2, 3]));
    const err = await assertRejects(() =>
      client.pull(`${registry.host}/faults/base:v1`, toFile(dest))
    );
    assert(findError(err, DigestMismatchError), String(err));
    assert((err as Error).message.includes("part 2"), (err as Error).message);
    assert(!(await exists(dest)), "no destination from a mismatch");
  },
);
