/**
 * The client core: one set of names and defaults for both clients, the parted client's
 * deprecated names read as the shared ones, and refusals that quote what they refuse.
 */
import { assertEquals, assertRejects, assertThrows } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { BlobClient, PartedClient } from "../../mod.ts";
import { ClientSession } from "../../src/remote/session.ts";
import { BLOB_SPEC_POLICY, DEFAULT_POLICY } from "../../src/remote/policy.ts";
import {
  defaultHashThreads,
  hashesInlineByDefault,
} from "../../src/hashing/hash_threads_default.ts";
import { PeerRefusedError } from "../../src/errors/kinds.ts";
import { findError } from "../../src/errors/find_error.ts";

Deno.test("client core: one default per setting, each client's own retry policy", () => {
  const blob = new ClientSession({}, { owner: "BlobClient", policy: BLOB_SPEC_POLICY });
  const parted = new ClientSession({}, { owner: "PartedClient", policy: DEFAULT_POLICY });
  assertEquals(blob.policy.retry, { ...BLOB_SPEC_POLICY.retry });
  assertEquals(parted.policy.retry, { ...DEFAULT_POLICY.retry });
  assertEquals([blob.hashThreads, blob.plainHttp], [defaultHashThreads(), false]);
  blob.close();
  parted.close();
});

Deno.test("client core: downloads and pushes hash inline by default on a fast core, local passes on threads; an asked count puts every hash on threads", () => {
  const fast = hashesInlineByDefault();
  const byDefault = new ClientSession({}, { owner: "PartedClient", policy: DEFAULT_POLICY });
  const asked = new ClientSession({ hashThreads: 2 }, {
    owner: "PartedClient",
    policy: DEFAULT_POLICY,
  });
  const threaded = (session: ClientSession, work: "local" | "download") => {
    const threads = session.hashing(2, work);
    threads.close();
    return threads.threadedRunning;
  };
  assertEquals(
    [threaded(byDefault, "download"), threaded(byDefault, "local")],
    [!fast, true],
  );
  assertEquals([threaded(asked, "download"), threaded(asked, "local")], [true, true]);
  // A push starts with every hash on the calling thread where downloads would hash there.
  const inlineOnly = (session: ClientSession) => {
    const threads = session.hashing(2, "push");
    threads.close();
    return threads.inlineOnly;
  };
  assertEquals([inlineOnly(byDefault), inlineOnly(asked)], [fast, false]);
  byDefault.close();
  asked.close();
});

Deno.test("client core: a refused number is quoted in the error", () => {
  const cases: [() => unknown, string][] = [
    [
      () => new BlobClient({ hashThreads: 300 }),
      "BlobClient: hashThreads must be an integer in 0..256, not 300",
    ],
    [
      () => new PartedClient({ hashThreads: -1 }),
      "PartedClient: hashThreads must be an integer in 0..256, not -1",
    ],
    [
      () => new BlobClient({ parallelPull: { workers: 0, chunkSize: 1 } }),
      "BlobClient: parallelPull.workers must be an integer in 1..256, not 0",
    ],
    [
      () => new BlobClient({ chunkedUpload: { chunkSize: 0.5 } }),
      "BlobClient: chunkedUpload.chunkSize must be a positive integer, not 0.5",
    ],
    [
      () => new PartedClient({ stallTimeoutMs: -5 }),
      "stallTimeoutMs must be a non-negative number of milliseconds, not -5",
    ],
  ];
  for (const [make, message] of cases) {
    assertEquals(assertThrows(make, RangeError).message, message);
  }
  assertThrows(() => new BlobClient({ caCerts: "not a list" as unknown as string[] }), TypeError);
});

Deno.test("client session: with the parted client's own transport, other hosts only through a transport given for them", async () => {
  await using registry = await startFakeRegistry();
  // The registry answers the manifest with a redirect to another host.
  registry.fault({
    method: "GET",
    path: /\/manifests\//,
    times: Infinity,
    respond: { status: 307, headers: { location: "http://storage.example/m" } },
  });
  const seen: string[] = [];
  const transport = (request: Request) => {
    seen.push(new URL(request.url).host);
    return fetch(request, { redirect: "manual" });
  };
  for (const options of [{ transport }]) {
    seen.length = 0;
    using client = new PartedClient({ ...options, plainHttp: true, retryPolicy: {} });
    const err = await assertRejects(() => client.inspect(`${registry.host}/a/b:v1`));
    // Refused before anything was sent: the caller's transport never saw the other host.
    assertEquals(findError(err, PeerRefusedError) !== undefined, true, String(err));
    assertEquals(seen, [registry.host]);
  }
  const storage: string[] = [];
  const storageTransport = (request: Request) => {
    storage.push(new URL(request.url).host);
    return Promise.resolve(new Response(null, { status: 404 }));
  };
  for (
    const options of [
      { transport, storageTransport },
      { transport, storageTransport: transport },
    ]
  ) {
    seen.length = storage.length = 0;
    using client = new PartedClient({ ...options, plainHttp: true, retryPolicy: {} });
    await assertRejects(() => client.inspect(`${registry.host}/a/b:v1`));
    assertEquals([...seen, ...storage], [registry.host, "storage.example"]);
  }
});
