/**
 * The bandwidth cap as a user relies on it: a cap that binds is what the transfer achieves (with
 * a generous margin), shared by all workers, in both directions; a cap above what the link does
 * costs little; and a cancelled capped transfer still ends within a second.
 */
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { BlobClient, fromFile, PartedClient, toFile } from "../../mod.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import { RateLimiter } from "../../src/transport/layers/rate_limit.ts";
import type { Clock } from "../../src/transport/clock.ts";
import { ClientStack } from "../../src/remote/client_stack.ts";
import { DEFAULT_POLICY } from "../../src/remote/policy.ts";
import { startLoopbackServer } from "../fixtures/loopback_server.ts";
import { mirrorEnv, P, REPO } from "../mirrors/_setup.ts";
import { connect, partedSession } from "../../src/parted/connection.ts";
import { checkMirrorTable } from "../../src/remote/mirror_table.ts";
import { getBlob } from "../../src/remote/blob_reader.ts";
import { parseReference } from "../../src/registry/reference.ts";
import { openByob } from "../../src/transport/byob_body.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

/** The shortest time a capped transfer of `bytes` may take: the cap less its burst, less 20%. */
function floorMs(bytes: number, bytesPerSecond: number): number {
  return ((bytes - bytesPerSecond / 10) / bytesPerSecond) * 1000 * 0.8;
}

/** Seconds `run` takes. */
async function seconds(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return (performance.now() - started) / 1000;
}

registryTest(
  "rate limit: a cap that binds sets the pace of a parted push and pull with 8 workers; a cap above the link costs little",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();

    // Binding: 48 MiB at 16 MiB/s, 8 parts over 8 workers sharing the one cap (a cap per worker
    // would take an eighth of the time): 3 s each way.
    const small = `${dir.path}/small.bin`;
    const smallDigest = await writePatternFile(small, 48 * MiB, 31);
    const cap = 16 * MiB;
    const ideal = (48 * MiB) / cap;
    using capped = new PartedClient({ plainHttp: true, rateLimit: { bytesPerSecond: cap } });
    const slow = `${registry.host}/capped/slow:v1`;
    const pushS = await seconds(() =>
      capped.push(slow, fromFile(small), { partSize: 6 * MiB, workers: 8 })
    );
    const pullS = await seconds(() =>
      capped.pull(slow, toFile(`${dir.path}/small.out`), { workers: 8 })
    );
    assertEquals(await sha256File(`${dir.path}/small.out`), smallDigest);
    for (const [op, took] of [["push", pushS], ["pull", pullS]] as const) {
      assert(took >= ideal * 0.9 && took <= ideal * 1.5, `capped ${op}: ${took} s for ${ideal} s`);
    }
    await Deno.remove(small);

    // Not binding: 256 MiB with a cap of 1 GiB/s, above what loopback does here (a cap there
    // cost several times the transfer: each 64 KiB waited for a timer of its own), against no
    // cap at all, each three times in turn (the best of three: the machine may be busy with other
    // work, and one busy stretch once took both capped pulls of a best of two).
    const big = `${dir.path}/big.bin`;
    const bigDigest = await writePatternFile(big, 256 * MiB, 32);
    using free = new PartedClient({ plainHttp: true });
    using wide = new PartedClient({ plainHttp: true, rateLimit: { bytesPerSecond: 2 ** 30 } });
    const part = { partSize: 32 * MiB, workers: 8 };
    const best = {
      free: { push: Infinity, pull: Infinity },
      wide: { push: Infinity, pull: Infinity },
    };
    for (const [round, name] of ["free", "wide", "wide", "free", "free", "wide"].entries()) {
      const client = name === "free" ? free : wide;
      const ref = `${registry.host}/capped/${name}${round}:v1`;
      const out = `${dir.path}/${name}.out`;
      const pushed = await seconds(() => client.push(ref, fromFile(big), part));
      const pulled = await seconds(() => client.pull(ref, toFile(out), part));
      assertEquals(await sha256File(out), bigDigest);
      await Deno.remove(out);
      const figures = best[name as "free" | "wide"];
      figures.push = Math.min(figures.push, pushed);
      figures.pull = Math.min(figures.pull, pulled);
    }
    for (const op of ["push", "pull"] as const) {
      const [withCap, withoutCap] = [best.wide[op], best.free[op]];
      assert(withCap <= withoutCap * 2, `${op}: ${withCap} s capped, ${withoutCap} s uncapped`);
    }
  },
);

Deno.test("rate limit: a capped download still reads into the caller's own buffers, through every layer of the stack", async () => {
  const payload = new Uint8Array(3 * MiB).map((_, i) => (i * 7) & 0xff);
  const server = await startLoopbackServer((_req, res) => {
    res.writeHead(200, { "content-length": String(payload.length) });
    res.end(payload);
    return Promise.resolve();
  });
  const stack = new ClientStack({
    rateLimit: { bytesPerSecond: 64 * MiB },
    plainHttp: true,
    policy: DEFAULT_POLICY,
  });
  try {
    const origin = new URL(`http://${server.host}/`);
    const route = stack.route(origin, server.host);
    const response = await route.transport(new Request(`http://${server.host}/blob`));
    // The runtime's download body is a byte stream on Deno; elsewhere there is none to keep.
    if (typeof Deno === "undefined") return;
    const reader = response.body!.getReader({ mode: "byob" });
    let buffer = new ArrayBuffer(MiB);
    let received = 0;
    for (;;) {
      const { done, value } = await reader.read(new Uint8Array(buffer));
      if (done) break;
      assertEquals(value.buffer.byteLength, MiB, "the caller's buffer came back");
      assertEquals(value, payload.subarray(received, received + value.byteLength));
      received += value.byteLength;
      buffer = value.buffer as ArrayBuffer;
    }
    assertEquals(received, payload.length);
  } finally {
    stack.close();
    await server.close();
  }
});

