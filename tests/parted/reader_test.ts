/**
 * Random access: `PartedClient.open` → `readAt`, and `PartedClient.read` as a stream. Only the
 * parts a range touches are fetched; the part cache keeps nearby reads from fetching again.
 */
import { patternBytes } from "../fixtures/files.ts";
import { assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { fromStream, PartedClient } from "../../mod.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";

const part = 4096;

/**
 * A file of five and a bit parts (of `partSize`) pushed to a registry in memory, with a client and a directory
 * of the test's own (for temporary or cache files), all let go at the end of the scope.
 */
async function artifact(partSize = part) {
  const registry = await startMemoryRegistry();
  const client = new PartedClient({ plainHttp: true });
  const bytes = patternBytes(5 * partSize + 33);
  const ref = `${registry.host}/r/a:v1`;
  await client.push(ref, fromStream(new Blob([bytes]).stream()), { partSize });
  const dir = await Deno.makeTempDir({ prefix: "ocipart-reader-" });
  return {
    client,
    bytes,
    ref,
    dir,
    async [Symbol.asyncDispose]() {
      client.close();
      await registry.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("readAt fetches only the parts it touches, and the cache serves nearby reads", async () => {
  await using setup = await artifact();
  const { client, bytes, ref } = setup;
  await using reader = await client.open(ref);
  assertEquals(await reader.readAt(part - 3, 6), bytes.slice(part - 3, part + 3));
  assertStrictEquals(reader.bytesFetched, 2 * part);
  assertEquals(await reader.readAt(part + 100, 10), bytes.slice(part + 100, part + 110));
  assertStrictEquals(reader.bytesFetched, 2 * part);
  assertEquals(await reader.readAt(bytes.length - 33, 33), bytes.slice(-33));
  assertStrictEquals(reader.bytesFetched, 2 * part + 33);
  assertEquals(await reader.readAt(bytes.length, 0), new Uint8Array(0));
  await assertRejects(reader.readAt(bytes.length - 1, 2), RangeError);
});

Deno.test("read streams a range; past the end errors the stream with a RangeError", async () => {
  await using setup = await artifact();
  const { client, bytes, ref } = setup;
  const got = new Uint8Array(
    await new Response(client.read(ref, { offset: 10, length: 3 * part })).arrayBuffer(),
  );
  assertEquals(got, bytes.slice(10, 10 + 3 * part));
  const whole = new Uint8Array(await new Response(client.read(ref)).arrayBuffer());
  assertEquals(whole, bytes);
  await assertRejects(
    new Response(client.read(ref, { offset: bytes.length + 1 })).arrayBuffer(),
    RangeError,
  );
});

/** Reader options: no part in memory, one kept, in a temporary directory made in `spill`. */
function keepOneOnDisk(spill: string) {
  return { memoryWindowBytes: 0, spillDirectory: spill, cacheParts: 1 };
}

/** `promise`, or a failure after `ms`: a read that never ends fails the test instead of hanging it. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not done after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** The names in `dir` and in each directory under it. */
async function filesUnder(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    names.push(entry.name);
    if (entry.isDirectory) names.push(...await filesUnder(`${dir}/${entry.name}`));
  }
  return names;
}

Deno.test("parts beyond the memory window wait in temporary files, removed when the reader closes", async () => {
  await using setup = await artifact();
  const { client, bytes, ref, dir: spill } = setup;
  // Room in memory for two parts: the third part read waits in a file.
  const reader = await client.open(ref, {
    memoryWindowBytes: 2 * part,
    spillDirectory: spill,
    cacheParts: 3,
  });
  assertEquals(await reader.readAt(0, 3 * part), bytes.slice(0, 3 * part));
  const held = await filesUnder(spill);
  assertEquals(held.filter((name) => name.startsWith("part-")).length, 1, held.join(", "));
  // All three are kept: reading them again fetches nothing.
  assertEquals(await reader.readAt(part - 1, 2 * part), bytes.slice(part - 1, 3 * part - 1));
  assertStrictEquals(reader.bytesFetched, 3 * part);
  await reader.close();
  assertEquals(await filesUnder(spill), []);
});

Deno.test("a spilled part that leaves the cache during a read is read to its end, then removed", async () => {
  await using setup = await artifact();
  const { client, bytes, ref, dir: spill } = setup;
  await using reader = await client.open(ref, keepOneOnDisk(spill));
  // A read of part 0 begins, then reads of parts 1 and 2 push part 0 out of the cache.
  const first = reader.stream(0, part).getReader();
  const chunks = [(await first.read()).value!];
  assertEquals(await reader.readAt(part, part), bytes.slice(part, 2 * part));
  assertEquals(await reader.readAt(2 * part, part), bytes.slice(2 * part, 3 * part));
  for (let next = await first.read(); !next.done; next = await first.read()) {
    chunks.push(next.value);
  }
  assertEquals(concat(chunks), bytes.slice(0, part));
  // Only the part still cached keeps its file (the others go in the background); part 0 is
  // fetched again when asked.
  const held = async () => (await filesUnder(spill)).filter((name) => name.startsWith("part-"));
  for (let wait = 0; wait < 40 && (await held()).length > 1; wait++) await delay(50);
  assertEquals((await held()).map((name) => name.replace(/-\d+$/, "")), ["part-2"]);
  assertEquals(await reader.readAt(0, 10), bytes.slice(0, 10));
  assertStrictEquals(reader.bytesFetched, 4 * part);
});

Deno.test("open refuses a negative or fractional memory window", async () => {
  await using setup = await artifact();
  const { client, ref } = setup;
  for (const memoryWindowBytes of [-1, 0.5, Number.NaN]) {
    await assertRejects(() => client.open(ref, { memoryWindowBytes }), RangeError);
  }
});

Deno.test("a read across parts, with room for one kept part and none in memory, fetches each part once", async () => {
  await using setup = await artifact();
  const { client, bytes, ref, dir: spill } = setup;
  await using reader = await client.open(ref, keepOneOnDisk(spill));
  // The parts land together: each one kept pushes the one before out of the cache while its
  // read has not begun yet.
  assertEquals(await reader.readAt(10, 4 * part), bytes.slice(10, 10 + 4 * part));
  assertStrictEquals(reader.bytesFetched, 5 * part);
});

Deno.test("the cache directory drops partial files a killed process left an hour ago, not newer ones", async () => {
  await using setup = await artifact();
  const { client, bytes, ref, dir: cache } = setup;
  const old = `${cache}/${"a".repeat(64)}.left.partial`;
  const recent = `${cache}/${"b".repeat(64)}.running.partial`;
  await Deno.writeFile(old, new Uint8Array(10));
  await Deno.writeFile(recent, new Uint8Array(10));
  const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
  await Deno.utime(old, twoHoursAgo, twoHoursAgo);
  await using reader = await client.open(ref, { cacheDirectory: cache });
  assertEquals(await reader.readAt(0, 10), bytes.slice(0, 10));
  const names = (await filesUnder(cache)).sort();
  assertEquals(names.filter((name) => name.endsWith(".partial")), [recent.split("/").pop()]);
  assertStrictEquals(names.length, 2, names.join(", "));
});

// Parts of 3 MiB come out in chunks of 1 MiB: a read can pause inside a part.
const BIG = 3 * 1024 * 1024;

/** Equal bytes, or a failure naming the first difference (a diff of megabytes takes minutes). */
function assertSameBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  let at = 0;
  while (at < actual.length && at < expected.length && actual[at] === expected[at]) at++;
  if (at === actual.length && at === expected.length) return;
  throw new Error(
    `${what}: ${actual.length} bytes against ${expected.length}, first difference at ${at}`,
  );
}

/** A read of `stream` whose first chunk has arrived. */
async function started(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  const first = await reader.read();
  return {
    reader,
    /** Every byte of the stream, the first chunk included. */
    async rest(): Promise<Uint8Array> {
      const chunks = [first.value!];
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        chunks.push(next.value);
      }
      return concat(chunks);
    },
  };
}

Deno.test("a paused read of a part on disk gets every byte while the part is fetched again", async () => {
  await using setup = await artifact(BIG);
  const { bytes, ref, dir: spill } = setup;
  // A part takes about 100 ms to arrive.
  using slow = new PartedClient({ plainHttp: true, rateLimit: { bytesPerSecond: 32 << 20 } });
  await using reader = await slow.open(ref, keepOneOnDisk(spill));
  const paused = await started(reader.stream(0, BIG));
  // Part 1 pushes part 0 out of the cache; part 0 is fetched again while the paused read goes on.
  assertEquals(await reader.readAt(BIG, 10), bytes.slice(BIG, BIG + 10));
  const again = reader.readAt(0, BIG);
  await delay(30);
  assertSameBytes(await within(10_000, paused.rest()), bytes.slice(0, BIG), "the paused read");
  assertSameBytes(await within(10_000, again), bytes.slice(0, BIG), "the read again");
});

Deno.test("paused reads hold their parts within the memory window: the others wait on disk", async () => {
  await using setup = await artifact(BIG);
  const { client, bytes, ref, dir: spill } = setup;
  // Room in memory for two parts, one part kept: each new read pushes the one before out of
  // the cache, but its paused read still holds its bytes.
  await using reader = await client.open(ref, {
    memoryWindowBytes: 2 * BIG,
    spillDirectory: spill,
    cacheParts: 1,
  });
  const reads = [];
  for (let i = 0; i < 5; i++) reads.push(await started(reader.stream(i * BIG, BIG)));
  const onDisk = (await filesUnder(spill)).filter((name) => name.startsWith("part-"));
  assertStrictEquals(onDisk.length, 3, onDisk.join(", "));
  for (const [i, read] of reads.entries()) {
    assertSameBytes(await read.rest(), bytes.slice(i * BIG, (i + 1) * BIG), `read ${i}`);
  }
});

Deno.test("reads cancelled while their part is on its way keep no temporary file", async () => {
  await using setup = await artifact(BIG);
  const { ref, dir: spill } = setup;
  // A part takes about 100 ms to arrive: each read is cancelled while its part is on its way.
  using slow = new PartedClient({ plainHttp: true, rateLimit: { bytesPerSecond: 32 << 20 } });
  await using reader = await slow.open(ref, keepOneOnDisk(spill));
  const onDisk = async () => (await filesUnder(spill)).filter((name) => name.startsWith("part-"));
  for (let i = 0; i < 5; i++) {
    const stream = reader.stream(i * BIG, 10).getReader();
    const reading = stream.read();
    const fetching = async () => (await onDisk()).some((name) => name.startsWith(`part-${i}`));
    for (let wait = 0; wait < 100 && !(await fetching()); wait++) await delay(5);
    await stream.cancel();
    await reading;
  }
  // Once every fetch has landed, only the part kept has a file.
  for (let wait = 0; wait < 100 && reader.bytesFetched < 5 * BIG; wait++) await delay(50);
  assertStrictEquals(reader.bytesFetched, 5 * BIG, "every part landed");
  for (let wait = 0; wait < 40 && (await onDisk()).length > 1; wait++) await delay(50);
  assertStrictEquals((await onDisk()).length, 1, (await onDisk()).join(", "));
});

Deno.test("the cache directory keeps the parts read last, and readers sharing it each read whole", async () => {
  await using setup = await artifact();
  const { client, bytes, ref, dir: cache } = setup;
  {
    await using reader = await client.open(ref, { cacheDirectory: cache, cacheParts: 2 });
    // Parts 0, 1, 0, 2, 0: part 0 is read last and most; part 1 is the one to drop. (Times of
    // use are kept in milliseconds: the reads are that far apart, as a part's fetch would be.)
    for (const index of [0, 1, 0, 2, 0]) {
      await delay(5);
      assertEquals(
        await reader.readAt(index * part, 10),
        bytes.slice(index * part, index * part + 10),
      );
    }
  }
  const kept = (await filesUnder(cache)).filter((name) => /^[0-9a-f]{64}$/.test(name)).sort();
  const digestOf = async (index: number) =>
    Array.from(
      new Uint8Array(
        await crypto.subtle.digest("SHA-256", bytes.slice(index * part, (index + 1) * part)),
      ),
      (byte) => byte.toString(16).padStart(2, "0"),
    ).join("");
  assertEquals(kept, [await digestOf(0), await digestOf(2)].sort());
  // Two readers trimming one directory to one part, many reads at once: every read whole.
  await using first = await client.open(ref, { cacheDirectory: cache, cacheParts: 1 });
  await using second = await client.open(ref, { cacheDirectory: cache, cacheParts: 1 });
  const reads = [];
  for (let i = 0; i < 60; i++) {
    const offset = (i * 1531) % (bytes.length - 700);
    const reader = i % 2 === 0 ? first : second;
    reads.push(
      reader.readAt(offset, 700).then((got) =>
        assertEquals(got, bytes.slice(offset, offset + 700))
      ),
    );
  }
  await Promise.all(reads);
});

Deno.test("a read under way when the reader closes ends with the reader's error", async () => {
  await using setup = await artifact(BIG);
  const { client, ref } = setup;
  const reader = await client.open(ref);
  const paused = await started(reader.stream(0, BIG));
  await reader.close();
  await assertRejects(() => paused.rest(), DOMException, "the reader was closed");
});

Deno.test("a read whose next part is still to come ends with the reader's error when it closes", async () => {
  await using setup = await artifact();
  const { client, ref, dir: spill } = setup;
  const reader = await client.open(ref, keepOneOnDisk(spill));
  // The first chunk is all of part 0; part 1 is not asked for yet.
  const paused = await started(reader.stream(0, 3 * part));
  await reader.close();
  await assertRejects(() => paused.rest(), DOMException, "the reader was closed");
});

Deno.test("a kept file cut short on disk fails one read, then the part is fetched again", async () => {
  await using setup = await artifact();
  const { client, bytes, ref, dir: cache } = setup;
  await using reader = await client.open(ref, { cacheDirectory: cache });
  assertEquals(await reader.readAt(0, 10), bytes.slice(0, 10));
  const [kept] = (await filesUnder(cache)).filter((name) => /^[0-9a-f]{64}$/.test(name));
  await Deno.truncate(`${cache}/${kept}`, 100);
  await assertRejects(() => reader.readAt(0, 1000), Error, "ended early");
  assertEquals(await reader.readAt(0, 1000), bytes.slice(0, 1000));
  assertStrictEquals(reader.bytesFetched, 2 * part);
});

Deno.test("a kept file replaced on disk is hashed again when the reader takes it up again", async () => {
  await using setup = await artifact();
  const { client, bytes, ref, dir: cache } = setup;
  await using reader = await client.open(ref, { cacheDirectory: cache, cacheParts: 1 });
  assertEquals(await reader.readAt(0, 10), bytes.slice(0, 10));
  const [first] = (await filesUnder(cache)).filter((name) => /^[0-9a-f]{64}$/.test(name));
  // Part 1 pushes part 0 out of the directory; a file of the same size takes its name.
  assertEquals(await reader.readAt(part, 10), bytes.slice(part, part + 10));
  await Deno.writeFile(`${cache}/${first}`, new Uint8Array(part).fill(7));
  assertEquals(await reader.readAt(0, 10), bytes.slice(0, 10));
  assertStrictEquals(reader.bytesFetched, 3 * part);
});
