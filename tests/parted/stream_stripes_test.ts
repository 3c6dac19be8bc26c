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

Deno.test("stripes: a large part comes in at most 8 stripes, but the file's last part size in small ones", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const MiB = 1 << 20;
  // Parts of 144 MiB, 144 MiB and 40 MiB. Nine stripes of 16 MiB would be nine requests a part;
  // eight of 18 MiB are enough. The parts that end in the last 144 MiB of the file keep 16 MiB
  // stripes: the pull waits for their hash once the last bytes are in.
  const part = 144 * MiB;
  const { bytes, ref, digests } = await pushed(
    registry.host,
    tmp.path,
    "big",
    2 * part + 40 * MiB,
    part,
  );
  await using proxy = await startFaultProxy({ target: registry.url });
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  await client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), { workers: 8 });
  assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
  const rangesOf = (digest: string) =>
    blobGetsIn(proxy.log, digest).map((r) => r.headers.range).sort((a, b) =>
      Number(/\d+/.exec(a ?? "")) - Number(/\d+/.exec(b ?? ""))
    );
  const stripes = (count: number, size: number) =>
    Array.from({ length: count }, (_, i) => `bytes=${i * size}-${(i + 1) * size - 1}`);
  assertEquals(rangesOf(digests[0]), stripes(8, 18 * MiB));
  assertEquals(rangesOf(digests[1]), stripes(9, 16 * MiB));
  assertEquals(
    rangesOf(digests[2]),
    stripes(2, 16 * MiB).concat(`bytes=${32 * MiB}-${40 * MiB - 1}`),
  );
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
