import { assert, assertEquals, assertThrows } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError, RetriesExhaustedError } from "../../src/errors/kinds.ts";
import {
  DigestMismatchError,
  NotFoundError,
  UnauthorizedError,
} from "../../src/errors/sentinels.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { statusCode } from "../../src/errors/status_code.ts";
import { THREADED_HASH_MIN_BYTES } from "../../src/hashing/stream_sha256.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { assertSafeError, blob, collect, instantClock, rejection } from "./_helpers.ts";

const MiB = 1024 * 1024;

const GET = { method: "GET", path: /\/blobs\/sha256:/ };

/** Reads a stream fully, returning the bytes read and the error it ended with, if any. */
async function drain(
  stream: ReadableStream<Uint8Array>,
): Promise<{ bytes: number; error?: unknown }> {
  let bytes = 0;
  try {
    for await (const chunk of stream) bytes += chunk.byteLength;
    return { bytes };
  } catch (error) {
    return { bytes, error: assertSafeError(error) };
  }
}

Deno.test("pull: a verified round trip with progress that only grows", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  // Several MiB: reads that arrive together are handed on in steps of up to 1 MiB.
  const { bytes, digest } = blob(3_000_003, 2);
  registry.store.putBlob("p/x", bytes);
  const seen: [number, number][] = [];
  let returned = false;
  const stream = await client.pull(`${registry.host}/p/x`, digest, {
    onProgress: (done, total) => {
      assert(!returned, "progress after the stream ended");
      seen.push([done, total]);
    },
  });
  const got = await collect(stream);
  returned = true;
  assertEquals(got, bytes);
  assert(seen.length > 1);
  for (let i = 1; i < seen.length; i++) assert(seen[i]![0] > seen[i - 1]![0]);
  assertEquals(seen.at(-1), [bytes.length, bytes.length]);
  assertEquals(
    registry.log.find((r) => r.method === "GET")!.headers["accept-encoding"],
    "identity",
  );
});

// Large bodies are hashed on a thread, small ones inline: both paths must behave the same.
const PATHS = [
  { label: "inline hash", base: 0, hashThreads: undefined },
  { label: "threaded hash", base: THREADED_HASH_MIN_BYTES, hashThreads: undefined },
  { label: "threads off", base: THREADED_HASH_MIN_BYTES, hashThreads: 0 },
];

for (const { label, base, hashThreads } of PATHS) {
  Deno.test(`pull: a blob that does not hash to its digest errors instead of ending (${label})`, async () => {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, hashThreads });
    const { bytes, digest } = blob(base + 300_000, 3);
    registry.store.putBlob("p/x", bytes);
    const tampered = bytes.slice();
    tampered[base + 12345] ^= 1;
    registry.store.tamperBlob(digest, tampered);
    const { bytes: read, error } = await drain(await client.pull(`${registry.host}/p/x`, digest));
    assertEquals(read, bytes.length);
    assert(findError(error, DigestMismatchError), String(error));
  });

  Deno.test(`pull: a cut body resumes from the last verified byte (${label})`, async () => {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, clock: instantClock(), hashThreads });
    const { bytes, digest } = blob(base + 2_000_000, 4);
    registry.store.putBlob("p/x", bytes);
    const first = base + 777_777;
    registry.fault({ ...GET, cutAfter: first });
    registry.fault({ ...GET, nth: 2, cutAfter: 500_000 });
    const got = await collect(await client.pull(`${registry.host}/p/x`, digest));
    assertEquals(got, bytes);
    const gets = registry.log.filter((r) => r.method === "GET");
    assertEquals(gets.map((r) => r.headers.range), [
      undefined,
      `bytes=${first}-`,
      `bytes=${first + 500_000}-`,
    ]);
  });
}

Deno.test("pull: hashThreads must be an integer in 0..256, and the refusal quotes the value", () => {
  for (const hashThreads of [-1, 1.5, 257, Number.NaN]) {
    const err = assertThrows(() => new BlobClient({ hashThreads }), RangeError);
    assertEquals(
      err.message,
      `BlobClient: hashThreads must be an integer in 0..256, not ${hashThreads}`,
    );
  }
});

Deno.test("pull: an abandoned large pull does not hold the process open", async () => {
  await using registry = await startFakeRegistry();
  const { bytes, digest } = blob(THREADED_HASH_MIN_BYTES + MiB, 8);
  registry.store.putBlob("p/x", bytes);
  await using dir = await tempDir();
  const script = `${dir.path}/abandon.ts`;
  const mod = new URL("../../src/blob/mod.ts", import.meta.url).href;
  await Deno.writeTextFile(
    script,
    `import { BlobClient } from ${JSON.stringify(mod)};
const client = new BlobClient({ plainHttp: true });
const stream = await client.pull(${JSON.stringify(`${registry.host}/p/x`)}, ${
      JSON.stringify(digest)
    });
const reader = stream.getReader();
let read = 0;
while (read < 4 * 1024 * 1024) read += (await reader.read()).value!.byteLength;
console.log("abandoned after", read > 0);
`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", script],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // A deadline far beyond a normal exit: only a process held open by the pull reaches it (the
  // stall watchdog's 60 s timer or a hashing thread did before).
  let held = false;
  const deadline = setTimeout(() => {
    held = true;
    child.kill("SIGKILL");
  }, 30_000);
  const { code, stdout, stderr } = await child.output();
  clearTimeout(deadline);
  assert(!held, "the process stayed open after the pull was abandoned");
  assertEquals(code, 0, new TextDecoder().decode(stderr));
  assertEquals(new TextDecoder().decode(stdout).trim(), "abandoned after true");
});

Deno.test("pull: the resume budget is the whole pull's attempt budget", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({
    plainHttp: true,
    clock: instantClock(),
    retryPolicy: { maxAttempts: 3 },
  });
  const { bytes, digest } = blob(100_000, 5);
  registry.store.putBlob("p/x", bytes);
  registry.fault({ ...GET, times: Infinity, cutAfter: 1000 });
  const { bytes: read, error } = await drain(await client.pull(`${registry.host}/p/x`, digest));
  assertEquals(read, 3000);
  assert(findError(error, RetriesExhaustedError), String(error));
  assertEquals(retryable(error).retryable, true);
  assertEquals(registry.count(GET), 3);
});

