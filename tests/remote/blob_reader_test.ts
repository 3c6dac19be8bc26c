/**
 * The one blob reader, tested directly: continuations and their budget, the two ways of taking a
 * whole answer to a continuation, ranged portions, answers longer than they said, and stops.
 */
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { blob, instantClock } from "../blob/_helpers.ts";
import { BlobReader, type BlobReadOptions, EMIT_BYTES } from "../../src/remote/blob_reader.ts";
import { RemoteRepository } from "../../src/remote/repository.ts";
import { BLOB_SPEC_POLICY } from "../../src/remote/policy.ts";
import { AttemptBudget, type RetryPolicy } from "../../src/remote/retry.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import {
  LengthMismatchError,
  ProtocolError,
  RetriesExhaustedError,
} from "../../src/errors/kinds.ts";

const GET = { method: "GET", path: /\/blobs\/sha256:/ };
const POLICY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 1 };

async function setup(size: number) {
  const registry = await startFakeRegistry();
  const transport = new HttpTransport();
  const { bytes, digest } = blob(size, 7);
  registry.store.putBlob("r/x", bytes);
  const repo = new RemoteRepository({
    origin: new URL(registry.url),
    name: "r/x",
    transport: transport.fetch,
    storageTransport: transport.fetch,
    redirects: BLOB_SPEC_POLICY.redirects,
  });
  return {
    registry,
    bytes,
    digest,
    repo,
    budget: (policy = POLICY) => new AttemptBudget(policy, instantClock(), signal),
    async [Symbol.asyncDispose]() {
      transport.close();
      await registry.close();
    },
  };
}

const signal = new AbortController().signal;

/** Every chunk of `reader`, with the offset it said. */
async function readAll(reader: BlobReader, into?: number) {
  const chunks: { offset: number; bytes: Uint8Array }[] = [];
  for (;;) {
    const chunk = await reader.read(into === undefined ? undefined : new Uint8Array(into));
    if (chunk === undefined) return chunks;
    chunks.push({ offset: chunk.offset, bytes: chunk.bytes.slice() });
  }
}

/** The blob the chunks make, a restart overwriting from its offset. */
function assemble(size: number, chunks: { offset: number; bytes: Uint8Array }[]): Uint8Array {
  const out = new Uint8Array(size);
  for (const { offset, bytes } of chunks) out.set(bytes, offset);
  return out;
}

function ranges(registry: { log: { method: string; headers: Record<string, string> }[] }) {
  return registry.log.filter((r) => r.method === "GET").map((r) => r.headers.range ?? "");
}

Deno.test("blob reader: a broken body continues from the byte reached, spending one attempt", async () => {
  await using env = await setup(300_000);
  env.registry.fault({ ...GET, cutAfter: 100_000 });
  const budget = env.budget();
  const reader = await BlobReader.open(env.repo, env.digest, {
    budget,
    signal,
    total: env.bytes.length,
  });
  const chunks = await readAll(reader);
  assertEquals(assemble(env.bytes.length, chunks), env.bytes);
  assertEquals(ranges(env.registry), ["", "bytes=100000-"]);
  assertEquals(budget.used, 2);
  assertEquals(reader.position, env.bytes.length);
});

Deno.test("blob reader: a whole answer to a continuation is skipped past, or read again from byte zero", async () => {
  for (const wholeAgain of ["skip", "restart"] as const) {
    await using env = await setup(300_000);
    env.registry.fault({ ...GET, cutAfter: 120_000 });
    env.registry.fault({ ...GET, nth: 2, ignoreRange: true });
    const reader = await BlobReader.open(env.repo, env.digest, {
      budget: env.budget(),
      signal,
      total: env.bytes.length,
      wholeAgain,
    });
    const chunks = await readAll(reader);
    assertEquals(assemble(env.bytes.length, chunks), env.bytes, wholeAgain);
    assertEquals(env.registry.count(GET), 2, "no extra request for the 200");
    const offsets = chunks.map((c) => c.offset);
    const restarted = offsets.some((offset, i) => i > 0 && offset < offsets[i - 1]);
    assertEquals(restarted, wholeAgain === "restart", `${wholeAgain}: ${offsets}`);
    if (wholeAgain === "skip") {
      const delivered = chunks.reduce((n, c) => n + c.bytes.length, 0);
      assertEquals(delivered, env.bytes.length, "nothing handed on twice");
    }
  }
});

