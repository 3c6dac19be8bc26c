/**
 * Pulls into a `WritableStream` and pushes from a `ReadableStream`: order, the memory window
 * and its spill directory (removed on every exit), a reader that goes away, a producer that
 * fails, and a rerun that skips the parts present.
 */
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { fromFile, fromStream, PartedClient, toStream } from "../../mod.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { byteSource, collector, entries } from "./_streams.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { DigestMismatchError } from "../../src/errors/mod.ts";

const KiB = 1024;

function byteStream(bytes: Uint8Array, piece: number, fail?: Error): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.byteLength) {
        if (fail) controller.error(fail);
        else controller.close();
        return;
      }
      controller.enqueue(bytes.slice(at, at + piece));
      at += piece;
    },
  });
}

Deno.test("a pull into a stream spills a window larger than memory, in order, and removes it", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const bytes = patternBytes(10 * 16 * KiB + 5);
  await Deno.writeFile(`${tmp.path}/f.bin`, bytes);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/s/f:v1`;
  await client.push(ref, fromFile(`${tmp.path}/f.bin`), { partSize: 16 * KiB });
  const out = collector();
  const spill = `${tmp.path}/spill`;
  await Deno.mkdir(spill);
  const result = await client.pull(
    ref,
    toStream(out.writable, { memoryWindowBytes: 0, spillDirectory: spill }),
    { workers: 3 },
  );
  assert(result.spilled);
  assertEquals(out.bytes(), bytes);
  assertEquals(await entries(spill), []);
});

Deno.test("a window partly in memory, partly on disk, with reused chunks, arrives in order", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const MiB = 1024 * KiB;
  // Parts larger than one read back from disk, so a spilled part comes in several reads.
  const bytes = patternBytes(3 * 5 * MiB + 7);
  await Deno.writeFile(`${tmp.path}/f.bin`, bytes);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/s/m:v1`;
  await client.push(ref, fromFile(`${tmp.path}/f.bin`), { partSize: 5 * MiB });
  const spill = `${tmp.path}/spill`;
  await Deno.mkdir(spill);
  const chunks: Uint8Array[] = [];
  // A stream that is done with a chunk once its write resolves, and takes its time.
  const writable = new WritableStream<Uint8Array>({
    async write(chunk) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      chunks.push(chunk.slice());
    },
  });
  const result = await client.pull(
    ref,
    toStream(writable, { memoryWindowBytes: 5 * MiB, spillDirectory: spill, reuseChunks: true }),
    { workers: 3 },
  );
  assert(result.spilled);
  const out = new Uint8Array(chunks.reduce((sum, c) => sum + c.byteLength, 0));
  chunks.reduce((at, c) => (out.set(c, at), at + c.byteLength), 0);
  assertEquals(out.byteLength, bytes.byteLength);
  assertEquals(sha256Bytes(out), sha256Bytes(bytes));
  assertEquals(await entries(spill), []);
});

Deno.test("a part that fails before earlier parts verified: the output still ends at the part before it", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const part = 16 * KiB;
  const bytes = patternBytes(6 * part, 21);
  await Deno.writeFile(`${tmp.path}/f.bin`, bytes);
  using client = new PartedClient({ plainHttp: true });
  await client.push(`${registry.host}/s/late:v1`, fromFile(`${tmp.path}/f.bin`), {
    partSize: part,
  });
  const digestOf = (i: number) => sha256Bytes(bytes.subarray(i * part, (i + 1) * part));
  const wrong = bytes.slice(3 * part, 4 * part);
  wrong[5] ^= 0xff;
  registry.store.tamperBlob(digestOf(3), wrong);
  // Part 0 arrives late: part 3 has failed long before it verifies.
  await using proxy = await startFaultProxy({ target: registry.url });
  proxy.fault({ method: "GET", path: new RegExp(digestOf(0)), delayMs: 500 });
  const out = collector();
  await assertRejects(
    client.pull(`${proxy.host}/s/late:v1`, toStream(out.writable), { workers: 4 }),
    DigestMismatchError,
  );
  assertEquals(out.bytes(), bytes.subarray(0, 3 * part));
});

