/**
 * The bandwidth cap as a user relies on it: a capped transfer takes at least size / cap (with a
 * generous margin), the cap is shared by all workers, both directions are capped, and a
 * cancelled capped transfer still ends within a second.
 */
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { BlobClient, fromFile, PartedClient, toFile } from "../../mod.ts";
import { sha256Digest } from "../../src/registry/sha256.ts";
import { RateLimiter } from "../../src/transport/rate_limit.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

/** The shortest time a capped transfer of `bytes` may take: the cap less its burst, less 20%. */
function floorMs(bytes: number, bytesPerSecond: number): number {
  return ((bytes - bytesPerSecond / 10) / bytesPerSecond) * 1000 * 0.8;
}

registryTest(
  "rate limit: a parted push and pull with 8 workers each take at least size / cap (one shared cap)",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const size = 3 * MiB;
    const digest = await writePatternFile(src, size, 31);
    const cap = 1 * MiB;
    using client = new PartedClient({ plainHttp: true, rateLimit: { bytesPerSecond: cap } });
    const ref = `${registry.host}/capped/f:v1`;

    let started = performance.now();
    // 12 parts over 8 workers: with a cap per worker this would take an eighth of the time.
    await client.push(ref, fromFile(src), { partSize: 256 * KiB, workers: 8 });
    const pushMs = performance.now() - started;
    assert(pushMs >= floorMs(size, cap), `push took ${pushMs} ms`);

    started = performance.now();
    await client.pull(ref, toFile(`${dir.path}/out.bin`), { workers: 8 });
    const pullMs = performance.now() - started;
    assert(pullMs >= floorMs(size, cap), `pull took ${pullMs} ms`);
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
  },
);

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
