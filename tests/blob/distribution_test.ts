/**
 * The blob library against the real CNCF Distribution registry.
 */
import { THREADED_HASH_MIN_BYTES } from "../../src/hashing/stream_sha256.ts";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { randomInt } from "../fixtures/random.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { findError } from "../../src/errors/find_error.ts";
import { DigestMismatchError } from "../../src/errors/sentinels.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { fileBody } from "../../src/transport/file_body.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { assertSafeError, blob, collect, digestOf, instantClock } from "./_helpers.ts";

const MiB = 1024 * 1024;

registryTest(
  "distribution: round trips of empty, 1-byte and 5 MiB+1 blobs with ranges",
  async () => {
    await using registry = await startRegistry();
    using client = new BlobClient({ plainHttp: true });
    for (const size of [0, 1, 5 * MiB + 1]) {
      const { bytes, digest } = blob(size, size + 1);
      const repo = { host: registry.host, name: `round/trip${size}` };
      assertEquals(await client.exists(repo, digest), false);
      await client.push(repo, digest, size, bytes);
      assertEquals(await client.exists(repo, digest), true);
      const got = await collect(await client.pull(repo, digest));
      assertEquals(got.length, size);
      assertEquals(got, bytes);
      if (size === 0) continue;
      const middle = Math.floor(size / 2);
      for (
        const [offset, length] of [[0, 1], [middle, Math.min(1000, size - middle)], [size - 1, 1]]
      ) {
        const range = await collect(await client.pullRange(repo, digest, offset!, length!));
        assertEquals(range, bytes.subarray(offset!, offset! + length!));
      }
    }
  },
);

registryTest("distribution: a 300 MiB blob round trip streams from a file", async () => {
  await using dir = await tempDir();
  await using registry = await startRegistry();
  using client = new BlobClient({ plainHttp: true });
  const size = 300 * MiB;
  const path = `${dir.path}/blob.bin`;
  const digest = await writePatternFile(path, size, 42);
  const repo = `${registry.host}/big/blob`;
  let wire = 0;
  let last: [number, number] = [0, 0];
  await client.push(repo, digest, size, () => fileBody(path, 0, size), {
    onWireProgress: (d) => (wire += d),
    onProgress: (done, total) => (last = [done, total]),
  });
  assertEquals(wire, size);
  assertEquals(last, [size, size]);
  assert(await client.exists(repo, digest));
  const pulled = await digestOf(await client.pull(repo, digest));
  assertEquals(pulled, { digest, size });
  const tail = await collect(await client.pullRange(repo, digest, size - 1, 1));
  assertEquals(tail.length, 1);
});

registryTest(
  "distribution: mount succeeds (201) or is declined and its session deleted",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    using client = new BlobClient({ plainHttp: true });
    const { bytes, digest } = blob(4096, 5);
    await client.push(`${proxy.host}/src/repo`, digest, bytes.length, bytes);
    assertEquals(
      await client.mount(`${proxy.host}/dst/repo`, `${proxy.host}/src/repo`, digest),
      true,
    );
    assert(await client.exists(`${proxy.host}/dst/repo`, digest));
    const other = blob(100, 6);
    assertEquals(
      await client.mount(`${proxy.host}/dst/repo`, `${proxy.host}/src/repo`, other.digest),
      false,
    );
    const deletes = proxy.log.filter((r) => r.method === "DELETE");
    assertEquals(deletes.length, 1);
    assertEquals(deletes[0]!.status, 204);
    assert(deletes[0]!.path.startsWith("/v2/dst/repo/blobs/uploads/"));
  },
);

registryTest("distribution: chunked push with 1 MiB and 64 MiB chunks", async () => {
  await using dir = await tempDir();
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  for (const [chunkSize, size] of [[MiB, 5 * MiB + 1], [64 * MiB, 130 * MiB]]) {
    using client = new BlobClient({ plainHttp: true, chunkedUpload: { chunkSize: chunkSize! } });
    const path = `${dir.path}/chunked-${chunkSize}.bin`;
    const digest = await writePatternFile(path, size!, chunkSize!);
    const progress: number[] = [];
    const repo = `${proxy.host}/chunked/n${chunkSize}`;
    await client.push(repo, digest, size!, () => fileBody(path, 0, size!), {
      onProgress: (done) => progress.push(done),
    });
    const patches = proxy.log.filter((r) =>
      r.method === "PATCH" && r.path.includes(`/n${chunkSize}/`)
    );
    const expected = Math.ceil(size! / chunkSize!);
    assertEquals(patches.length, expected);
    assertEquals(progress.length, expected);
    assertEquals(progress.at(-1), size);
    for (const [i, patch] of patches.entries()) {
      const start = i * chunkSize!;
      const end = Math.min(size!, start + chunkSize!) - 1;
      assertEquals(patch.headers["content-range"], `${start}-${end}`);
      assertEquals(patch.headers["content-length"], String(end - start + 1));
    }
    assertEquals((await digestOf(await client.pull(repo, digest))).digest, digest);
  }
});

