/**
 * The fault proxy as an edge in front of a registry: paced request bodies, a request time
 * limit, and answers decided on the whole request body.
 */
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";

const MiB = 1 << 20;

async function openSession(proxyUrl: string, repository: string): Promise<URL> {
  const started = await fetch(`${proxyUrl}/v2/${repository}/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  return new URL(started.headers.get("location")!);
}

/** A PUT whose body is a stream: the client cannot send it again by itself after a drop. */
function put(location: URL, bytes: Uint8Array<ArrayBuffer>): Promise<Response> {
  location.searchParams.set("digest", sha256Bytes(bytes));
  return fetch(location, {
    method: "PUT",
    body: new Blob([bytes]).stream(),
    headers: {
      "content-type": "application/octet-stream",
      "content-length": String(bytes.byteLength),
    },
  });
}

Deno.test("fault proxy: throttleRequest paces a body; cutAfterMs drops what is still unanswered", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  const path = /\/blobs\/uploads\/.+/;
  proxy.fault({ method: "PUT", path, throttleRequest: MiB, cutAfterMs: 1000 });
  proxy.fault({ method: "PUT", path, throttleRequest: MiB, cutAfterMs: 5000 });

  // 3 MiB at 1 MiB/s cannot arrive within 1 s: dropped, unanswered, part of it forwarded.
  const started = performance.now();
  const session = await openSession(proxy.url, "edge/cut");
  await assertRejects(() => put(session, patternBytes(3 * MiB, 1)));
  const cutMs = performance.now() - started;
  assert(cutMs >= 900 && cutMs < 4000, `dropped after ${cutMs} ms`);
  const cut = proxy.log.filter((r) => r.method === "PUT")[0];
  assertEquals(cut.status, undefined);
  assert(cut.bodyBytes < 3 * MiB, `${cut.bodyBytes} bytes read`);

  // 1.5 MiB at 1 MiB/s arrives within 5 s: answered, and the body took its paced time.
  const paced = performance.now();
  const bytes = patternBytes(1.5 * MiB, 2);
  const answer = await put(await openSession(proxy.url, "edge/paced"), bytes);
  await answer.body?.cancel();
  assertEquals(answer.status, 201);
  assert(performance.now() - paced >= 1000, "1.5 MiB at 1 MiB/s");
  assert(registry.store.hasBlob("edge/paced", sha256Bytes(bytes)));
});

Deno.test("fault proxy: inspectBody answers from the whole body or forwards it", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  proxy.fault({
    method: "PUT",
    path: /\/blobs\/uploads\/.+/,
    times: Infinity,
    inspectBody: (body) =>
      body[0] === 0xff ? { status: 400, body: '{"errors":[{"code":"SIZE_INVALID"}]}' } : undefined,
  });
  const refused = patternBytes(64 * 1024, 3);
  refused[0] = 0xff;
  const no = await put(await openSession(proxy.url, "edge/inspect"), refused);
  assertEquals(no.status, 400);
  assertEquals(await no.text(), '{"errors":[{"code":"SIZE_INVALID"}]}');
  const taken = patternBytes(64 * 1024, 4);
  taken[0] = 0;
  const yes = await put(await openSession(proxy.url, "edge/inspect"), taken);
  await yes.body?.cancel();
  assertEquals(yes.status, 201);
  assert(registry.store.hasBlob("edge/inspect", sha256Bytes(taken)), "forwarded intact");
  assert(!registry.store.hasBlob("edge/inspect", sha256Bytes(refused)), "never forwarded");
  await proxy.writesAnswered();
});