Deno.test("a reader that fails stops the pull and removes the spill directory", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  await Deno.writeFile(`${tmp.path}/f.bin`, patternBytes(40 * 16 * KiB));
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/s/g:v1`;
  await client.push(ref, fromFile(`${tmp.path}/f.bin`), { partSize: 16 * KiB });
  const spill = `${tmp.path}/spill`;
  await Deno.mkdir(spill);
  let writes = 0;
  const gone = new Error("reader gone");
  const writable = new WritableStream<Uint8Array>({
    write() {
      if (++writes === 2) throw gone;
    },
  });
  const started = performance.now();
  await assertRejects(
    client.pull(ref, toStream(writable, { memoryWindowBytes: 0, spillDirectory: spill })),
    (err) => err === gone,
  );
  assert(performance.now() - started < 1000);
  assertEquals(await entries(spill), []);
});

Deno.test("a push from a stream matches the file's manifest; a rerun skips the parts", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const bytes = patternBytes(3 * 16 * KiB + 100);
  await Deno.writeFile(`${tmp.path}/w.bin`, bytes);
  using client = new PartedClient({ plainHttp: true });
  const options = { partSize: 16 * KiB };
  const file = await client.push(`${registry.host}/s/a:v1`, fromFile(`${tmp.path}/w.bin`), options);
  let skipped = 0;
  const stream = await client.push(
    `${registry.host}/s/a:v2`,
    fromStream(byteStream(bytes, 7000), { name: "w.bin", spillDirectory: tmp.path }),
    { ...options, onProgress: (s) => void (skipped = s.partsSkipped ?? 0) },
  );
  assertStrictEquals(stream.digest, file.digest);
  assertStrictEquals(skipped, 4);
  assertEquals((await entries(tmp.path)).filter((n) => n.startsWith("ocipart-")), []);
});

Deno.test("a push from a byte stream matches the file's manifest, at part edges too, hashed inline and on threads", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  const options = { partSize: 16 * KiB };
  // A fast core hashes a stream's digests inline by default, a slow one on threads: both, here.
  for (const hashThreads of [0, 2]) {
    using hashing = new PartedClient({ plainHttp: true, hashThreads });
    // Two whole parts exactly, and two parts and a bit.
    for (const size of [2 * 16 * KiB, 2 * 16 * KiB + 3001]) {
      const bytes = patternBytes(size, size);
      await Deno.writeFile(`${tmp.path}/w.bin`, bytes);
      const file = await client.push(
        `${registry.host}/s/b:f${size}`,
        fromFile(`${tmp.path}/w.bin`),
        options,
      );
      const stream = await hashing.push(
        `${registry.host}/s/b:s${size}t${hashThreads}`,
        fromStream(byteSource(bytes, 5000), { name: "w.bin", spillDirectory: tmp.path }),
        options,
      );
      assertStrictEquals(stream.digest, file.digest, `${hashThreads} hashing threads`);
    }
  }
  const died = new Error("producer died");
  await assertRejects(
    client.push(
      `${registry.host}/s/b:dead`,
      fromStream(byteSource(patternBytes(50 * KiB), 4096, died), { spillDirectory: tmp.path }),
      options,
    ),
    (err) => err === died,
  );
  assertStrictEquals(registry.store.getManifest("s/b", "dead"), undefined);
  assertEquals((await entries(tmp.path)).filter((n) => n.startsWith("ocipart-")), []);
});

Deno.test("a producer that fails mid-stream leaves no manifest", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  const died = new Error("producer died");
  await assertRejects(
    client.push(
      `${registry.host}/s/dead:v1`,
      fromStream(byteStream(patternBytes(50 * KiB), 4096, died), { spillDirectory: tmp.path }),
      { partSize: 16 * KiB },
    ),
    (err) => err === died,
  );
  assertStrictEquals(registry.store.getManifest("s/dead", "v1"), undefined);
  assertEquals((await entries(tmp.path)).filter((n) => n.startsWith("ocipart-")), []);
});

Deno.test("an empty stream pushes an empty file", async () => {
  await using registry = await startMemoryRegistry();
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/s/empty:v1`;
  await client.push(ref, fromStream(new Blob([]).stream()));
  const out = collector();
  const result = await client.pull(ref, toStream(out.writable));
  assertStrictEquals(result.size, 0);
  assertStrictEquals(out.bytes().byteLength, 0);
});