Deno.test("rate limit: a capped part continued from a mirror still reads into the caller's own buffers (mirror route, its body watch, stall guard, cap)", async () => {
  await using env = await mirrorEnv();
  const cap = MiB;
  const mirrors = checkMirrorTable({ [env.registry.host]: [{ location: env.mirror.host }] });
  const stack = partedSession({ plainHttp: true, rateLimit: { bytesPerSecond: cap }, mirrors });
  try {
    const reference = parseReference(`${env.registry.host}/${REPO}:v1`);
    const { repo } = connect(stack, reference, true);
    // A continuation, as a part resumed from its written prefix asks for it.
    const from = 1000;
    const answer = await getBlob(repo, env.parts[0], from, P, undefined);
    assert(answer !== "complete" && answer.mirrored === true, "the mirror answered");
    assertEquals(answer.start, from);
    assertEquals(env.registry.log.length, 0, "the registry heard nothing");
    // The runtime's download body is a byte stream on Deno; elsewhere there is none to keep.
    if (typeof Deno === "undefined") return;
    const source = openByob(answer.body);
    assert(source !== undefined, "no bring-your-own-buffer read through the stack");
    const expected = (await Deno.readFile(env.src)).subarray(from, P);
    const slice = new RateLimiter({ bytesPerSecond: cap }).slice;
    let buffer = new ArrayBuffer(MiB);
    let received = 0;
    for (;;) {
      const { done, value } = await source.read(new Uint8Array(buffer));
      if (done) break;
      assertEquals(value.buffer.byteLength, MiB, "the caller's buffer came back");
      assert(value.byteLength <= slice, `a read of ${value.byteLength} passed the cap's piece`);
      assertEquals(value, expected.subarray(received, received + value.byteLength));
      received += value.byteLength;
      buffer = value.buffer as ArrayBuffer;
    }
    assertEquals(received, expected.length);
  } finally {
    stack.close();
  }
});

Deno.test("rate limit: the bucket reaches the cap however coarse the timers, shared by 8 takers", async () => {
  // Every timer fires 4 ms late at best (the runtime's clamp on chained timers).
  let now = 0;
  const coarse: Clock = {
    now: () => now,
    sleep: (ms) => {
      now += Math.max(ms, 4);
      return Promise.resolve();
    },
    random: () => 0.5,
  };
  const cap = 1 << 30;
  const limiter = new RateLimiter({ bytesPerSecond: cap }, coarse);
  const taker = async () => {
    for (let i = 0; i < 128; i++) await limiter.take(MiB);
  };
  await Promise.all(Array.from({ length: 8 }, taker));
  const ideal = ((8 * 128 * MiB) / cap) * 1000;
  assert(now >= ideal * 0.95 && now <= ideal * 1.05, `1 GiB took ${now} ms at 1 GiB/s`);
});

registryTest(
  "rate limit: the blob client's push and pull are capped too",
  async () => {
    await using registry = await startRegistry();
    const bytes = new Uint8Array(2 * MiB).map((_, i) => (i * 7) & 0xff);
    const digest = sha256Digest(bytes);
    const cap = 1 * MiB;
    using client = new BlobClient({ plainHttp: true, rateLimit: { bytesPerSecond: cap } });
    const repo = { host: registry.host, name: "capped/blob" };

    let started = performance.now();
    await client.push(repo, digest, bytes.length, bytes);
    const pushMs = performance.now() - started;
    assert(pushMs >= floorMs(bytes.length, cap), `push took ${pushMs} ms`);

    started = performance.now();
    const got = new Uint8Array(await new Response(await client.pull(repo, digest)).arrayBuffer());
    const pullMs = performance.now() - started;
    assert(pullMs >= floorMs(bytes.length, cap), `pull took ${pullMs} ms`);
    assertEquals(got, bytes);
  },
);

registryTest(
  "rate limit: cancelling a capped pull ends it within a second",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, 2 * MiB, 32);
    using fast = new PartedClient({ plainHttp: true });
    const ref = `${registry.host}/capped/c:v1`;
    await fast.push(ref, fromFile(src), { partSize: 256 * KiB });

    using slow = new PartedClient({ plainHttp: true, rateLimit: { bytesPerSecond: 64 * KiB } });
    const stop = new AbortController();
    const pulling = slow.pull(ref, toFile(`${dir.path}/out.bin`), { signal: stop.signal });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const aborted = performance.now();
    stop.abort(new Error("stopped by the test"));
    await assertRejects(() => pulling, Error, "stopped by the test");
    const tookMs = performance.now() - aborted;
    assert(tookMs < 1000, `the pull ended ${tookMs} ms after the abort`);
  },
);

Deno.test("rate limit: the bucket refuses a cap that is not a positive number", () => {
  for (const bytesPerSecond of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    let thrown: unknown;
    try {
      new RateLimiter({ bytesPerSecond });
    } catch (err) {
      thrown = err;
    }
    assert(thrown instanceof RangeError, `accepted ${bytesPerSecond}`);
  }
});
