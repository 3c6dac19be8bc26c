/**
 * Both clients read a partial retry policy the same way: a policy that names no attempt count
 * makes exactly one attempt, and missing delays take the client's defaults.
 */
import { assertEquals, assertRejects } from "../fixtures/assert.ts";
import { startLoopbackServer } from "../fixtures/loopback_server.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { PartedClient, toFile } from "../../src/parted/mod.ts";
import { resolveRetryPolicy } from "../../src/remote/retry.ts";

const DIGEST = `sha256:${"a".repeat(64)}`;

/** A registry that answers 503 to everything and counts the requests. */
async function unavailable() {
  let requests = 0;
  const server = await startLoopbackServer((_req, res) => {
    requests++;
    res.writeHead(503, { "content-length": "0" });
    res.end();
    return Promise.resolve();
  });
  return {
    host: server.host,
    get requests() {
      return requests;
    },
    close: () => server.close(),
  };
}

Deno.test("retry policy: a partial policy is read by one rule for both clients", () => {
  const defaults = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 30_000 };
  assertEquals(resolveRetryPolicy({}, defaults, "test"), { ...defaults, maxAttempts: 1 });
  assertEquals(resolveRetryPolicy({ maxAttempts: 3 }, defaults, "test").maxAttempts, 3);
  assertEquals(resolveRetryPolicy(undefined, defaults, "test"), defaults);
});

Deno.test("retry policy: without maxAttempts, each client makes exactly one attempt", async () => {
  const registry = await unavailable();
  await using dir = await tempDir();
  try {
    using parted = new PartedClient({ plainHttp: true, retryPolicy: { baseDelayMs: 1 } });
    await assertRejects(() => parted.pull(`${registry.host}/org/data:v1`, toFile(`${dir.path}/o`)));
    assertEquals(registry.requests, 1, "parted: one GET manifest");

    using blob = new BlobClient({ plainHttp: true, retryPolicy: { baseDelayMs: 1 } });
    await assertRejects(() => blob.exists(`${registry.host}/org/data`, DIGEST));
    assertEquals(registry.requests, 2, "blob: one HEAD");

    // With a count, both repeat a retryable failure up to it.
    using parted3 = new PartedClient({
      plainHttp: true,
      retryPolicy: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    });
    await assertRejects(() =>
      parted3.pull(`${registry.host}/org/data:v1`, toFile(`${dir.path}/o`))
    );
    assertEquals(registry.requests, 5);
    using blob3 = new BlobClient({
      plainHttp: true,
      retryPolicy: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    });
    await assertRejects(() => blob3.exists(`${registry.host}/org/data`, DIGEST));
    assertEquals(registry.requests, 8);
  } finally {
    await registry.close();
  }
});
