/**
 * A push of a file sends parts while they are hashed once the registry has lacked a part: each
 * such part reaches the registry before its digest is known (first chunk alone, then the rest)
 * and is committed under that digest; nothing goes early before a part was missing (a rerun);
 * a registry that refuses chunks gets the parts the usual way; a part found present once hashed
 * is not committed; a stop during a chunk ends within 1 s. The digests are handed over by the
 * test, so every step's order is the test's, on any machine; an end-to-end push against
 * Distribution gives the same manifest as the same bytes pushed from a stream.
 */
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import { makeSelfSigned } from "../fixtures/tls.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { fromFile, fromStream, PartedClient } from "../../mod.ts";
import { RemoteRepository } from "../../src/remote/repository.ts";
import { BLOB_SPEC_POLICY } from "../../src/remote/policy.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { LIVE_CHUNK_BYTES, LiveChoice } from "../../src/parted/live_upload.ts";
import { finishPart } from "../../src/parted/live_upload.ts";
import { type PartTurn, PartTurns } from "../../src/parted/part_turns.ts";
import { planParts } from "../../src/parted/plan.ts";
import { ProgressTracker } from "../../src/parted/progress.ts";
import type { PartDescriptor } from "../../src/parted/manifest.ts";

const MiB = 1 << 20;
const PART = 2 * LIVE_CHUNK_BYTES;
const REPO = "turns/a";

const requests = (proxy: FaultProxy, method: string) =>
  proxy.log.filter((r) => r.method === method && r.repository === REPO);
const bytesOf = (proxy: FaultProxy, method: string) =>
  requests(proxy, method).reduce((n, r) => n + r.bodyBytes, 0);

/** Waits (at most 10 s) until `check` holds. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (const end = Date.now() + 10_000; !check();) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A file of `bytes`, its parts' descriptors, and turns over it against a memory registry. */
async function setup(bytes: Uint8Array, signal = new AbortController().signal) {
  const registry = await startMemoryRegistry();
  const proxy = await startFaultProxy({ target: registry.url });
  const tmp = await tempDir();
  const transport = new HttpTransport();
  const path = `${tmp.path}/f.bin`;
  await Deno.writeFile(path, bytes);
  const plan = planParts(bytes.byteLength, PART);
  const parts: PartDescriptor[] = plan.map((p) => ({
    ...p,
    digest: sha256Bytes(bytes.subarray(p.offset, p.offset + p.size)),
  }));
  const repo = new RemoteRepository({
    origin: new URL(proxy.url),
    name: REPO,
    transport: transport.fetch,
    storageTransport: transport.fetch,
    redirects: BLOB_SPEC_POLICY.redirects,
  });
  const choice = new LiveChoice(PART);
  const progress = new ProgressTracker(bytes.byteLength, plan.length, "hashing");
  const turns = new PartTurns(plan, path, choice, {
    repo,
    progress,
    signal,
    beforeUpload: () => Promise.resolve(),
    choice,
  });
  // The usual upload, as the push makes it: the registry lacked the part.
  const upload = async (part: PartDescriptor) => {
    choice.missing();
    const { openUpload, completeUpload } = await import("../../src/remote/uploads.ts");
    const session = await openUpload(repo, signal);
    const { fileBody } = await import("../../src/transport/file_body.ts");
    await completeUpload(repo, session, part.digest, part.size, {
      make: () => fileBody(path, part.offset, part.size),
      replayable: true,
    }, signal);
    return "uploaded" as const;
  };
  const finish = (turn: PartTurn | undefined) => {
    if (turn === undefined) throw new Error("no turn");
    return finishPart(turn.part, turn.live, choice, async () => {
      if (await repo.exists(turn.part.digest, signal)) return "skipped";
      return await upload(turn.part);
    });
  };
  return {
    registry,
    proxy,
    parts,
    turns,
    choice,
    finish,
    async [Symbol.asyncDispose]() {
      transport.close();
      await proxy.close();
      await registry.close();
      await tmp[Symbol.asyncDispose]();
    },
  };
}

