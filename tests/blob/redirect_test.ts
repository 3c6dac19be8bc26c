import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { findError } from "../../src/errors/find_error.ts";
import { RedirectError, RetriesExhaustedError } from "../../src/errors/kinds.ts";
import { NotFoundError, UnauthorizedError } from "../../src/errors/sentinels.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { statusCode } from "../../src/errors/status_code.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { blob, collect, instantClock, rejection, streamOf } from "./_helpers.ts";
import { startStorageServer } from "./_storage_server.ts";

const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie", "referer"];

/** An "authenticating" registry transport: adds credentials and records what it was asked. */
function authenticating(inner: Fetch): Fetch & { urls: string[] } {
  const urls: string[] = [];
  const fetch: Fetch = (request) => {
    urls.push(request.url);
    const headers = new Headers(request.headers);
    headers.set("authorization", "Bearer registry-secret");
    headers.set("proxy-authorization", "Basic cHJveHk6c2VjcmV0");
    headers.set("cookie", "session=registry-cookie");
    headers.set("referer", "http://registry.invalid/");
    const init: RequestInit & { duplex?: string } = { headers, duplex: "half" };
    return inner(new Request(request, init));
  };
  return Object.assign(fetch, { urls });
}

function assertNoCredentials(headers: Record<string, string>, what: string): void {
  for (const name of CREDENTIAL_HEADERS) {
    assertEquals(headers[name], undefined, `${what}: ${name} reached the other origin`);
  }
}

Deno.test("redirects: an absolute upload location on another origin uses the storage transport", async () => {
  await using registry = await startFakeRegistry();
  await using storage = await startFaultProxy({ target: registry.url });
  const base = new HttpTransport();
  const transport = authenticating(base.fetch);
  using client = new BlobClient({ plainHttp: true, transport, storageTransport: base.fetch });
  try {
    for (const chunked of [false, true]) {
      using c = chunked
        ? new BlobClient({
          plainHttp: true,
          transport,
          storageTransport: base.fetch,
          chunkedUpload: { chunkSize: 100_000 },
        })
        : client;
      const { bytes, digest } = blob(250_000, chunked ? 2 : 1);
      registry.clearFaults();
      registry.fault({ method: "POST", location: storage.url });
      await c.push(`${registry.host}/x/y`, digest, bytes.length, bytes);
      assert(registry.store.hasBlob("x/y", digest));
      const post = registry.log.filter((r) => r.method === "POST").at(-1)!;
      assertEquals(post.headers.authorization, "Bearer registry-secret");
      const foreign = storage.log.filter((r) => r.method === "PUT" || r.method === "PATCH");
      assert(foreign.length >= 1);
      for (const record of foreign) assertNoCredentials(record.headers, record.method);
      assert(
        transport.urls.every((u) => new URL(u).origin === registry.url),
        "registry transport saw a foreign URL",
      );
    }
  } finally {
    base.close();
  }
});

Deno.test("redirects: a cross-origin read redirect reaches storage without credentials", async () => {
  await using registry = await startFakeRegistry();
  const { bytes, digest } = blob(300_000, 3);
  await using storage = await startStorageServer({ blobs: new Map([["/data", bytes]]) });
  const base = new HttpTransport();
  try {
    const transport = authenticating(base.fetch);
    using client = new BlobClient({
      plainHttp: true,
      transport,
      storageTransport: base.fetch,
      clock: instantClock(),
    });
    registry.fault({
      method: "GET",
      times: Infinity,
      respond: { status: 307, headers: { location: `${storage.url}/data?X-Signature=abc` } },
    });
    registry.fault({
      method: "HEAD",
      times: Infinity,
      respond: { status: 302, headers: { location: `${storage.url}/data?X-Signature=abc` } },
    });
    assertEquals(await collect(await client.pull(`${registry.host}/x/y`, digest)), bytes);
    assert(await client.exists(`${registry.host}/x/y`, digest));
    assertEquals(
      await collect(await client.pullRange(`${registry.host}/x/y`, digest, 10, 100)),
      bytes.subarray(10, 110),
    );
    assertEquals(storage.log.length, 3);
    for (const record of storage.log) assertNoCredentials(record.headers, record.method);
    assertEquals(storage.log[0]!.query, "X-Signature=abc");
  } finally {
    base.close();
  }
});

