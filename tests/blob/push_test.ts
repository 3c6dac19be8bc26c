import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { findError } from "../../src/errors/find_error.ts";
import {
  BodyLengthError,
  HttpStatusError,
  ProtocolError,
  RetriesExhaustedError,
} from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { NotFoundError, TooLargeError, UnauthorizedError } from "../../src/errors/sentinels.ts";
import { statusCode } from "../../src/errors/status_code.ts";
import { blob, instantClock, rejection, streamOf } from "./_helpers.ts";

const MiB = 1024 * 1024;
const PUT = { method: "PUT", path: /\/blobs\/uploads\// };
const POST = { method: "POST", path: /\/blobs\/uploads\/$/ };
const DELETE = { method: "DELETE", path: /\/blobs\/uploads\// };

Deno.test("push: monolithic PUT carries the exact Content-Length; progress after the 201", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  const { bytes, digest } = blob(MiB + 17);
  const progress: [number, number][] = [];
  let wire = 0;
  await client.push(`${registry.host}/a/b`, digest, bytes.length, bytes, {
    onProgress: (done, total) => progress.push([done, total]),
    onWireProgress: (delta) => {
      assert(delta > 0);
      wire += delta;
    },
  });
  const put = registry.log.find((r) => r.method === "PUT")!;
  assertEquals(put.headers["content-length"], String(bytes.length));
  assertEquals(put.headers["content-type"], "application/octet-stream");
  assertEquals(put.headers["transfer-encoding"], undefined);
  assertEquals(put.bodyBytes, bytes.length);
  assert(
    put.query.includes(`digest=${encodeURIComponent(digest)}`) ||
      put.query.includes(`digest=${digest}`),
  );
  assertEquals(progress, [[bytes.length, bytes.length]]);
  assertEquals(wire, bytes.length);
  assertEquals(registry.count({ method: "PATCH" }), 0);
  assert(registry.store.hasBlob("a/b", digest));
  registry.expectNoUnexpected();
});

Deno.test("push: every body shape round-trips, including the empty blob", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  for (const size of [0, 1, 300_000]) {
    const { bytes, digest } = blob(size, size + 3);
    const shapes = [
      bytes,
      new Blob([bytes]),
      () => streamOf(bytes, 7000),
      streamOf(bytes, 65536),
    ];
    for (const [i, body] of shapes.entries()) {
      const repo = `${registry.host}/shape/n${i}`;
      await client.push(repo, digest, size, body);
      assert(await client.exists(repo, digest), `shape ${i} size ${size}`);
    }
  }
  registry.expectNoUnexpected();
});

Deno.test("push: short and trailing input are rejected before commit and the session is deleted", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  const { bytes, digest } = blob(700_000);
  const cases: [string, () => unknown, number][] = [
    ["short stream", () => streamOf(bytes.subarray(0, bytes.length - 1)), bytes.length],
    ["trailing stream", () => streamOf(bytes), bytes.length - 1],
    ["short factory", () => () => streamOf(bytes.subarray(0, 10)), bytes.length],
    [
      "trailing factory (one extra byte)",
      () => () => streamOf(new Uint8Array([...bytes, 1])),
      bytes.length,
    ],
    ["trailing empty", () => streamOf(new Uint8Array([1])), 0],
    ["short bytes", () => bytes.subarray(1), bytes.length],
    ["trailing blob", () => new Blob([bytes, new Uint8Array(1)]), bytes.length],
  ];
  for (const [i, [name, make, size]] of cases.entries()) {
    const err = await rejection(
      client.push(`${registry.host}/len/x`, digest, size, make() as Uint8Array),
    );
    assert(findError(err, BodyLengthError), `${name}: ${err}`);
    assertEquals(retryable(err).retryable, false, name);
    // Never committed, never retried (a retry would open another session).
    assert(!registry.store.hasBlob("len/x", digest), name);
    // A Uint8Array or Blob of the wrong size is refused before any request.
    const streamed = cases.slice(0, i + 1).filter(([n]) => !/(bytes|blob)$/.test(n)).length;
    assertEquals(registry.count(POST), streamed, name);
    assertEquals(registry.count(POST), registry.count(DELETE), `${name}: session not deleted`);
  }
  assertEquals(registry.store.openUploads, 0);
});