/** Twenty parts of 16 KiB pushed to a memory registry as `name`, a client, and a spill directory. */
async function twentyParts(name: string) {
  const registry = await startMemoryRegistry();
  const tmp = await tempDir();
  await Deno.writeFile(`${tmp.path}/f.bin`, patternBytes(20 * 16 * KiB));
  const client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/s/${name}:v1`;
  await client.push(ref, fromFile(`${tmp.path}/f.bin`), { partSize: 16 * KiB });
  const spill = `${tmp.path}/spill`;
  await Deno.mkdir(spill);
  return {
    client,
    ref,
    spill,
    async [Symbol.asyncDispose]() {
      client[Symbol.dispose]();
      await tmp[Symbol.asyncDispose]();
      await registry[Symbol.asyncDispose]();
    },
  };
}

Deno.test("a pull into a stream whose reader never takes a write still stops at its signal", async () => {
  await using pushed = await twentyParts("stuck");
  const { client, ref, spill } = pushed;
  const stop = new AbortController();
  const reason = new Error("stopped");
  let stoppedAt = 0;
  // A full pipe nobody reads: the first write never completes.
  const writable = new WritableStream<Uint8Array>({
    write() {
      setTimeout(() => {
        stoppedAt = performance.now();
        stop.abort(reason);
      }, 100);
      return new Promise(() => {});
    },
  });
  const pulling = client.pull(
    ref,
    toStream(writable, { memoryWindowBytes: 0, spillDirectory: spill }),
    { signal: stop.signal },
  ).then(() => "finished", (err: unknown) => err);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    pulling,
    new Promise((resolve) => timer = setTimeout(() => resolve("still running"), 5_000)),
  ]);
  clearTimeout(timer);
  assertStrictEquals(outcome, reason);
  assert(stoppedAt > 0 && performance.now() - stoppedAt < 1000, "stopped within 1 s");
  assertEquals(await entries(spill), []);
});

Deno.test("a process that exits while its pull spills (a second Ctrl-C) takes the spill directory with it", async () => {
  await using pushed = await twentyParts("quit");
  const { ref, spill } = pushed;
  // The pull's writes are never taken; the process exits once its parts are on disk.
  const script = `
    import { PartedClient, toStream } from ${
    JSON.stringify(new URL("../../mod.ts", import.meta.url).href)
  };
    const client = new PartedClient({ plainHttp: true });
    const writable = new WritableStream({
      write() {
        setTimeout(() => Deno.exit(130), 100);
        return new Promise(() => {});
      },
    });
    await client.pull(${JSON.stringify(ref)}, toStream(writable, {
      memoryWindowBytes: 0,
      spillDirectory: ${JSON.stringify(spill)},
    }));
  `;
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    stdout: "null",
    stderr: "piped",
  }).output();
  assertStrictEquals(child.code, 130, new TextDecoder().decode(child.stderr));
  assertEquals(await entries(spill), []);
});

Deno.test("a pull into a stream stopped by its signal removes the spill directory", async () => {
  await using pushed = await twentyParts("h");
  const { client, ref, spill } = pushed;
  const stop = new AbortController();
  const reason = new Error("stopped");
  let sawSpill = false;
  const writable = new WritableStream<Uint8Array>({
    async write() {
      sawSpill ||= (await entries(spill)).length === 1;
      stop.abort(reason);
    },
  });
  await assertRejects(
    client.pull(ref, toStream(writable, { memoryWindowBytes: 0, spillDirectory: spill }), {
      signal: stop.signal,
    }),
    (err) => err === reason,
  );
  assert(sawSpill);
  assertEquals(await entries(spill), []);
});