Deno.test("redirects: off-origin 401/403/404/410 are retried and never match the registry sentinels", async () => {
  for (const status of [401, 403, 404, 410]) {
    await using registry = await startFakeRegistry();
    const { digest } = blob(10, 4);
    await using storage = await startStorageServer({ answer: () => ({ status }) });
    const base = new HttpTransport();
    try {
      using client = new BlobClient({
        plainHttp: true,
        transport: base.fetch,
        storageTransport: base.fetch,
        clock: instantClock(),
      });
      registry.fault({
        method: "GET",
        times: Infinity,
        respond: { status: 307, headers: { location: `${storage.url}/data` } },
      });
      const err = await rejection(
        client.pull(`${registry.host}/x/y`, digest),
        storage.url,
        "/data",
      );
      assert(findError(err, RetriesExhaustedError), `${status}: ${err}`);
      assert(!findError(err, NotFoundError) && !findError(err, UnauthorizedError), `${status}`);
      assertEquals(statusCode(err), status);
      assertEquals(retryable(err).retryable, true);
      assertEquals(storage.log.length, 4);
    } finally {
      base.close();
    }
  }
});

Deno.test("redirects: write redirects off refuse every write redirect before the target", async () => {
  await using registry = await startFakeRegistry();
  await using storage = await startStorageServer({ answer: () => ({ status: 201 }) });
  using client = new BlobClient({
    plainHttp: true,
    writeRedirects: false,
    storageTransport: fetchManual(),
  });
  const { bytes, digest } = blob(1000, 5);
  registry.fault({
    method: "POST",
    respond: { status: 307, headers: { location: `${storage.url}/upload` } },
  });
  let err = await rejection(
    client.push(`${registry.host}/x/y`, digest, bytes.length, bytes),
    storage.url,
  );
  assert(findError(err, RedirectError), String(err));
  registry.fault({
    method: "PUT",
    respond: { status: 308, headers: { location: `${storage.url}/upload` } },
  });
  err = await rejection(
    client.push(`${registry.host}/x/y`, digest, bytes.length, bytes),
    storage.url,
  );
  assert(findError(err, RedirectError), String(err));
  assertEquals(retryable(err).retryable, false);
  registry.fault({
    method: "POST",
    respond: { status: 307, headers: { location: `${storage.url}/upload` } },
  });
  err = await rejection(
    client.mount(`${registry.host}/x/y`, `${registry.host}/x/z`, digest),
    storage.url,
  );
  assert(findError(err, RedirectError), String(err));
  assertEquals(storage.log.length, 0);
});

Deno.test("redirects: a write redirect needs 307/308 and a replayable body", async () => {
  await using registry = await startFakeRegistry();
  await using storage = await startFaultProxy({ target: registry.url });
  const base = new HttpTransport();
  try {
    const transport = authenticating(base.fetch);
    using client = new BlobClient({
      plainHttp: true,
      transport,
      storageTransport: base.fetch,
      clock: instantClock(),
    });
    const { bytes, digest } = blob(100_000, 6);
    // 307 on the PUT: the replayable body is sent again to the other origin.
    registry.fault({
      method: "PUT",
      respond: { status: 307, headers: { location: `${storage.url}/v2/x/y/blobs/uploads/none` } },
    });
    storage.fault({ method: "PUT", respond: { status: 201 } });
    let wire = 0;
    await client.push(`${registry.host}/x/y`, digest, bytes.length, bytes, {
      onWireProgress: (d) => (wire += d),
    });
    const put = storage.log.find((r) => r.method === "PUT")!;
    assertNoCredentials(put.headers, "PUT");
    assertEquals(put.headers["content-length"], String(bytes.length));
    assertEquals(wire, 2 * bytes.length);
    // A one-shot stream cannot be replayed.
    registry.fault({
      method: "PUT",
      respond: { status: 307, headers: { location: `${storage.url}/elsewhere` } },
    });
    const err = await rejection(
      client.push(`${registry.host}/x/y`, digest, bytes.length, streamOf(bytes)),
    );
    assert(findError(err, RedirectError), String(err));
    // 302 on a write would turn it into a GET.
    registry.fault({
      method: "PUT",
      respond: { status: 302, headers: { location: `${storage.url}/elsewhere` } },
    });
    const err2 = await rejection(client.push(`${registry.host}/x/y`, digest, bytes.length, bytes));
    assert(findError(err2, RedirectError), String(err2));
    assertEquals(storage.log.filter((r) => r.path === "/elsewhere").length, 0);
  } finally {
    base.close();
  }
});

Deno.test("redirects: loops stop at ten hops", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { digest } = blob(10, 7);
  registry.fault({
    method: "GET",
    times: Infinity,
    respond: { status: 302, headers: { location: `/v2/x/y/blobs/${digest}` } },
  });
  const err = await rejection(client.pull(`${registry.host}/x/y`, digest));
  assert(findError(err, RedirectError), String(err));
  assertEquals(registry.count({ method: "GET" }), 11);
});

/** A storage transport that must never be used. */
function fetchManual(): Fetch {
  return () => Promise.reject(new Error("storage transport must not be used"));
}
