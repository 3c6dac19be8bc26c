/**
 * A hostile registry against the striped pull into a stream: a hostile registry that lies about ranges, answers
 * some stripes whole, cuts or stalls stripes; boundaries of striping; wrong bytes in a stripe.
 * No byte of a part may leave before the whole part verified, and the pull must stop promptly.
 */
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { fromFile, fromStream, PartedClient, toStream } from "../../mod.ts";
import { DigestMismatchError } from "../../src/errors/mod.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { STRIPE_BYTES } from "../../src/parted/striped_part.ts";
import { blobGetsIn, MiB, PART, pushed } from "./_stripes.ts";
import { byteSource, collector, entries } from "./_streams.ts";

/** `promise`'s outcome, or "timeout" after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | "timeout" | Error> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
  try {
    return await Promise.race([promise.catch((e) => e as Error), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const blobGets = (digest: string) => ({ method: "GET", path: new RegExp(`${digest}$`) });

Deno.test("hostile: a stripe that fails while another stripe of the part stalls stops the pull at once", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { ref, digests } = await pushed(registry.host, tmp.path, "failstall", PART + 1000);
  await using proxy = await startFaultProxy({ target: registry.url });
  // The first stripe asked for: a Content-Range that starts elsewhere (a protocol fault, not retried).
  proxy.fault({ ...blobGets(digests[0]), contentRange: `bytes 1-${STRIPE_BYTES}/${PART}` });
  // The next stripe: headers and a few bytes, then nothing.
  proxy.fault({ ...blobGets(digests[0]), stallAfter: 1000 });
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  const started = performance.now();
  const pull = client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
    workers: 2,
  });
  const outcome = await within(pull, 5000);
  const elapsed = performance.now() - started;
  if (outcome === "timeout") {
    // Let the stalled stripe go so the test can end.
    await proxy.close();
    await pull.catch(() => {});
  }
  assert(outcome instanceof Error, `the pull still ran after ${Math.round(elapsed)} ms`);
  assertStrictEquals(out.bytes().byteLength, 0);
});

for (const hashThreads of [0, 2]) {
  Deno.test(`hostile: a 200 for a later stripe after the first stripe landed (memory, hashThreads ${hashThreads})`, async () => {
    await using registry = await startMemoryRegistry();
    await using tmp = await tempDir();
    const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "late200", PART + 999);
    await using proxy = await startFaultProxy({ target: registry.url });
    // workers 1: stripes go one after the other; the second one is answered whole.
    proxy.fault({ ...blobGets(digests[0]), nth: 2, ignoreRange: true });
    using client = new PartedClient({ plainHttp: true, hashThreads });
    const out = collector();
    await client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
      workers: 1,
    });
    assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
    const gets = blobGetsIn(proxy.log, digests[0]);
    // Its first stripe in a range, the second answered whole (refused), then the part whole.
    assertStrictEquals(gets.length, 3);
    assertStrictEquals(gets.filter((r) => r.headers.range === undefined).length, 1);
  });
}

Deno.test("hostile: Content-Range lies on a stripe fail the pull with no bytes out (spilled, removed)", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { ref, digests } = await pushed(registry.host, tmp.path, "lies", PART + 5);
  await using proxy = await startFaultProxy({ target: registry.url });
  const spill = `${tmp.path}/spill`;
  await Deno.mkdir(spill);
  using client = new PartedClient({ plainHttp: true });
  const end = STRIPE_BYTES - 1;
  const lies = [
    `bytes 0-${end}/${PART + 1}`, // wrong total
    `bytes 0-${end + 1}/${PART}`, // past the range asked
    `bytes 0-${end - 10}/${PART}`, // shorter than the body
    `bytes 5-${end}/${PART}`, // wrong start
    `bytes */${PART}`, // unsatisfied on a 206
    `bytes 0-${end}/*`, // no total
  ];
  for (const lie of lies) {
    proxy.clearFaults();
    proxy.fault({ ...blobGets(digests[0]), contentRange: lie, times: Infinity });
    const out = collector();
    const outcome = await within(
      client.pull(
        ref.replace(registry.host, proxy.host),
        toStream(out.writable, { memoryWindowBytes: 0, spillDirectory: spill }),
        { workers: 3 },
      ),
      10_000,
    );
    // "bytes 0-end/*" and a shorter range followed by a continuation are answers a registry may
    // give honestly: those may succeed, but only with the right bytes.
    if (!(outcome instanceof Error)) {
      assert(outcome !== "timeout", `${lie}: the pull hung`);
      assert(lie.endsWith("/*") || lie.includes(`-${end - 10}/`), `${lie}: accepted`);
    } else {
      assertStrictEquals(out.bytes().byteLength, 0, lie);
    }
    assertEquals(await entries(spill), [], lie);
  }
});

Deno.test("hostile: a 206 split into several portions, and a body cut mid-stripe, still give the file", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "split", PART + 77);
  await using proxy = await startFaultProxy({ target: registry.url });
  // The first stripe's answer is cut after 3 MiB (a broken body, continued within the stripe).
  proxy.fault({ ...blobGets(digests[0]), cutAfter: 3 * MiB });
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  await client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
    workers: 1,
  });
  assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
  const gets = blobGetsIn(proxy.log, digests[0]);
  // Three stripes, one continued: the continuation asks for the rest of the first stripe only.
  assertStrictEquals(gets.length, 4);
  assert(gets.some((r) => r.headers.range === `bytes=${3 * MiB}-${STRIPE_BYTES - 1}`));
});

Deno.test("hostile: a 416 for a stripe fails the pull promptly with no bytes of the part", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { ref, digests } = await pushed(registry.host, tmp.path, "r416", 2 * PART);
  await using proxy = await startFaultProxy({ target: registry.url });
  proxy.fault({
    ...blobGets(digests[1]),
    nth: 2,
    respond: { status: 416, headers: { "content-range": `bytes */${PART}` } },
  });
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  const outcome = await within(
    client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), { workers: 2 }),
    10_000,
  );
  assert(outcome instanceof Error, `outcome: ${String(outcome)}`);
  assertStrictEquals(out.bytes().byteLength, PART);
});

Deno.test("hostile: the reader going away while a stripe stalls stops the pull within 1 s", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { ref, digests } = await pushed(registry.host, tmp.path, "gone", 2 * PART);
  await using proxy = await startFaultProxy({ target: registry.url });
  // Every stripe of the second part stalls after a few bytes.
  proxy.fault({ ...blobGets(digests[1]), stallAfter: 10, times: Infinity });
  using client = new PartedClient({ plainHttp: true });
  let fail!: () => void;
  const failed = new Promise<void>((r) => (fail = r));
  let gone = 0;
  const writable = new WritableStream<Uint8Array>({
    write: async () => {
      // The first chunk of part 0 arrives; a moment later the reader leaves.
      await new Promise((r) => setTimeout(r, 500));
      gone = performance.now();
      fail();
      throw new Error("reader went away");
    },
  });
  const pull = client.pull(ref.replace(registry.host, proxy.host), toStream(writable), {
    workers: 4,
  });
  await failed;
  const outcome = await within(pull, 3000);
  const elapsed = performance.now() - gone;
  assert(outcome instanceof Error, `still running ${Math.round(elapsed)} ms later`);
  assert(elapsed < 1000, `stopped ${Math.round(elapsed)} ms after the reader left`);
});

Deno.test("hostile: aborting while every stripe stalls stops the pull within 1 s (spill removed)", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { ref, digests } = await pushed(registry.host, tmp.path, "abort", PART + 10);
  await using proxy = await startFaultProxy({ target: registry.url });
  proxy.fault({ ...blobGets(digests[0]), stallAfter: 10, times: Infinity });
  const spill = `${tmp.path}/spill`;
  await Deno.mkdir(spill);
  using client = new PartedClient({ plainHttp: true });
  const controller = new AbortController();
  const out = collector();
  const pull = client.pull(
    ref.replace(registry.host, proxy.host),
    toStream(out.writable, { memoryWindowBytes: 0, spillDirectory: spill }),
    { workers: 3, signal: controller.signal },
  );
  await new Promise((r) => setTimeout(r, 800));
  const aborted = performance.now();
  controller.abort(new Error("stop"));
  const outcome = await within(pull, 3000);
  const elapsed = performance.now() - aborted;
  assert(outcome instanceof Error && outcome.message === "stop", String(outcome));
  assert(elapsed < 1000, `stopped ${Math.round(elapsed)} ms after the abort`);
  assertEquals(await entries(spill), []);
});

for (const where of ["first", "last"] as const) {
  Deno.test(`hostile: a wrong byte in the ${where} stripe of part 1: none of part 1 out (spilled)`, async () => {
    await using registry = await startMemoryRegistry();
    await using tmp = await tempDir();
    const { bytes, ref, digests } = await pushed(registry.host, tmp.path, where, 2 * PART + 3);
    const wrong = bytes.slice(PART, 2 * PART);
    wrong[where === "first" ? 7 : PART - 1] ^= 0x01;
    registry.store.tamperBlob(digests[1], wrong);
    const spill = `${tmp.path}/spill`;
    await Deno.mkdir(spill);
    using client = new PartedClient({ plainHttp: true });
    const out = collector();
    await assertRejects(
      client.pull(
        ref,
        toStream(out.writable, { memoryWindowBytes: 0, spillDirectory: spill }),
        { workers: 4 },
      ),
      DigestMismatchError,
    );
    assertStrictEquals(out.bytes().byteLength, PART);
    assertStrictEquals(sha256Bytes(out.bytes()), digests[0]);
    assertEquals(await entries(spill), []);
  });
}

for (const size of [2 * STRIPE_BYTES, 2 * STRIPE_BYTES + 1]) {
  Deno.test(`hostile: a part of ${size} bytes (the striping boundary)`, async () => {
    await using registry = await startMemoryRegistry();
    await using tmp = await tempDir();
    const { bytes, ref, digests } = await pushed(registry.host, tmp.path, `b${size}`, size, size);
    await using proxy = await startFaultProxy({ target: registry.url });
    using client = new PartedClient({ plainHttp: true });
    const out = collector();
    await client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
      workers: 3,
    });
    assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
    const gets = blobGetsIn(proxy.log, digests[0]);
    if (size === 2 * STRIPE_BYTES) {
      assertStrictEquals(gets.length, 1);
    } else {
      assertEquals(
        new Set(gets.map((r) => r.headers.range)),
        new Set([
          `bytes=0-${STRIPE_BYTES - 1}`,
          `bytes=${STRIPE_BYTES}-${2 * STRIPE_BYTES - 1}`,
          `bytes=${2 * STRIPE_BYTES}-${2 * STRIPE_BYTES}`,
        ]),
      );
    }
  });
}

Deno.test("hostile: an empty file pulls into a stream as nothing", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  await Deno.writeFile(`${tmp.path}/empty.bin`, new Uint8Array());
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/stripes/empty:v1`;
  await client.push(ref, fromFile(`${tmp.path}/empty.bin`), { partSize: PART });
  const out = collector();
  const result = await client.pull(ref, toStream(out.writable), { workers: 4 });
  assertStrictEquals(result.size, 0);
  assertStrictEquals(out.bytes().byteLength, 0);
});

