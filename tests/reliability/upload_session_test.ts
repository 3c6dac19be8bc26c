/**
 * Regression of fault storm trial seed 20240694 (push; a dropped PUT connection, a 502, a
 * manifest 503): a part PUT whose reused keep-alive connection was cut mid-body was resent by
 * the runtime's HTTP client on the same upload session; the registry, which had already taken
 * part of the body, answered 404 and the push ended with `NotFoundError`.
 *
 * What must hold: every upload session receives at most one PUT; a cut PUT costs one attempt
 * and the part's next attempt opens a fresh session. A 404 on an upload PUT itself stays what
 * the specification makes it — terminal, `NotFoundError` naming the part — because the library
 * never reuses a session, so a fresh session that answers 404 is not a fault it can fix.
 */
import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import type { RequestRecord } from "../fixtures/request_log.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { findError, NotFoundError, RetriesExhaustedError } from "../../src/errors/mod.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";

const P = 64 * 1024;
const UPLOAD_PUT = { method: "PUT", path: /\/blobs\/uploads\/./ } as const;

async function env() {
  const fake = await startFakeRegistry();
  const dir = await tempDir();
  const src = `${dir.path}/src.bin`;
  const digest = await writePatternFile(src, 3 * P, 20240694);
  // The package's own transport, warmed before every PUT so that a PUT it sends through its
  // pool goes out on a reused keep-alive connection: the case the runtime's HTTP client resends
  // by itself. (Where the transport sends a file-range body on a connection of its own, the
  // test still checks the outcome: one PUT per session.)
  const transport = new HttpTransport();
  const warmed = async (request: Request): Promise<Response> => {
    if (request.method === "PUT") {
      const warm = await transport.fetch(new Request(`${fake.url}/v2/`));
      await warm.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 0)); // the connection returns to the pool
    }
    return await transport.fetch(request);
  };
  const client = new PartedClient({
    transport: warmed,
    plainHttp: true,
    retryPolicy: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 },
  });
  return {
    fake,
    dir,
    src,
    digest,
    client,
    async [Symbol.asyncDispose]() {
      transport.close();
      await fake.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

function uploadPuts(log: RequestRecord[]): RequestRecord[] {
  return log.filter((r) => r.method === "PUT" && /\/blobs\/uploads\/./.test(r.path));
}

Deno.test("upload session: a PUT cut mid-body on a reused connection is never resent on its session", async () => {
  await using e = await env();
  e.fake.fault({ ...UPLOAD_PUT, nth: 2, cutRequestAfter: 1000 });
  const descriptor = await e.client.push(`${e.fake.host}/s/f:v1`, fromFile(e.src), {
    partSize: P,
    workers: 1,
  });
  const puts = uploadPuts(e.fake.log);
  const perSession = new Map<string, number>();
  for (const put of puts) perSession.set(put.path, (perSession.get(put.path) ?? 0) + 1);
  for (const [, count] of perSession) assertEquals(count, 1, "one PUT per upload session");
  assertEquals(puts.length, 3 + 1 + 1, "three parts and the config, plus the cut attempt");
  assert(puts[1].bodyBytes > 0 && puts[1].status === undefined, "the second PUT was cut");
  e.fake.expectNoUnexpected();
  const back = `${e.dir.path}/back.bin`;
  await e.client.pull(`${e.fake.host}/s/f@${descriptor.digest}`, toFile(back));
  assertEquals(await sha256File(back), e.digest);
});

Deno.test("upload session: the storm trial's fault mix completes or exhausts its budget, never NotFoundError", async () => {
  await using e = await env();
  // The faults of trial seed 20240694, on the strict fake: the 4th and 5th upload PUTs cut,
  // HEAD 502 from the 6th on (5 times), the 2nd manifest PUT 503.
  e.fake.fault({ ...UPLOAD_PUT, nth: 4, times: 2, cutRequestAfter: 39_937 % P });
  e.fake.fault({ method: "HEAD", path: /\/blobs\//, nth: 6, times: 5, respond: { status: 502 } });
  e.fake.fault({ method: "PUT", path: /\/manifests\//, nth: 2, respond: { status: 503 } });
  try {
    await e.client.push(`${e.fake.host}/s/storm:v1`, fromFile(e.src), { partSize: P, workers: 3 });
  } catch (err) {
    assertEquals(findError(err, NotFoundError), undefined, `not NotFoundError: ${String(err)}`);
    assertInstanceOf(findError(err, RetriesExhaustedError), RetriesExhaustedError);
  }
  const perSession = new Map<string, number>();
  for (const put of uploadPuts(e.fake.log)) {
    perSession.set(put.path, (perSession.get(put.path) ?? 0) + 1);
  }
  for (const [, count] of perSession) assertEquals(count, 1, "one PUT per upload session");
  e.fake.expectNoUnexpected();
});

Deno.test("upload session: a 404 on a fresh session's PUT is terminal NotFoundError naming the part", async () => {
  await using e = await env();
  e.fake.fault({
    ...UPLOAD_PUT,
    respond: {
      status: 404,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ errors: [{ code: "BLOB_UPLOAD_UNKNOWN", message: "unknown" }] }),
    },
  });
  const err = await assertRejects(
    () => e.client.push(`${e.fake.host}/s/gone:v1`, fromFile(e.src), { partSize: P, workers: 1 }),
  );
  assertInstanceOf(findError(err, NotFoundError), NotFoundError);
  assert(/part 0/.test((err as Error).message), "the message names the part");
  assertEquals(findError(err, RetriesExhaustedError), undefined, "not retried");
  assertEquals(uploadPuts(e.fake.log).length, 1, "one attempt");
  assertEquals(e.fake.count({ method: "PUT", path: /\/manifests\// }), 0, "no manifest");
});
