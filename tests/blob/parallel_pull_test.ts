import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import type { BlobContext } from "../../src/blob/context.ts";
import { parallelPullBlob } from "../../src/blob/parallel_pull.ts";
import { ProgressReporter } from "../../src/blob/progress.ts";
import { findError } from "../../src/errors/find_error.ts";
import { ProtocolError, RetriesExhaustedError } from "../../src/errors/kinds.ts";
import { DigestMismatchError } from "../../src/errors/sentinels.ts";
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";
import { THREADED_HASH_MIN_BYTES } from "../../src/hashing/stream_sha256.ts";
import { BLOB_SPEC_POLICY } from "../../src/remote/policy.ts";
import { RemoteRepository } from "../../src/remote/repository.ts";
import type { Clock } from "../../src/transport/clock.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { assertSafeError, blob, collect, instantClock } from "./_helpers.ts";
import { startStorageServer } from "./_storage_server.ts";

const KiB = 1024;
const MiB = 1024 * KiB;
const GET = { method: "GET", path: /\/blobs\/sha256:/ };

function served(bytes: Uint8Array, digest: string, name = "pp/x") {
  return new Map([[`/v2/${name}/blobs/${digest}`, bytes]]);
}

Deno.test("parallel pull: in-order verified output from a fixed worker set after one probe", async () => {
  const { bytes, digest } = blob(1000 * KiB + 3, 1);
  await using server = await startStorageServer({ blobs: served(bytes, digest) });
  using client = new BlobClient({
    plainHttp: true,
    parallelPull: { workers: 3, chunkSize: 64 * KiB },
  });
  const seen: number[] = [];
  const got = await collect(
    await client.pull(`${new URL(server.url).host}/pp/x`, digest, {
      onProgress: (done, total) => {
        assertEquals(total, bytes.length);
        seen.push(done);
      },
    }),
  );
  assertEquals(got, bytes);
  assertEquals(seen.at(-1), bytes.length);
  for (let i = 1; i < seen.length; i++) assert(seen[i]! > seen[i - 1]!);
  const chunks = Math.ceil(bytes.length / (64 * KiB));
  assertEquals(server.log.length, chunks);
  assertEquals(server.log[0]!.headers.range, `bytes=0-${64 * KiB - 1}`);
  const starts = server.log.map((r) => Number(/bytes=(\d+)-/.exec(r.headers.range!)![1]));
  assertEquals(
    [...starts].sort((a, b) => a - b),
    Array.from({ length: chunks }, (_, i) => i * 64 * KiB),
  );
  assert(server.maxActive <= 3, `maxActive ${server.maxActive}`);
});

Deno.test("parallel pull: a registry without ranges gets a single stream", async () => {
  const { bytes, digest } = blob(300 * KiB, 2);
  await using server = await startStorageServer({ blobs: served(bytes, digest), ranges: false });
  using client = new BlobClient({
    plainHttp: true,
    parallelPull: { workers: 4, chunkSize: 16 * KiB },
  });
  assertEquals(await collect(await client.pull(`${new URL(server.url).host}/pp/x`, digest)), bytes);
  assertEquals(server.log.length, 1);
});

Deno.test("parallel pull: empty blob and digest mismatch", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({
    plainHttp: true,
    parallelPull: { workers: 2, chunkSize: 10 * KiB },
  });
  const empty = blob(0);
  registry.store.putBlob("pp/e", empty.bytes);
  assertEquals(
    await collect(await client.pull(`${registry.host}/pp/e`, empty.digest)),
    new Uint8Array(),
  );
  const { bytes, digest } = blob(100 * KiB, 3);
  registry.store.putBlob("pp/x", bytes);
  const tampered = bytes.slice();
  tampered[77 * KiB] ^= 1;
  registry.store.tamperBlob(digest, tampered);
  let error: unknown;
  try {
    await collect(await client.pull(`${registry.host}/pp/x`, digest));
  } catch (err) {
    error = assertSafeError(err);
  }
  assert(findError(error, DigestMismatchError), String(error));
});