registryTest(
  "distribution: pull resumes through cuts at random offsets (seeded trials)",
  async () => {
    const trials = Number(Deno.env.get("BLOB_RESUME_TRIALS") ?? "50");
    await using registry = await startRegistry();
    const seed = Number(Deno.env.get("BLOB_RESUME_SEED") ?? "20240601");
    await using proxy = await startFaultProxy({ target: registry.url, seed });
    using client = new BlobClient({
      plainHttp: true,
      clock: instantClock(),
      retryPolicy: { maxAttempts: 4 },
    });
    const small = blob(2 * MiB + 123, 8);
    // Every fifth trial pulls a blob large enough to be hashed on a thread.
    const large = blob(THREADED_HASH_MIN_BYTES + 321, 9);
    const repo = `${proxy.host}/resume/blob`;
    for (const { bytes, digest } of [small, large]) {
      await client.push(repo, digest, bytes.length, bytes);
    }
    for (let trial = 0; trial < trials; trial++) {
      const { bytes, digest } = trial % 5 === 4 ? large : small;
      proxy.clearFaults();
      const cuts = 1 + (trial % 3);
      const offsets: number[] = [];
      for (let i = 0; i < cuts; i++) {
        proxy.fault({
          method: "GET",
          path: /\/blobs\/sha256:/,
          nth: i + 1,
          cutAfter: (length) => {
            const cut = randomInt(proxy.random, 1, length! - 1);
            offsets.push(cut);
            return cut;
          },
        });
      }
      const before = proxy.log.length;
      const got = await collect(await client.pull(repo, digest));
      assertEquals(got, bytes, `trial ${trial}`);
      const gets = proxy.log.slice(before).filter((r) => r.method === "GET");
      assertEquals(gets.length, cuts + 1, `trial ${trial}`);
      // Each continuation starts exactly at the last verified byte.
      let delivered = 0;
      for (let i = 1; i < gets.length; i++) {
        delivered += offsets[i - 1]!;
        assertEquals(gets[i]!.headers.range, `bytes=${delivered}-`, `trial ${trial}`);
      }
    }
  },
);

registryTest(
  "distribution: 416 bytes */N at the delivered offset completes; tampered blobs fail",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    using client = new BlobClient({ plainHttp: true, clock: instantClock() });
    const { bytes, digest } = blob(100_000, 9);
    const repo = `${proxy.host}/edge/blob`;
    await client.push(repo, digest, bytes.length, bytes);
    // All bytes arrive without a length, then the connection drops; Distribution's 416 (with
    // its malformed body) tells the client it already has everything.
    proxy.fault({
      method: "GET",
      path: /\/blobs\//,
      headers: { "content-length": null },
      cutAfter: bytes.length,
    });
    assertEquals(await collect(await client.pull(repo, digest)), bytes);
    const gets = proxy.log.filter((r) => r.method === "GET");
    assertEquals(gets.at(-1)!.status, 416);
    assertEquals(gets.at(-1)!.headers.range, `bytes=${bytes.length}-`);

    const tampered = bytes.slice();
    tampered[99_999] ^= 0x80;
    await Deno.writeFile(registry.blobPath(digest), tampered);
    let error: unknown;
    try {
      await collect(await client.pull(repo, digest));
    } catch (err) {
      error = assertSafeError(err);
    }
    assert(findError(error, DigestMismatchError), String(error));
  },
);

registryTest(
  "distribution: storage redirects go through the storage transport without credentials",
  async () => {
    await using dir = await tempDir();
    // The file server serves the registry's storage root; the registry redirects blob reads to it.
    const storageDir = `${dir.path}/storage`;
    await Deno.mkdir(storageDir);
    await using files = await startFileServer({ root: storageDir, setCookie: "storage=1" });
    await using registry = await startRegistry({ storageDir, redirect: { baseUrl: files.url } });
    const base = new HttpTransport();
    try {
      const urls: string[] = [];
      const transport: Fetch = (request) => {
        urls.push(request.url);
        const headers = new Headers(request.headers);
        headers.set("authorization", "Bearer registry-secret");
        headers.set("cookie", "session=registry");
        return base.fetch(new Request(request, { headers, duplex: "half" } as RequestInit));
      };
      using client = new BlobClient({
        plainHttp: true,
        transport,
        storageTransport: base.external().fetch,
        parallelPull: undefined,
      });
      const { bytes, digest } = blob(3 * MiB + 7, 10);
      const repo = `${registry.host}/redir/blob`;
      await client.push(repo, digest, bytes.length, bytes);
      assert(await client.exists(repo, digest));
      assertEquals(await collect(await client.pull(repo, digest)), bytes);
      assertEquals(
        await collect(await client.pullRange(repo, digest, 1000, 10)),
        bytes.subarray(1000, 1010),
      );
      using parallel = new BlobClient({
        plainHttp: true,
        transport,
        storageTransport: base.external().fetch,
        parallelPull: { workers: 4, chunkSize: MiB },
      });
      assertEquals(await collect(await parallel.pull(repo, digest)), bytes);
      // HEAD, GET, ranged GET, then the probe and three chunk GETs of the parallel pull.
      assertEquals(files.log.length, 3 + 4);
      for (const record of files.log) {
        for (const name of ["authorization", "proxy-authorization", "cookie", "referer"]) {
          assertEquals(record.headers[name], undefined, `${record.method}: ${name}`);
        }
      }
      assert(urls.every((u) => new URL(u).host === registry.host));
    } finally {
      base.close();
    }
  },
);

registryTest("distribution: parallel pull of a 5 MiB blob with 4 workers", async () => {
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  using client = new BlobClient({ plainHttp: true, parallelPull: { workers: 4, chunkSize: MiB } });
  const { bytes, digest } = blob(5 * MiB + 1, 11);
  const repo = `${proxy.host}/par/blob`;
  await client.push(repo, digest, bytes.length, bytes);
  assertEquals(await collect(await client.pull(repo, digest)), bytes);
  assertEquals(proxy.log.filter((r) => r.method === "GET").length, 6);
});