Deno.test("turns: once a part was missing, the parts not hashed yet reach the registry before their digests, and are stored under them", async () => {
  const bytes = patternBytes(3 * PART + 5 * MiB, 21);
  await using s = await setup(bytes);
  const waiting = [s.turns.next(), s.turns.next(), s.turns.next(), s.turns.next()];
  // Nothing goes before a verdict.
  await new Promise((resolve) => setTimeout(resolve, 50));
  assertEquals(requests(s.proxy, "POST").length, 0);
  s.turns.hashed(s.parts[0]);
  const first = await waiting[0];
  assertStrictEquals(first?.live, undefined);
  assertStrictEquals(await s.finish(first), "uploaded");
  // Parts 1 and 2 are sent while their digests are still unknown, each first chunk alone; the
  // last part, shorter than a chunk, waits for its digest.
  await until(() => bytesOf(s.proxy, "PATCH") === 2 * PART, "parts 1 and 2 sent");
  assertEquals(requests(s.proxy, "PATCH").map((r) => r.bodyBytes), [
    LIVE_CHUNK_BYTES,
    LIVE_CHUNK_BYTES,
    LIVE_CHUNK_BYTES,
    LIVE_CHUNK_BYTES,
  ]);
  for (const part of s.parts.slice(1)) s.turns.hashed(part);
  const outcomes = await Promise.all(waiting.slice(1).map(async (w) => s.finish(await w)));
  assertEquals(outcomes, ["uploaded", "uploaded", "uploaded"]);
  assertEquals(bytesOf(s.proxy, "PATCH"), 2 * PART + 5 * MiB);
  for (const part of s.parts) {
    assert(s.registry.store.hasBlob(REPO, part.digest), `part ${part.index}`);
  }
  assertStrictEquals(await s.turns.next(), undefined);
});

Deno.test("turns: a rerun, whose first part is present, sends nothing before asking", async () => {
  const bytes = patternBytes(2 * PART, 22);
  await using s = await setup(bytes);
  for (const part of s.parts) {
    s.registry.store.putBlob(REPO, bytes.slice(part.offset, part.offset + part.size));
  }
  const waiting = [s.turns.next(), s.turns.next()];
  s.turns.hashed(s.parts[0]);
  assertStrictEquals(await s.finish(await waiting[0]), "exists");
  s.turns.hashed(s.parts[1]);
  const second = await waiting[1];
  assertStrictEquals(second?.live, undefined);
  assertStrictEquals(await s.finish(second), "exists");
  assertEquals(s.proxy.log.filter((r) => r.method !== "HEAD").length, 0);
});

Deno.test("turns: a registry that refuses chunks gets one chunk from each part on its way, then the parts the usual way", async () => {
  const bytes = patternBytes(3 * PART, 23);
  await using s = await setup(bytes);
  s.proxy.fault({ method: "PATCH", respond: { status: 405 }, times: 1000 });
  const waiting = [s.turns.next(), s.turns.next(), s.turns.next()];
  s.turns.hashed(s.parts[0]);
  await s.finish(await waiting[0]);
  await until(() => requests(s.proxy, "PATCH").length === 2, "a chunk of each waiting part");
  assert(!s.choice.wantedWhole, "no part goes early after a refusal");
  s.turns.hashed(s.parts[1]);
  s.turns.hashed(s.parts[2]);
  const outcomes = await Promise.all(waiting.slice(1).map(async (w) => s.finish(await w)));
  assertEquals(outcomes, ["uploaded", "uploaded"]);
  // No part was sent whole by PATCH: only the refused first chunks.
  assertEquals(requests(s.proxy, "PATCH").map((r) => r.bodyBytes), [
    LIVE_CHUNK_BYTES,
    LIVE_CHUNK_BYTES,
  ]);
  for (const part of s.parts) assert(s.registry.store.hasBlob(REPO, part.digest));
});

Deno.test("turns: a part sent early and found present once hashed is not committed: its chunk stops, its session ends, it counts as present", async () => {
  // Part 2 is part 0 again: the registry has it by the time part 2's digest is known.
  const first = patternBytes(PART, 24);
  const bytes = new Uint8Array(3 * PART);
  bytes.set(first, 0);
  bytes.set(patternBytes(PART, 25), PART);
  bytes.set(first, 2 * PART);
  await using s = await setup(bytes);
  // Bodies crawl: part 2's chunk is still on its way when its digest is known.
  s.proxy.fault({ method: "PATCH", throttleRequest: 8 * MiB, times: 1000 });
  const waiting = [s.turns.next(), s.turns.next(), s.turns.next()];
  s.turns.hashed(s.parts[0]);
  await s.finish(await waiting[0]);
  await until(() => requests(s.proxy, "PATCH").length === 2, "parts 1 and 2 on their way");
  s.turns.hashed(s.parts[2]);
  const started = performance.now();
  assertStrictEquals(await s.finish(await waiting[2]), "exists");
  assert(performance.now() - started < 1000, "the present part ends without waiting for its chunk");
  await until(() => requests(s.proxy, "DELETE").length === 1, "the session ended");
  s.turns.hashed(s.parts[1]);
  assertStrictEquals(await s.finish(await waiting[1]), "uploaded");
  assertEquals(requests(s.proxy, "PUT").length, 2);
});

Deno.test("turns: a stop while a part is on its way ends its turn within 1 s", async () => {
  const controller = new AbortController();
  const bytes = patternBytes(2 * PART, 26);
  await using s = await setup(bytes, controller.signal);
  s.proxy.fault({ method: "PATCH", throttleRequest: MiB, times: 1000 });
  const waiting = [s.turns.next(), s.turns.next()];
  s.turns.hashed(s.parts[0]);
  await s.finish(await waiting[0]);
  await until(() => requests(s.proxy, "PATCH").length === 1, "part 1 on its way");
  const started = performance.now();
  controller.abort(new Error("stopped"));
  await assertRejects(() => waiting[1], Error, "stopped");
  assert(performance.now() - started < 1000, "stopped within 1 s");
});