Deno.test("blob reader: reads into the caller's buffers, a break included", async () => {
  await using env = await setup(3 * 1024 * 1024 + 5);
  env.registry.fault({ ...GET, cutAfter: 1024 * 1024 + 3 });
  const reader = await BlobReader.open(env.repo, env.digest, {
    budget: env.budget(),
    signal,
    total: env.bytes.length,
  });
  const chunks = await readAll(reader, 256 * 1024);
  assert(chunks.every((c) => c.bytes.length <= 256 * 1024), "at most the buffer's size");
  assertEquals(assemble(env.bytes.length, chunks), env.bytes);
});

Deno.test("blob reader: every continuation spends the budget; the last failure names the read", async () => {
  await using env = await setup(200_000);
  env.registry.fault({ ...GET, cutAfter: () => 10_000, times: Infinity });
  const reader = await BlobReader.open(env.repo, env.digest, {
    label: "part 3: download",
    budget: env.budget({ maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 }),
    signal,
    total: env.bytes.length,
  });
  const err = await assertRejects(() => readAll(reader), RetriesExhaustedError);
  assertEquals(err.message, "part 3: download: failed after 3 attempts");
  assertEquals(env.registry.count(GET), 3);
});

Deno.test("blob reader: a ranged read continues shorter portions and refuses a body past its range", async () => {
  await using env = await setup(100_000);
  const end = 59_999;
  // The registry splits the range: the first portion ends at 29 999.
  env.registry.fault({ ...GET, contentRange: "bytes 10000-29999/100000", cutAfter: 20_000 });
  const reader = await BlobReader.open(env.repo, env.digest, {
    budget: env.budget(),
    signal,
    offset: 10_000,
    end,
  });
  const chunks = await readAll(reader);
  const got = chunks.flatMap((c) => [...c.bytes]);
  assertEquals(new Uint8Array(got), env.bytes.subarray(10_000, end + 1));
  assertEquals(ranges(env.registry), ["bytes=10000-59999", "bytes=30000-59999"]);

  env.registry.fault({ ...GET, contentRange: "bytes 0-9/100000" });
  const longer = await BlobReader.open(env.repo, env.digest, {
    budget: env.budget(),
    signal,
    offset: 0,
    end: 99,
  });
  const err = await assertRejects(() => readAll(longer), ProtocolError);
  assertEquals(err.message, "GET blob range: body longer than its Content-Range");
});

Deno.test("blob reader: a whole answer longer than the blob is another blob, not retried", async () => {
  await using env = await setup(50_000);
  const budget = env.budget();
  const reader = await BlobReader.open(
    env.repo,
    env.digest,
    {
      budget,
      signal,
      total: 40_000,
    } satisfies BlobReadOptions,
  ).catch((err) => err);
  // The registry states the length: the answer is refused before its body is read.
  assert(reader instanceof LengthMismatchError, String(reader));
  assertEquals(budget.used, 1);
});

Deno.test("blob reader: reads that arrive together are joined, up to a limit", async () => {
  await using env = await setup(3 * EMIT_BYTES + 17);
  const reader = await BlobReader.open(env.repo, env.digest, {
    budget: env.budget(),
    signal,
    total: env.bytes.length,
  });
  const chunks: Uint8Array[] = [];
  for (let c = await reader.readJoined(); c !== undefined; c = await reader.readJoined()) {
    chunks.push(c.bytes.slice());
  }
  assert(chunks.every((c) => c.length <= EMIT_BYTES + 64 * 1024));
  assert(chunks.length < 3 * EMIT_BYTES / (64 * 1024), `${chunks.length} chunks`);
  assertEquals(new Uint8Array(chunks.flatMap((c) => [...c])), env.bytes);
});

Deno.test("blob reader: a stopped read rejects with the stop's reason within a second", async () => {
  await using env = await setup(500_000);
  env.registry.fault({ ...GET, stallAfter: 100_000 });
  const stop = new AbortController();
  const reader = await BlobReader.open(env.repo, env.digest, {
    budget: new AttemptBudget(POLICY, instantClock(), stop.signal),
    signal: stop.signal,
    total: env.bytes.length,
  });
  const reading = readAll(reader);
  setTimeout(() => stop.abort(new Error("stopped by the caller")), 200);
  const started = performance.now();
  const err = await assertRejects(() => reading, Error);
  assertEquals(err.message, "stopped by the caller");
  assert(performance.now() - started < 1000 + 200);
});
