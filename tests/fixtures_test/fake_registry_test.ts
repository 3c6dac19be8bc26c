import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { seedArtifact, seedBlob } from "../fixtures/seed.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../fixtures/assert.ts";
import { portClosed } from "./helpers.ts";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

Deno.test("fake registry: serves a push and pull and logs every request", async () => {
  const fake = await startFakeRegistry();
  try {
    const layer = patternBytes(5000, 2);
    const artifact = await seedArtifact(fake.url, "fake/demo", "v1", [layer]);
    const manifest = await fetch(`${fake.url}/v2/fake/demo/manifests/v1`, {
      headers: { accept: OCI_MANIFEST },
    });
    assertEquals(new Uint8Array(await manifest.arrayBuffer()), artifact.manifest);
    assertEquals(manifest.headers.get("docker-content-digest"), artifact.manifestDigest);
    const blob = await fetch(`${fake.url}/v2/fake/demo/blobs/${artifact.layerDigests[0]}`);
    assertEquals(new Uint8Array(await blob.arrayBuffer()), layer);

    assertEquals(fake.count({ method: "POST", route: "upload" }), 2);
    assertEquals(fake.count({ method: "PUT", path: /\/blobs\/uploads\// }), 2);
    const put = fake.log.find((r) => r.method === "PUT" && r.route === "manifest")!;
    assertEquals(put.body, artifact.manifest);
    assertEquals(put.headers["content-type"], OCI_MANIFEST);
    assertEquals(put.status, 201);
    const layerPut = fake.log.find((r) =>
      decodeURIComponent(r.query).includes(artifact.layerDigests[0]!)
    )!;
    assertEquals(layerPut.bodyBytes, 5000);
    assertEquals(fake.store.getBlob("fake/demo", artifact.layerDigests[0]!), layer);
    fake.expectNoUnexpected();
  } finally {
    await fake.close();
  }
  assert(await portClosed(fake.port), "fake registry still listening after close");
});

Deno.test("fake registry: flags unknown endpoints, chunked bodies, stale sessions, bad Accept", async () => {
  await using fake = await startFakeRegistry();
  const unknown = await fetch(`${fake.url}/v2/fake/x/unknown`);
  await unknown.body?.cancel();
  assertEquals(unknown.status, 500);

  const started = await fetch(`${fake.url}/v2/fake/x/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  const first = started.headers.get("location")!;
  // A streamed body goes out chunked: out of protocol for an upload.
  const chunked = await fetch(first, {
    method: "PATCH",
    body: ReadableStream.from([new Uint8Array([1, 2, 3])]),
    headers: { "content-type": "application/octet-stream" },
  });
  await chunked.body?.cancel();
  assertEquals(chunked.status, 202);
  // Retrying on the old Location is a step on a stale session.
  const stale = await fetch(first, { method: "PATCH", body: new Uint8Array([4]) });
  await stale.body?.cancel();
  assertEquals(stale.status, 404);

  await seedArtifact(fake.url, "fake/x", "v1", []);
  const noAccept = await fetch(`${fake.url}/v2/fake/x/manifests/v1`);
  await noAccept.body?.cancel();
  assertEquals(noAccept.status, 404);

  const reasons = fake.unexpected().map((r) => r.unexpected);
  assertEquals(reasons, [
    "no such endpoint",
    "body sent without Content-Length",
    "step on a stale or unknown upload session",
    "manifest Accept misses the stored media type",
  ]);
  const error = assertThrows(() => fake.expectNoUnexpected());
  assertStringIncludes(error.message, "4 unexpected request(s)");
  assertStringIncludes(error.message, "GET /v2/fake/x/unknown → 500: no such endpoint");
});

Deno.test("fake registry: scripted responses match by method, path and nth occurrence", async () => {
  await using fake = await startFakeRegistry();
  fake.fault({
    method: "HEAD",
    path: /\/blobs\//,
    nth: 2,
    times: 2,
    respond: { status: 429, headers: { "Retry-After": "3" } },
  });
  fake.fault({ method: "GET", path: /^\/v2\/$/, respond: { status: 503 } });
  fake.fault({
    method: "GET",
    path: /^\/v2\/$/,
    nth: 2,
    respond: { status: 401, headers: { "www-authenticate": 'Bearer realm="http://x/t"' } },
  });
  const digest = await seedBlob(fake.url, "fake/f", new Uint8Array([1, 2, 3]));
  const statuses: (number | string | null)[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await fetch(`${fake.url}/v2/fake/f/blobs/${digest}`, { method: "HEAD" });
    statuses.push(r.status, r.headers.get("retry-after"));
  }
  assertEquals(statuses, [200, null, 429, "3", 429, "3", 200, null]);
  const base: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await fetch(`${fake.url}/v2/`);
    await r.body?.cancel();
    base.push(r.status);
  }
  assertEquals(base, [503, 401, 200]);
  assertEquals(fake.log.filter((r) => r.fault !== undefined).length, 4);
});

Deno.test("fake registry: response faults cut, ignore Range, falsify Content-Range, rewrite Location", async () => {
  await using fake = await startFakeRegistry();
  const bytes = patternBytes(300_000, 4);
  const digest = await seedBlob(fake.url, "fake/r", bytes);
  const blobUrl = `${fake.url}/v2/fake/r/blobs/${digest}`;

  fake.fault({ method: "GET", path: /\/blobs\//, cutAfter: 1000 });
  const cut = await fetch(blobUrl);
  assertEquals(cut.status, 200);
  await assertRejects(() => cut.arrayBuffer());

  fake.fault({ method: "GET", path: /\/blobs\//, ignoreRange: true });
  const full = await fetch(blobUrl, { headers: { range: "bytes=10-19" } });
  assertEquals(full.status, 200);
  assertEquals(sha256Bytes(new Uint8Array(await full.arrayBuffer())), digest);

  fake.fault({ method: "GET", path: /\/blobs\//, contentRange: "bytes 0-9/300000" });
  const lying = await fetch(blobUrl, { headers: { range: "bytes=10-19" } });
  assertEquals(lying.status, 206);
  assertEquals(lying.headers.get("content-range"), "bytes 0-9/300000");
  assertEquals(new Uint8Array(await lying.arrayBuffer()), bytes.subarray(10, 20));

  fake.fault({ method: "POST", location: "http://127.0.0.1:9" });
  const started = await fetch(`${fake.url}/v2/fake/r/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  const location = new URL(started.headers.get("location")!);
  assertEquals(location.origin, "http://127.0.0.1:9");
  assert(location.pathname.startsWith("/v2/fake/r/blobs/uploads/"));

  fake.fault({ method: "PUT", path: /\/manifests\//, status: 200 });
  const config = await seedBlob(fake.url, "fake/r", new TextEncoder().encode("{}"));
  const manifest = await fetch(`${fake.url}/v2/fake/r/manifests/v1`, {
    method: "PUT",
    headers: { "content-type": OCI_MANIFEST },
    body: JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: "application/vnd.oci.empty.v1+json", digest: config, size: 2 },
      layers: [],
    }),
  });
  await manifest.body?.cancel();
  assertEquals(manifest.status, 200); // an unexpected 2xx instead of 201
});

Deno.test("fake registry: stall and hang keep the client waiting until it aborts", async () => {
  await using fake = await startFakeRegistry();
  const digest = await seedBlob(fake.url, "fake/s", patternBytes(10_000, 1));
  fake.fault({ method: "GET", path: /\/blobs\//, stallAfter: 100 });
  const controller = new AbortController();
  const stalled = await fetch(`${fake.url}/v2/fake/s/blobs/${digest}`, {
    signal: controller.signal,
  });
  assertEquals(stalled.status, 200);
  const reader = stalled.body!.getReader();
  const first = await reader.read();
  assert(!first.done && first.value.byteLength <= 100);
  controller.abort();
  await assertRejects(() => reader.read());

  fake.fault({ method: "GET", path: /^\/v2\/$/, hang: true });
  await assertRejects(() => fetch(`${fake.url}/v2/`, { signal: AbortSignal.timeout(200) }));
});

Deno.test("fake registry: cutRequestAfter drops the connection mid-upload", async () => {
  await using fake = await startFakeRegistry();
  // Every PUT: fetch may retry an idempotent request once on a fresh connection.
  fake.fault({
    method: "PUT",
    path: /\/blobs\/uploads\//,
    cutRequestAfter: 1000,
    times: Infinity,
  });
  await assertRejects(() => seedBlob(fake.url, "fake/c", patternBytes(200_000, 5)));
  assertEquals(fake.store.blobs("fake/c"), []);
  const puts = fake.log.filter((r) => r.method === "PUT");
  assert(puts.length >= 1);
  for (const put of puts) {
    assert(put.bodyBytes >= 1000 && put.bodyBytes < 200_000, `received ${put.bodyBytes}`);
    assertEquals(put.status, undefined);
  }
});

Deno.test("fake registry: respond without reading the body answers like nginx's 413", async () => {
  await using fake = await startFakeRegistry();
  fake.fault({
    method: "PUT",
    path: /\/blobs\/uploads\//,
    respond: { status: 413, readBody: false },
  });
  const started = await fetch(`${fake.url}/v2/fake/n/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  const put = await fetch(started.headers.get("location")! + "&digest=sha256:" + "0".repeat(64), {
    method: "PUT",
    body: patternBytes(2000, 1),
  }).then((r) => r.status, () => "connection error");
  // A client may see the 413 or a reset while still sending; either way nothing is stored.
  assert(put === 413 || put === "connection error", `got ${put}`);
  assertEquals(fake.store.blobs("fake/n"), []);
});

Deno.test("fake registry: advertises OCI-Chunk-Min-Length when configured", async () => {
  await using fake = await startFakeRegistry({ ociChunkMinLength: 4096 });
  const started = await fetch(`${fake.url}/v2/fake/m/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  assertEquals(started.headers.get("oci-chunk-min-length"), "4096");
});