for (
  const { label, size, chunkSize } of [
    { label: "hashed inline", size: 2000 * KiB, chunkSize: 32 * KiB },
    { label: "hashed on a thread", size: THREADED_HASH_MIN_BYTES + 3 * MiB, chunkSize: MiB },
  ]
) {
  Deno.test(`parallel pull: buffered bytes stay within workers x chunk size (${label})`, async () => {
    const workers = 3;
    const { bytes, digest } = blob(size, 4);
    await using server = await startStorageServer({ blobs: served(bytes, digest) });
    const transport = new HttpTransport();
    const hashThreads = new Sha256Threads(1);
    try {
      const repository = (origin: URL, name: string) =>
        new RemoteRepository({
          origin,
          name,
          transport: transport.fetch,
          storageTransport: transport.fetch,
          redirects: BLOB_SPEC_POLICY.redirects,
        });
      const context: BlobContext = {
        policy: BLOB_SPEC_POLICY.retry,
        plainHttp: true,
        clock: instantClock(),
        chunkSize: undefined,
        parallelPull: { workers, chunkSize },
        hashThreads,
      };
      let buffered = 0;
      let peak = 0;
      const stream = await parallelPullBlob(
        context,
        {
          repo: repository(new URL(server.url), "pp/x"),
          digest,
          size: undefined,
          signal: undefined,
          progress: new ProgressReporter(),
        },
        { workers, chunkSize },
        {
          buffered: (n) => {
            buffered = n;
            peak = Math.max(peak, n);
          },
        },
      );
      const reader = stream.getReader();
      const first = await reader.read();
      // Stop reading until the workers have nothing left they may fetch.
      let stable = 0;
      let last = -1;
      while (stable < 20) {
        await new Promise((r) => setTimeout(r, 10));
        stable = buffered === last ? stable + 1 : 0;
        last = buffered;
      }
      assert(peak <= workers * chunkSize, `peak ${peak}`);
      assert(server.log.length <= workers + 1, `requests ${server.log.length}`);
      const rest: Uint8Array[] = [first.value!];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        rest.push(value);
      }
      assertEquals(new Uint8Array(await new Blob(rest as BlobPart[]).arrayBuffer()), bytes);
      assert(peak <= workers * chunkSize, `peak ${peak}`);
      assertEquals(buffered, 0);
    } finally {
      hashThreads.close();
      transport.close();
    }
  });
}

Deno.test("parallel pull: closing the stream cancels probe, queued work, bodies and backoff", async () => {
  const { bytes, digest } = blob(1000 * KiB, 5);
  // A clock whose backoff never ends unless aborted: cancel must cut it short.
  const waiting: Clock = {
    now: () => 0,
    random: () => 0.5,
    sleep: (_ms, signal) =>
      new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason))),
  };
  await using registry = await startFakeRegistry();
  registry.store.putBlob("pp/x", bytes);
  registry.fault({ ...GET, nth: 2, respond: { status: 503 } });
  registry.fault({ ...GET, nth: 3, stallAfter: 100 });
  using client = new BlobClient({
    plainHttp: true,
    clock: waiting,
    parallelPull: { workers: 3, chunkSize: 64 * KiB },
  });
  const stream = await client.pull(`${registry.host}/pp/x`, digest);
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel();
  const after = registry.log.length;
  await new Promise((r) => setTimeout(r, 100));
  assertEquals(registry.log.length, after, "requests after cancel returned");

  // A progress callback may close the reader itself.
  registry.clearFaults();
  let closing: Promise<void> | undefined;
  const stream2 = await client.pull(`${registry.host}/pp/x`, digest, {
    onProgress: () => {
      closing ??= reader2.cancel();
    },
  });
  const reader2 = stream2.getReader();
  await reader2.read();
  await closing;
});