Deno.test("push: a failed attempt restarts from byte zero for re-readable bodies", async () => {
  for (const shape of ["bytes", "blob", "factory"] as const) {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, clock: instantClock() });
    const { bytes, digest } = blob(400_000, 9);
    registry.fault({ ...PUT, respond: { status: 503 } });
    let wire = 0;
    let factoryCalls = 0;
    const body = shape === "bytes" ? bytes : shape === "blob" ? new Blob([bytes]) : () => {
      factoryCalls++;
      return streamOf(bytes);
    };
    await client.push(`${registry.host}/retry/x`, digest, bytes.length, body, {
      onWireProgress: (d) => (wire += d),
    });
    assertEquals(registry.count(POST), 2, shape);
    assertEquals(registry.count(PUT), 2, shape);
    assertEquals(registry.count(DELETE), 1, `${shape}: abandoned session not deleted`);
    const puts = registry.log.filter((r) => r.method === "PUT");
    assertEquals(puts.map((r) => r.bodyBytes), [bytes.length, bytes.length]);
    assert(puts[0]!.path !== puts[1]!.path, "a new session was not opened");
    // Wire progress counts the redone bytes.
    assertEquals(wire, 2 * bytes.length, shape);
    if (shape === "factory") assertEquals(factoryCalls, 2);
    assert(registry.store.hasBlob("retry/x", digest));
  }
});

Deno.test("push: a one-shot stream fails after the first attempt", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { bytes, digest } = blob(200_000, 4);
  registry.fault({ ...PUT, respond: { status: 503 } });
  const err = await rejection(
    client.push(`${registry.host}/once/x`, digest, bytes.length, streamOf(bytes)),
  );
  assertEquals(statusCode(err), 503);
  assertEquals(retryable(err).retryable, true);
  assertEquals(registry.count(PUT), 1);
  assertEquals(registry.count(DELETE), 1);
});

Deno.test("push: the stream handed in is released, not cancelled, and readable afterwards", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  const { bytes, digest } = blob(10, 4);
  const stream = streamOf(new Uint8Array([...bytes, 7, 7]), 10);
  await rejection(client.push(`${registry.host}/once/y`, digest, bytes.length, stream));
  assertEquals(stream.locked, false);
});

Deno.test("push: retry classification and attempt budget (count requests)", async () => {
  const { bytes, digest } = blob(1000, 5);
  // Default policy: 4 attempts, full jitter from 250 ms, Retry-After as a floor.
  {
    await using registry = await startFakeRegistry();
    const clock = instantClock();
    using client = new BlobClient({ plainHttp: true, clock });
    registry.fault({
      ...POST,
      times: Infinity,
      respond: { status: 429, headers: { "retry-after": "2" } },
    });
    const err = await rejection(client.push(`${registry.host}/r/x`, digest, bytes.length, bytes));
    assert(findError(err, RetriesExhaustedError));
    assertEquals(registry.count(POST), 4);
    assertEquals(retryable(err), { retryable: true, retryAfterMs: 2000 });
    assertEquals(statusCode(err), 429);
    assertEquals(clock.delays.length, 3);
    assert(clock.delays.every((d) => d >= 2000 && d <= 30_000), String(clock.delays));
  }
  // An empty policy means exactly one attempt.
  {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, retryPolicy: {}, clock: instantClock() });
    registry.fault({ ...POST, times: Infinity, respond: { status: 500 } });
    const err = await rejection(client.push(`${registry.host}/r/x`, digest, bytes.length, bytes));
    assertEquals(registry.count(POST), 1);
    assertEquals(statusCode(err), 500);
  }
  // 5xx then success; other 4xx terminal; registry statuses map to the sentinels.
  {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, clock: instantClock() });
    registry.fault({ ...POST, times: 2, respond: { status: 502 } });
    await client.push(`${registry.host}/r/ok`, digest, bytes.length, bytes);
    assertEquals(registry.count(POST), 3);
  }
  const terminal: [number, (err: unknown) => boolean][] = [
    [400, (err) => findError(err, HttpStatusError)?.status === 400],
    [401, (err) => findError(err, UnauthorizedError) !== undefined],
    [403, (err) => findError(err, UnauthorizedError) !== undefined],
    [404, (err) => findError(err, NotFoundError) !== undefined],
    [413, (err) => findError(err, TooLargeError) !== undefined],
  ];
  for (const [status, check] of terminal) {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, clock: instantClock() });
    registry.fault({
      ...PUT,
      times: Infinity,
      respond: {
        status,
        body: `{"errors":[{"code":"BLOB_UPLOAD_INVALID","message":"secret detail"}]}`,
      },
    });
    const err = await rejection(
      client.push(`${registry.host}/r/x`, digest, bytes.length, bytes),
      "secret detail",
    );
    assert(check(err), `${status}: ${err}`);
    assertEquals(statusCode(err), status);
    assertEquals(retryable(err).retryable, false);
    assertEquals(registry.count(PUT), 1, `${status} was retried`);
    assertEquals(registry.count(DELETE), 1);
  }
});

Deno.test("push: an unexpected 2xx is an error", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { bytes, digest } = blob(10, 6);
  registry.fault({ ...PUT, status: 200 });
  const err = await rejection(client.push(`${registry.host}/u/x`, digest, bytes.length, bytes));
  assert(findError(err, ProtocolError), String(err));
  registry.clearFaults();
  registry.fault({ ...POST, status: 201 });
  const err2 = await rejection(client.push(`${registry.host}/u/x`, digest, bytes.length, bytes));
  assert(findError(err2, ProtocolError), String(err2));
});