Deno.test("hostile: a 200 for one stripe while another stripe of the part stalls still gives the file promptly", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const { bytes, ref, digests } = await pushed(registry.host, tmp.path, "okstall", PART + 1000);
  await using proxy = await startFaultProxy({ target: registry.url });
  // The first stripe asked for is answered whole (200): the part is then fetched whole...
  proxy.fault({ ...blobGets(digests[0]), ignoreRange: true });
  // ...but the next stripe stalls after a few bytes and is never let go.
  proxy.fault({ ...blobGets(digests[0]), stallAfter: 1000 });
  using client = new PartedClient({ plainHttp: true });
  const out = collector();
  const pull = client.pull(ref.replace(registry.host, proxy.host), toStream(out.writable), {
    workers: 2,
  });
  const outcome = await within(pull, 5000);
  if (outcome === "timeout") {
    await proxy.close();
    await pull.catch(() => {});
  }
  assert(outcome !== "timeout", "the pull waits for a stalled stripe it no longer needs");
  assert(!(outcome instanceof Error), String(outcome));
  assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
});

// ---- A push from a byte stream (BYOB reads into the staged buffers) ----

const KiB = 1024;

/** The manifest digest of `bytes` pushed from a file with `partSize`. */
async function fileManifest(host: string, dir: string, bytes: Uint8Array, partSize: number) {
  await Deno.mkdir(`${dir}/ref`, { recursive: true });
  await Deno.writeFile(`${dir}/ref/w.bin`, bytes);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${host}/stripes/fileref:v${bytes.byteLength}`;
  return (await client.push(ref, fromFile(`${dir}/ref/w.bin`), { partSize })).digest;
}

for (
  const [label, size, partSize, piece] of [
    ["1 byte a read", 3 * 16 * KiB + 5, 16 * KiB, 1],
    ["exact part boundaries, parts not a stage multiple", 3 * (1536 * KiB), 1536 * KiB, 700 * KiB],
    ["exact part boundaries, parts a stage multiple", 2 * 2048 * KiB, 2048 * KiB, 333 * KiB],
    ["reads larger than a stage", 5 * 1024 * KiB + 17, 3 * 1024 * KiB, 3 * 1024 * KiB],
  ] as const
) {
  Deno.test(`hostile: BYOB push, ${label}: the same manifest as the file`, async () => {
    await using registry = await startMemoryRegistry();
    await using tmp = await tempDir();
    const bytes = patternBytes(size, 5);
    const expected = await fileManifest(registry.host, tmp.path, bytes, partSize);
    using client = new PartedClient({ plainHttp: true });
    const ref = `${registry.host}/stripes/byob:v1`;
    const spill = `${tmp.path}/spill`;
    await Deno.mkdir(spill);
    const got = await client.push(
      ref,
      fromStream(byteSource(bytes, piece), { name: "w.bin", spillDirectory: spill }),
      { partSize },
    );
    assertStrictEquals(got.digest, expected);
    assertEquals(await entries(spill), []);
    const out = collector();
    await client.pull(ref, toStream(out.writable));
    assertStrictEquals(sha256Bytes(out.bytes()), sha256Bytes(bytes));
  });
}

Deno.test("hostile: BYOB push of an empty byte stream is the empty file", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const expected = await fileManifest(registry.host, tmp.path, new Uint8Array(), 16 * KiB);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/stripes/empty-byob:v1`;
  const got = await client.push(
    ref,
    fromStream(byteSource(new Uint8Array(), 10), { name: "w.bin", spillDirectory: tmp.path }),
    { partSize: 16 * KiB },
  );
  assertStrictEquals(got.digest, expected);
});

Deno.test("hostile: BYOB push of a byte stream that fails right after a part boundary tags nothing", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const died = new Error("producer died");
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/stripes/died:v1`;
  const spill = `${tmp.path}/spill`;
  await Deno.mkdir(spill);
  await assertRejects(
    client.push(
      ref,
      fromStream(byteSource(patternBytes(2 * 16 * KiB), 4096, died), { spillDirectory: spill }),
      { partSize: 16 * KiB },
    ),
    (err: unknown) => err === died || (err as Error).cause === died,
  );
  assertEquals(await entries(spill), []);
  await assertRejects(client.inspect(ref));
});