Deno.test("parallel pull: MaxAttempts bounds the whole pull including chunk retries", async () => {
  const { bytes, digest } = blob(512 * KiB, 6);
  for (const workers of [1, 4]) {
    await using registry = await startFakeRegistry();
    registry.store.putBlob("pp/x", bytes);
    // The probe succeeds; every chunk request after it fails.
    registry.fault({ ...GET, nth: 2, times: Infinity, respond: { status: 503 } });
    using client = new BlobClient({
      plainHttp: true,
      clock: instantClock(),
      retryPolicy: { maxAttempts: 3 },
      parallelPull: { workers, chunkSize: 64 * KiB },
    });
    let error: unknown;
    try {
      await collect(await client.pull(`${registry.host}/pp/x`, digest));
    } catch (err) {
      error = assertSafeError(err);
    }
    assert(findError(error, RetriesExhaustedError), String(error));
    const ranges = registry.log.filter((r) => r.method === "GET").map((r) => r.headers.range);
    const retries = ranges.length - new Set(ranges).size;
    // Concurrent failures share one budget: never more than maxAttempts - 1 retries in all.
    if (workers === 1) assertEquals(retries, 2, ranges.join(" "));
    else assert(retries <= 2, ranges.join(" "));
  }
});

Deno.test("parallel pull: a cut chunk is resumed by its worker", async () => {
  const { bytes, digest } = blob(700 * KiB, 7);
  await using registry = await startFakeRegistry();
  registry.store.putBlob("pp/x", bytes);
  registry.fault({ ...GET, nth: 3, cutAfter: 10 * KiB });
  using client = new BlobClient({
    plainHttp: true,
    clock: instantClock(),
    parallelPull: { workers: 4, chunkSize: 100 * KiB },
  });
  assertEquals(await collect(await client.pull(`${registry.host}/pp/x`, digest)), bytes);
  assertEquals(registry.count(GET), 8);
});

/** Runs `_stated_total_pull.ts` with a small heap; its output and exit code. */
async function pullInOwnProcess(host: string, digest: string, chunkSize: number) {
  const script = new URL("./_stated_total_pull.ts", import.meta.url);
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--v8-flags=--max-old-space-size=128", script.pathname]
      .concat([host, "pp/huge", digest, String(chunkSize)]),
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  return { code: output.code, stdout: new TextDecoder().decode(output.stdout) };
}

Deno.test("parallel pull: a stated total of 2^53-1 with 64 MiB chunks is a clear error, not a crash", async () => {
  await using registry = await startFakeRegistry();
  const { bytes, digest } = blob(200 * KiB, 9);
  registry.store.putBlob("pp/huge", bytes);
  // The probe's answer is consistent in itself: 64 KiB of the blob, and a total near 8 PiB.
  registry.fault({
    ...GET,
    respond: {
      status: 206,
      headers: { "content-range": "bytes 0-65535/9007199254740991" },
      body: bytes.slice(0, 64 * KiB),
    },
  });
  const { code, stdout } = await pullInOwnProcess(registry.host, digest, 64 * MiB);
  assertEquals(code, 0, `the pull's process ended with ${code}: ${stdout}`);
  const result = JSON.parse(stdout);
  // An error the caller catches: whichever answer a worker meets first, the chunk past the
  // blob's real end refused (416) or the rest of the first chunk stating the real total.
  assert(["HttpStatusError", "ProtocolError"].includes(result.name), stdout);
  assert(registry.count(GET) <= 5, `requests ${registry.count(GET)}`);
});

Deno.test("parallel pull: a total beyond 2^53-1 is refused at the probe, before any chunk", async () => {
  await using registry = await startFakeRegistry();
  const { bytes, digest } = blob(200 * KiB, 10);
  registry.store.putBlob("pp/huge", bytes);
  for (const total of ["9007199254740992", "99999999999999999"]) {
    registry.clearFaults();
    registry.fault({
      ...GET,
      respond: {
        status: 206,
        headers: { "content-range": `bytes 0-65535/${total}` },
        body: bytes.slice(0, 64 * KiB),
      },
    });
    const before = registry.count(GET);
    using client = new BlobClient({
      plainHttp: true,
      parallelPull: { workers: 4, chunkSize: 64 * MiB },
    });
    let error: unknown;
    try {
      await collect(await client.pull(`${registry.host}/pp/huge`, digest));
    } catch (err) {
      error = assertSafeError(err);
    }
    assert(error instanceof ProtocolError, `${total}: ${error}`);
    assertEquals(registry.count(GET) - before, 1, total);
  }
});