Deno.test("push: cleanup failure never replaces the original error", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, retryPolicy: {} });
  const { bytes, digest } = blob(10, 7);
  registry.fault({ ...PUT, respond: { status: 400 } });
  registry.fault({ ...DELETE, respond: { status: 500 } });
  const err = await rejection(client.push(`${registry.host}/c/x`, digest, bytes.length, bytes));
  assertEquals(statusCode(err), 400);
  assertEquals(registry.count(DELETE), 1);
});

Deno.test("push: a hanging cleanup DELETE is abandoned after at most 5 s", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, retryPolicy: {} });
  const { bytes, digest } = blob(10, 8);
  registry.fault({ ...PUT, respond: { status: 400 } });
  registry.fault({ ...DELETE, hang: true });
  const err = await rejection(client.push(`${registry.host}/c/y`, digest, bytes.length, bytes));
  assertEquals(statusCode(err), 400);
  assertEquals(registry.count(DELETE), 1);
});

Deno.test("push: abort stops the push with the caller's reason and skips cleanup", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  const { bytes, digest } = blob(4 * MiB, 8);
  const controller = new AbortController();
  const reason = new Error("stop now");
  registry.fault({ ...PUT, stallAfter: 0, hang: true });
  let calls = 0;
  let finished = false;
  const pushing = client.push(`${registry.host}/ab/x`, digest, bytes.length, bytes, {
    onWireProgress: () => {
      assert(!finished, "wire progress after push returned");
      calls++;
      if (calls === 2) controller.abort(reason);
    },
    signal: controller.signal,
  });
  const err = await rejection(pushing);
  finished = true;
  assert(err === reason, String(err));
  assertEquals(registry.count(DELETE), 0);
  await new Promise((r) => setTimeout(r, 50));
});

Deno.test("push: chunked upload sends Content-Range on every PATCH and advances per acknowledgement", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, chunkedUpload: { chunkSize: MiB } });
  const { bytes, digest } = blob(3 * MiB + 5, 10);
  const progress: number[] = [];
  let wire = 0;
  await client.push(`${registry.host}/ch/x`, digest, bytes.length, () => streamOf(bytes, 100_000), {
    onProgress: (done, total) => {
      assertEquals(total, bytes.length);
      progress.push(done);
    },
    onWireProgress: (d) => (wire += d),
  });
  const patches = registry.log.filter((r) => r.method === "PATCH");
  assertEquals(patches.map((r) => r.headers["content-range"]), [
    `0-${MiB - 1}`,
    `${MiB}-${2 * MiB - 1}`,
    `${2 * MiB}-${3 * MiB - 1}`,
    `${3 * MiB}-${3 * MiB + 4}`,
  ]);
  assertEquals(patches.map((r) => Number(r.headers["content-length"])), [MiB, MiB, MiB, 5]);
  assertEquals(progress, [MiB, 2 * MiB, 3 * MiB, 3 * MiB + 5]);
  assertEquals(wire, bytes.length);
  const put = registry.log.find((r) => r.method === "PUT")!;
  assertEquals(put.bodyBytes, 0);
  assert(registry.store.hasBlob("ch/x", digest));
  registry.expectNoUnexpected();
});

Deno.test("push: chunked upload honours OCI-Chunk-Min-Length", async () => {
  await using registry = await startFakeRegistry({ ociChunkMinLength: 2 * MiB });
  using client = new BlobClient({ plainHttp: true, chunkedUpload: { chunkSize: MiB } });
  const { bytes, digest } = blob(5 * MiB, 11);
  await client.push(`${registry.host}/min/x`, digest, bytes.length, bytes);
  const patches = registry.log.filter((r) => r.method === "PATCH");
  assertEquals(patches.map((r) => r.bodyBytes), [2 * MiB, 2 * MiB, MiB]);
  registry.expectNoUnexpected();
});

Deno.test("push: a PATCH acknowledgement that does not advance by the chunk fails the upload", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({
    plainHttp: true,
    retryPolicy: {},
    chunkedUpload: { chunkSize: MiB },
  });
  const { bytes, digest } = blob(2 * MiB, 12);
  registry.fault({ method: "PATCH", nth: 2, headers: { range: `0-${MiB - 2}` } });
  const progress: number[] = [];
  const err = await rejection(client.push(`${registry.host}/ack/x`, digest, bytes.length, bytes, {
    onProgress: (done) => progress.push(done),
  }));
  assert(findError(err, ProtocolError), String(err));
  assertEquals(progress, [MiB]);
  assertEquals(registry.count({ method: "PUT" }), 0);
  assertEquals(registry.count(DELETE), 1);
});