registryTest(
  "a push of a file that sends parts while they are hashed gives Distribution the stream push's manifest, and a rerun sends no part",
  {},
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: `http://${registry.host}` });
    await using tmp = await tempDir();
    using client = new PartedClient({ plainHttp: true });
    const bytes = patternBytes(4 * PART + 3 * MiB, 27);
    const path = `${tmp.path}/w.bin`;
    await Deno.writeFile(path, bytes);
    const repository = "turns/e2e";
    const pushed = await client.push(`${proxy.host}/${repository}:v1`, fromFile(path), {
      partSize: PART,
    });
    const streamed = await client.push(
      `${registry.host}/turns/stream:v1`,
      fromStream(ReadableStream.from([bytes]), { name: "w.bin", spillDirectory: tmp.path }),
      { partSize: PART },
    );
    assertStrictEquals(pushed.digest, streamed.digest);
    const before = proxy.log.length;
    await client.push(`${proxy.host}/${repository}:v2`, fromFile(path), { partSize: PART });
    const rerun = proxy.log.slice(before);
    assertEquals(rerun.filter((r) => r.method === "POST" || r.method === "PATCH").length, 0);
  },
);

registryTest(
  "sent while hashed in every TLS mode, with credentials, direct and through a proxy: chunks went, the manifest is the stream push's, a rerun sends no part",
  { needs: ["openssl", "tinyproxy"] },
  async () => {
    await using tmp = await tempDir();
    await using tokens = await startTokenServer({ users: { alice: "pw" } });
    const token = {
      realm: tokens.realm,
      service: tokens.service,
      issuer: tokens.issuer,
      rootCertBundle: tokens.rootCertBundle,
    };
    const selfSigned = await makeSelfSigned(tmp.path);
    await using plain = await startRegistry({ token });
    // The token server speaks plain HTTP, which an HTTPS registry's realm may not: basic auth.
    const htpasswd = { alice: "pw" };
    await using signed = await startRegistry({ htpasswd, tls: true });
    await using pinned = await startRegistry({ htpasswd, tls: selfSigned });
    await using proxy = await startTinyproxy();
    const credential = { username: "alice", password: "pw" };
    const bytes = patternBytes(2 * PART + 3 * MiB, 28);
    const path = `${tmp.path}/w.bin`;
    await Deno.writeFile(path, bytes);
    const expected = await (async () => {
      using client = new PartedClient({ plainHttp: true, credential });
      const stream = fromStream(ReadableStream.from([bytes]), { name: "w.bin" });
      return (await client.push(`${plain.host}/turns/stream:v1`, stream, { partSize: PART }))
        .digest;
    })();
    const viaProxy = { proxy: { http: proxy.url, https: proxy.url } };
    const modes = [
      { name: "plain HTTP", host: plain.host, tls: { plainHttp: true }, via: {} },
      { name: "CA-signed", host: signed.host, tls: { caCerts: [signed.caCert!] }, via: {} },
      { name: "pinned", host: pinned.host, tls: { caCerts: [selfSigned.cert] }, via: {} },
      { name: "unverified", host: pinned.host, tls: { insecureTls: true }, via: {} },
      { name: "plain proxied", host: plain.host, tls: { plainHttp: true }, via: viaProxy },
      {
        name: "pinned proxied",
        host: pinned.host,
        tls: { caCerts: [selfSigned.cert] },
        via: viaProxy,
      },
    ];
    for (const mode of modes) {
      const transport = new HttpTransport({ ...mode.tls, ...mode.via });
      const seen: string[] = [];
      using client = new PartedClient({
        ...mode.tls,
        credential,
        transport: async (request: Request) => {
          const response = await transport.fetch(request);
          seen.push(`${request.method} ${response.status}`);
          return response;
        },
      });
      try {
        const repository = `turns/${mode.name.replace(/[^a-z]/gi, "").toLowerCase()}`;
        const pushed = await client.push(`${mode.host}/${repository}:v1`, fromFile(path), {
          partSize: PART,
        });
        assertStrictEquals(pushed.digest, expected, mode.name);
        assert(seen.includes("PATCH 202"), `${mode.name}: a part went up in chunks: ${seen}`);
        seen.length = 0;
        await client.push(`${mode.host}/${repository}:v2`, fromFile(path), { partSize: PART });
        assertEquals(
          seen.filter((e) => e.startsWith("POST") || e.startsWith("PATCH")),
          [],
          `${mode.name}: the rerun sent no part`,
        );
      } finally {
        transport.close();
      }
    }
    assert((await proxy.requests()).length > 0, "the proxied modes went through the proxy");
  },
);
