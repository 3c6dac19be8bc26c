import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { seedBlob } from "../fixtures/seed.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { randomInt, seededRandom } from "../fixtures/random.ts";
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { portClosed } from "./helpers.ts";

/** Reads a body until it ends or breaks; the bytes received and whether it broke. */
async function readAll(response: Response): Promise<{ bytes: number; broke: boolean }> {
  const reader = response.body!.getReader();
  let bytes = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return { bytes, broke: false };
      bytes += value.byteLength;
    }
  } catch {
    return { bytes, broke: true };
  }
}

registryTest(
  "fault proxy: forwards a push to the real registry and rewrites Locations back",
  async () => {
    await using registry = await startRegistry();
    const proxy = await startFaultProxy({ target: registry.url });
    try {
      const bytes = patternBytes(3 << 20, 9);
      const started = await fetch(`${proxy.url}/v2/proxy/push/blobs/uploads/`, { method: "POST" });
      await started.body?.cancel();
      assertEquals(started.status, 202);
      const location = new URL(started.headers.get("location")!);
      assertEquals(location.origin, proxy.url);
      location.searchParams.set("digest", sha256Bytes(bytes));
      const put = await fetch(location, {
        method: "PUT",
        body: bytes,
        headers: { "content-type": "application/octet-stream" },
      });
      await put.body?.cancel();
      assertEquals(put.status, 201);
      assertEquals(new URL(put.headers.get("location")!).origin, proxy.url);
      // The bytes went through intact.
      const direct = await fetch(`${registry.url}/v2/proxy/push/blobs/${sha256Bytes(bytes)}`);
      assertEquals(sha256Bytes(new Uint8Array(await direct.arrayBuffer())), sha256Bytes(bytes));
      const record = proxy.log.find((r) => r.method === "PUT")!;
      assertEquals(record.bodyBytes, bytes.byteLength);
      assertEquals(record.headers["content-length"], String(bytes.byteLength));
      assertEquals(record.status, 201);
      assertEquals(proxy.count({ route: "upload" }), 1);
    } finally {
      await proxy.close();
    }
    assert(await portClosed(proxy.port), "proxy still listening after close");
  },
);

registryTest("fault proxy: ignoreRange makes the real registry answer 200 in full", async () => {
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  const bytes = patternBytes(20_000, 2);
  const digest = await seedBlob(registry.url, "proxy/range", bytes);
  const url = `${proxy.url}/v2/proxy/range/blobs/${digest}`;
  const ranged = await fetch(url, { headers: { range: "bytes=100-199" } });
  assertEquals(ranged.status, 206);
  assertEquals(new Uint8Array(await ranged.arrayBuffer()), bytes.subarray(100, 200));
  proxy.fault({ method: "GET", path: /\/blobs\//, ignoreRange: true });
  const full = await fetch(url, { headers: { range: "bytes=100-199" } });
  assertEquals(full.status, 200);
  assertEquals(new Uint8Array(await full.arrayBuffer()), bytes);
});

Deno.test("fault proxy: 50 seeded cuts deliver exactly the drawn prefix, reproducibly", async () => {
  await using registry = await startMemoryRegistry();
  const size = 200_000;
  const digest = await seedBlob(registry.url, "proxy/cut", patternBytes(size, 1));
  const run = async (seed: number): Promise<number[]> => {
    await using proxy = await startFaultProxy({ target: registry.url, seed });
    proxy.fault({
      method: "GET",
      path: /\/blobs\//,
      times: Infinity,
      cutAfter: (length) => randomInt(proxy.random, 1, length! - 1),
    });
    const received: number[] = [];
    for (let trial = 0; trial < 50; trial++) {
      const response = await fetch(`${proxy.url}/v2/proxy/cut/blobs/${digest}`);
      assertEquals(response.headers.get("content-length"), String(size));
      const { bytes, broke } = await readAll(response);
      assert(broke, `trial ${trial}: body ended cleanly after ${bytes} bytes`);
      received.push(bytes);
    }
    assertEquals(proxy.faultsApplied, 50);
    return received;
  };
  const first = await run(42);
  const expected = seededRandom(42);
  assertEquals(first, first.map(() => randomInt(expected, 1, size - 1)));
  assertEquals(await run(42), first);
  assert(new Set(first).size > 40, "cut offsets are not spread");
  assert(first.every((n) => n >= 1 && n < size));
});

Deno.test("fault proxy: injected statuses, Location rewrite, Content-Range, stall", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  const digest = await seedBlob(registry.url, "proxy/f", patternBytes(5000, 3));
  const blob = `${proxy.url}/v2/proxy/f/blobs/${digest}`;

  proxy.fault({ method: "HEAD", respond: { status: 429, headers: { "retry-after": "2" } } });
  proxy.fault({ method: "HEAD", nth: 2, respond: { status: 503 } });
  const first = await fetch(blob, { method: "HEAD" });
  const second = await fetch(blob, { method: "HEAD" });
  const third = await fetch(blob, { method: "HEAD" });
  assertEquals(
    [first.status, first.headers.get("retry-after"), second.status, third.status],
    [429, "2", 503, 200],
  );
  assertEquals(registry.store.blobs("proxy/f"), [digest]);

  proxy.fault({ method: "POST", location: "http://127.0.0.1:9" });
  const started = await fetch(`${proxy.url}/v2/proxy/f/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  assertEquals(new URL(started.headers.get("location")!).origin, "http://127.0.0.1:9");

  proxy.fault({ method: "GET", contentRange: "bytes 1-10/5000" });
  const lying = await fetch(blob, { headers: { range: "bytes=0-9" } });
  await lying.body?.cancel();
  assertEquals(lying.headers.get("content-range"), "bytes 1-10/5000");

  proxy.fault({ method: "GET", stallAfter: 0 });
  const controller = new AbortController();
  const stalled = await fetch(blob, { signal: controller.signal });
  assertEquals(stalled.status, 200);
  const read = stalled.body!.getReader().read();
  controller.abort();
  await assertRejects(() => read);
});

Deno.test("fault proxy: cutRequestAfter breaks an upload after the scripted bytes", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  proxy.fault({
    method: "PATCH",
    path: /\/blobs\/uploads\//,
    cutRequestAfter: 64 * 1024,
    times: Infinity,
  });
  const started = await fetch(`${proxy.url}/v2/proxy/u/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  await assertRejects(() =>
    fetch(started.headers.get("location")!, { method: "PATCH", body: patternBytes(1 << 20, 1) })
  );
  const patches = proxy.log.filter((r) => r.method === "PATCH");
  assert(patches.length >= 1);
  for (const patch of patches) {
    assertEquals(patch.bodyBytes, 64 * 1024);
    assertEquals(patch.status, undefined);
  }
});
