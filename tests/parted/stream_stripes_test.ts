/**
 * A pull into a stream fetches large parts in stripes (ranged GETs from several connections, in
 * file order) and lets a part's bytes out only once the whole part verified: in memory and
 * spilled, a registry that ignores ranges, wrong bytes from the registry and from a mirror.
 */
import { sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { PartedClient, toStream } from "../../mod.ts";
import { DigestMismatchError } from "../../src/errors/mod.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { STRIPE_BYTES } from "../../src/parted/striped_part.ts";
import { blobGetsIn, PART, pushed } from "./_stripes.ts";
import { collector, entries } from "./_streams.ts";

Deno.test("stripes: large parts come in ranged GETs, in order, held in memory", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "mem");
  await using proxy = await startFaultProxy({ target: registry.url });
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  const result = await client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
    workers: 4,
  });
  assertStrictEquals(result.spilled, false);
  assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
  for (const digest of digests.slice(0, 2)) {
    const gets = blobGetsIn(proxy.log, digest);
    assertStrictEquals(gets.length, 3, "one ranged GET a stripe");
    assert(gets.every((r) => r.status === 206 && r.headers.range !== undefined));
  }
  // The short last part is fetched whole.
  assertStrictEquals(proxy.count({ method: "GET", path: new RegExp(digests[2]) }), 1);
});

for (const hashThreads of [0, 2]) {
  Deno.test(`stripes: a spilled window is hashed from its files, and removed (hashThreads ${hashThreads})`, async () => {
    await using registry = await startMemoryRegistry();
    await using tmp = await tempDir();
    const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "spill");
    using client = new PartedClient({ plainHttp: true, hashThreads });
    const spill = `${tmp.path}/spill`;
    await Deno.mkdir(spill);
    const out = collector();
    const result = await client.pull(
      ref,
      toStream(out.writable, { memoryWindowBytes: 0, spillDirectory: spill }),
      { workers: 3 },
    );
    assert(result.spilled);
    assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
    assertEquals(await entries(spill), []);
    // A wrong byte in the last stripe of a spilled part is found there too.
    const wrong = bytes.slice(0, PART);
    wrong[PART - 1] ^= 0xff;
    registry.store.tamperBlob(digests[0], wrong);
    const none = collector();
    await assertRejects(
      client.pull(ref, toStream(none.writable, { memoryWindowBytes: 0, spillDirectory: spill })),
      DigestMismatchError,
    );
    assertStrictEquals(none.bytes().byteLength, 0);
    assertEquals(await entries(spill), []);
  });
}

Deno.test("stripes: a registry that ignores ranges gets one whole GET a part after the first refusal", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "norange");
  await using proxy = await startFaultProxy({ target: registry.url });
  proxy.fault({ method: "GET", path: /\/blobs\//, ignoreRange: true });
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  await client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
    workers: 2,
  });
  assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
  const gets = (digest: string) => blobGetsIn(proxy.log, digest);
  // The first part: its refused stripes (at most one a connection), then once whole.
  assert(gets(digests[0]).length <= 3, `${gets(digests[0]).length} GETs`);
  assertStrictEquals(gets(digests[0]).filter((r) => r.headers.range === undefined).length, 1);
  // Later parts are not asked for in ranges any more.
  assertStrictEquals(gets(digests[1]).length, 1);
});

Deno.test("stripes: a part the registry sends wrong fails the pull; the output ends before it", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "bad");
  const wrong = bytes.slice(PART, 2 * PART);
  wrong[PART - 5] ^= 0xff;
  registry.store.tamperBlob(digests[1], wrong);
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  await assertRejects(
    client.pull(ref, toStream(out.writable), { workers: 4 }),
    DigestMismatchError,
  );
  assertStrictEquals(out.bytes().byteLength, PART);
  assertStrictEquals(sha256Bytes(out.bytes()), digests[0]);
});

Deno.test("stripes: a part a mirror sends wrong is fetched whole from the registry", async () => {
  await using registry = await startMemoryRegistry();
  await using mirror = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "mirrored");
  await pushed(mirror.host, tmp.path, "mirrored");
  const wrong = bytes.slice(0, PART);
  wrong[STRIPE_BYTES + 3] ^= 0xff;
  mirror.store.tamperBlob(digests[0], wrong);
  await using proxy = await startFaultProxy({ target: registry.url });
  using client = new PartedClient({
    plainHttp: true,
    mirrors: { [proxy.host]: [{ location: mirror.host, plainHttp: true }] },
  });
  const out = collector();
  await client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
    workers: 3,
  });
  assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
  const atRegistry = blobGetsIn(proxy.log, digests[0]);
  assertStrictEquals(atRegistry.length, 1);
  assertStrictEquals(atRegistry[0].headers.range, undefined);
});
