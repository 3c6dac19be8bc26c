import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { registryTest, startRegistry, toolTest } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
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

/** What an upstream sink saw of one request: body bytes, and whether it ended or broke. */
interface Sink {
  url: string;
  /** Resolves when a request's body ended or its connection closed. */
  seen(): Promise<{ bytes: number; complete: boolean }>;
  requests: number;
  close(): Promise<void>;
}

/**
 * An upstream that only answers a complete body (like a registry waiting for Content-Length
 * bytes); with `refuse`, it answers 404 at once and closes the connection mid-upload.
 */
async function startSink(options: { refuse?: boolean } = {}): Promise<Sink> {
  const waiters: ((v: { bytes: number; complete: boolean }) => void)[] = [];
  const results: { bytes: number; complete: boolean }[] = [];
  const report = (v: { bytes: number; complete: boolean }) => {
    const waiter = waiters.shift();
    if (waiter) waiter(v);
    else results.push(v);
  };
  const sink: Sink = {
    url: "",
    requests: 0,
    seen: () => {
      const ready = results.shift();
      return ready ? Promise.resolve(ready) : new Promise((resolve) => waiters.push(resolve));
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const server = createServer((req, res) => {
    sink.requests++;
    if (options.refuse) {
      res.writeHead(404, { "content-length": "0", connection: "close" });
      res.end(() => req.socket.destroy());
      report({ bytes: 0, complete: false });
      return;
    }
    let bytes = 0;
    let reported = false;
    req.on("data", (chunk: Uint8Array) => bytes += chunk.byteLength);
    req.on("end", () => {
      if (!reported) report({ bytes, complete: reported = true });
      res.writeHead(201, { "content-length": "0" });
      res.end();
    });
    req.on("close", () => {
      if (!reported) report({ bytes, complete: (reported = true) && false });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return sink;
}

/** Sends one request with node:http; resolves with its status or the error it broke with. */
function send(
  url: string,
  method: string,
  body: Uint8Array,
  options: { chunked?: boolean } = {},
): Promise<number | Error> {
  return new Promise((resolve) => {
    const headers = options.chunked
      ? { "transfer-encoding": "chunked" }
      : { "content-length": String(body.byteLength) };
    const req = httpRequest(url, { method, headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
      res.on("error", (error) => resolve(error));
    });
    req.on("error", (error) => resolve(error));
    // Several writes: the cut may fall in any chunk, including the last.
    for (let at = 0; at < body.byteLength; at += 256 * 1024) {
      req.write(body.subarray(at, at + 256 * 1024));
    }
    req.end();
  });
}

/** Rejects when `promise` has not settled within `ms`: turns a hang into a failure. */
function hangGuard<T>(promise: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`hang: ${what}`)), ms);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

Deno.test("fault proxy: cutRequestAfter drops the client at the byte and forwards exactly the prefix", async () => {
  const sink = await startSink();
  const proxy = await startFaultProxy({ target: sink.url });
  try {
    const body = patternBytes(1 << 20, 4);
    // Cuts in the first chunk, mid-body, in the last chunk, at the last byte, and at zero.
    const cuts = [1, 300_000, (1 << 20) - 1000, 1 << 20, 0];
    for (const [i, cut] of cuts.entries()) {
      proxy.clearFaults();
      proxy.fault({ method: "PUT", cutRequestAfter: cut });
      const outcome = await hangGuard(
        send(`${proxy.url}/v2/a/blobs/uploads/x`, "PUT", body),
        `cut ${cut}`,
      );
      assert(outcome instanceof Error, `cut ${cut}: the client got an answer (${outcome})`);
      assertEquals(await hangGuard(sink.seen(), `upstream of cut ${cut}`), {
        bytes: cut,
        complete: cut === body.byteLength, // a cut at the last byte leaves the body whole
      });
      assertEquals(proxy.log[i].bodyBytes, cut);
      assertEquals(proxy.log[i].status, undefined);
    }
    // A chunked body is cut the same way.
    proxy.clearFaults();
    proxy.fault({ method: "PATCH", cutRequestAfter: 500_000 });
    const chunked = await hangGuard(
      send(`${proxy.url}/v2/a/blobs/uploads/x`, "PATCH", body, { chunked: true }),
      "chunked cut",
    );
    assert(chunked instanceof Error);
    assertEquals(await sink.seen(), { bytes: 500_000, complete: false });
    // A body shorter than the cut, and requests after the rule, go through untouched.
    proxy.fault({ method: "PUT", cutRequestAfter: 2 << 20 });
    assertEquals(await send(`${proxy.url}/v2/a/blobs/uploads/x`, "PUT", body), 201);
    assertEquals(await sink.seen(), { bytes: 1 << 20, complete: true });
    assertEquals(await send(`${proxy.url}/v2/a/blobs/uploads/x`, "PUT", body), 201);
    assertEquals(await sink.seen(), { bytes: 1 << 20, complete: true });
  } finally {
    await proxy.close();
    await sink.close();
  }
});

toolTest(
  "fault proxy: curl -T through a cut, against an upstream that closes mid-upload, never crashes the proxy",
  { needs: ["curl"] },
  async () => {
    await using dir = await tempDir();
    const file = `${dir.path}/upload.bin`;
    await Deno.writeFile(file, patternBytes(8 << 20, 5));
    const curl = async (url: string): Promise<number> => {
      const { code } = await new Deno.Command("curl", {
        args: ["-sS", "-o", "/dev/null", "-T", file, url],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).output();
      return code;
    };
    const refusing = await startSink({ refuse: true });
    const accepting = await startSink();
    const intoRefusing = await startFaultProxy({ target: refusing.url });
    const intoAccepting = await startFaultProxy({ target: accepting.url });
    try {
      // The upstream answers and closes while the proxy still writes: EPIPE / ECONNRESET on
      // the upstream socket, and on the client socket when curl goes away.
      for (const cut of [6 << 20, 1000, 0]) {
        intoRefusing.clearFaults();
        intoRefusing.fault({ method: "PUT", cutRequestAfter: cut });
        assert(await hangGuard(curl(`${intoRefusing.url}/v2/a/blobs/uploads/x`), "curl") !== 0);
      }
      // Without a fault the early answer reaches curl or the upload breaks, never a crash.
      await hangGuard(curl(`${intoRefusing.url}/v2/a/blobs/uploads/x`), "curl");
      // curl's Expect: 100-continue upload, cut in its last chunk.
      intoAccepting.fault({ method: "PUT", cutRequestAfter: (8 << 20) - 10 });
      assert(await hangGuard(curl(`${intoAccepting.url}/v2/a/blobs/uploads/x`), "curl") !== 0);
      assertEquals(await accepting.seen(), { bytes: (8 << 20) - 10, complete: false });
      // Both proxies still serve.
      assertEquals(await curl(`${intoAccepting.url}/v2/a/blobs/uploads/x`), 0);
      assertEquals(await accepting.seen(), { bytes: 8 << 20, complete: true });
      assert(refusing.requests >= 4);
    } finally {
      await intoRefusing.close();
      await intoAccepting.close();
      await refusing.close();
      await accepting.close();
    }
  },
);

Deno.test("fault proxy: a write delivered whole still reaches its answer after the client vanishes; writesAnswered() waits for it", async () => {
  // A target that takes its time to commit a write, as a registry moving a blob into place.
  let committed = 0;
  const target = createServer((req, res) => {
    req.resume();
    req.on("end", () =>
      setTimeout(() => {
        committed++;
        res.writeHead(201, { "content-length": "0" }).end();
      }, 300));
  });
  await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
  const port = (target.address() as AddressInfo).port;
  await using proxy = await startFaultProxy({ target: `http://127.0.0.1:${port}` });
  try {
    const body = new Uint8Array(64 * 1024);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    const head = `PUT /v2/a/b/blobs/uploads/x?digest=d HTTP/1.1\r\nhost: ${proxy.host}\r\n` +
      `content-length: ${body.byteLength}\r\n\r\n`;
    await conn.write(new TextEncoder().encode(head));
    for (let sent = 0; sent < body.byteLength;) sent += await conn.write(body.subarray(sent));
    await new Promise((r) => setTimeout(r, 50));
    conn.close(); // the client is killed before the answer
    assertEquals(committed, 0, "not committed yet");
    await proxy.writesAnswered();
    assertEquals(committed, 1, "it resolves only once the target has answered");

    // A client killed mid-body: that exchange is dropped, and nothing waits for it.
    const cut = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    await cut.write(new TextEncoder().encode(head));
    await cut.write(body.subarray(0, 1000));
    await new Promise((r) => setTimeout(r, 50));
    cut.close();
    await new Promise((r) => setTimeout(r, 50));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settled = await Promise.race([
      proxy.writesAnswered().then(() => "answered"),
      new Promise((r) => timer = setTimeout(() => r("still waiting"), 5000)),
    ]);
    clearTimeout(timer);
    assertEquals(settled, "answered");
    assertEquals(committed, 1, "the cut write was never committed");
  } finally {
    await new Promise((r) => target.close(r));
    target.closeAllConnections?.();
  }
});