Deno.test("pull: without range support a broken body is an error, not a resume", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { bytes, digest } = blob(100_000, 6);
  registry.store.putBlob("p/x", bytes);
  registry.fault({ ...GET, cutAfter: 5000, headers: { "accept-ranges": null } });
  const { error } = await drain(await client.pull(`${registry.host}/p/x`, digest));
  assert(error !== undefined);
  assertEquals(registry.count(GET), 1);
});

Deno.test("pull: 416 with bytes */N equal to the delivered offset completes the pull", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { bytes, digest } = blob(50_000, 7);
  registry.store.putBlob("p/x", bytes);
  // No length, all bytes, then the connection drops: the client cannot know it has everything.
  registry.fault({ ...GET, headers: { "content-length": null }, cutAfter: bytes.length });
  // The 416 body is malformed like Distribution's (declares more than it sends): never read it.
  registry.fault({
    ...GET,
    nth: 2,
    respond: {
      status: 416,
      headers: { "content-range": `bytes */${bytes.length}`, "content-length": "1000" },
      body: "x".repeat(33),
    },
  });
  const seen: [number, number][] = [];
  const got = await collect(
    await client.pull(`${registry.host}/p/x`, digest, { onProgress: (d, t) => seen.push([d, t]) }),
  );
  assertEquals(got, bytes);
  assertEquals(seen[0]![1], -1);
  assertEquals(seen.at(-1), [bytes.length, bytes.length]);
  assertEquals(
    registry.log.filter((r) => r.method === "GET")[1]!.headers.range,
    `bytes=${bytes.length}-`,
  );
});

Deno.test("pull: any other 416 is terminal", async () => {
  for (const contentRange of ["bytes */999999", "bytes */10", "garbage"]) {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, clock: instantClock() });
    const { bytes, digest } = blob(50_000, 8);
    registry.store.putBlob("p/x", bytes);
    registry.fault({ ...GET, headers: { "content-length": null }, cutAfter: 20_000 });
    registry.fault({
      ...GET,
      nth: 2,
      respond: {
        status: 416,
        headers: { "content-range": contentRange, "content-length": "1000" },
      },
    });
    const { error } = await drain(await client.pull(`${registry.host}/p/x`, digest));
    assertEquals(statusCode(error), 416, contentRange);
    assertEquals(retryable(error).retryable, false);
    assertEquals(registry.count(GET), 2);
  }
});

Deno.test("pull: registry statuses map to sentinels; the size option is checked", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { bytes, digest } = blob(1000, 9);
  const missing = await rejection(client.pull(`${registry.host}/p/none`, digest));
  assert(findError(missing, NotFoundError));
  assertEquals(statusCode(missing), 404);
  assertEquals(await client.exists(`${registry.host}/p/none`, digest), false);
  registry.store.putBlob("p/x", bytes);
  for (const status of [401, 403]) {
    registry.fault({ ...GET, respond: { status } });
    const err = await rejection(client.pull(`${registry.host}/p/x`, digest));
    assert(findError(err, UnauthorizedError), String(err));
  }
  registry.fault({ method: "HEAD", respond: { status: 401 } });
  assert(
    findError(await rejection(client.exists(`${registry.host}/p/x`, digest)), UnauthorizedError),
  );
  const wrongSize = await rejection(client.pull(`${registry.host}/p/x`, digest, { size: 999 }));
  assert(findError(wrongSize, NotFoundError) === undefined);
  const ok = await collect(await client.pull(`${registry.host}/p/x`, digest, { size: 1000 }));
  assertEquals(ok, bytes);
  registry.fault({ ...GET, status: 204 });
  const unexpected = await rejection(client.pull(`${registry.host}/p/x`, digest));
  assertEquals(statusCode(unexpected), 204);
  assert(findError(unexpected, HttpStatusError) === undefined);
});

Deno.test("pull: cancelling the stream or aborting the signal stops the transfer", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  const { bytes, digest } = blob(3_000_000, 10);
  registry.store.putBlob("p/x", bytes);
  let calls = 0;
  let cancelled = false;
  const stream = await client.pull(`${registry.host}/p/x`, digest, {
    onProgress: () => {
      assert(!cancelled, "progress after cancel");
      calls++;
    },
  });
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel();
  cancelled = true;
  assert(calls >= 1);

  const controller = new AbortController();
  const reason = new Error("enough");
  const aborted = await client.pull(`${registry.host}/p/x`, digest, { signal: controller.signal });
  const r2 = aborted.getReader();
  await r2.read();
  controller.abort(reason);
  let error: unknown;
  try {
    for (;;) if ((await r2.read()).done) break;
  } catch (err) {
    error = err;
  }
  assert(error === reason, String(error));
  const before = await rejection(
    client.pull(`${registry.host}/p/x`, digest, { signal: controller.signal }),
  );
  assert(before === reason);
});
