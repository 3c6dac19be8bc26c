/**
 * A push from a stream sends the part being cut while it arrives, once the registry has lacked
 * a part: its bytes reach the registry before the input ends, the manifest is the file's, a
 * rerun sends no bytes, a registry that refuses chunks gets whole parts (asked once), a part
 * found present once whole is not committed, and a stop during a chunk ends the push at once.
 */
import { patternBytes } from "../fixtures/files.ts";
import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { fromFile, fromStream, PartedClient } from "../../mod.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { entries } from "./_streams.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import { makeSelfSigned } from "../fixtures/tls.ts";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { EMPTY_CONFIG_DESCRIPTOR } from "../../src/registry/media_types.ts";

const MiB = 1 << 20;
// Parts of two chunks, the smallest sent while they arrive.
const PART = 32 * MiB;

/** `bytes` in 1 MiB chunks; before the chunk at each offset of `gates`, waits for its check. */
function gatedSource(
  bytes: Uint8Array,
  gates: Map<number, () => boolean>,
): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    async pull(controller) {
      const gate = gates.get(at);
      // Held until the check passes, or 10 s (the test's assertions then tell what was missing).
      for (
        const until = Date.now() + 10_000;
        gate !== undefined && !gate() && Date.now() < until;
      ) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(at, at + MiB));
      at += MiB;
    },
  });
}

const patched = (proxy: FaultProxy, repository: string) =>
  proxy.log.filter((r) => r.method === "PATCH" && r.repository === repository);
const patchedBytes = (proxy: FaultProxy, repository: string) =>
  patched(proxy, repository).reduce((n, r) => n + r.bodyBytes, 0);
/** The PUTs that end a part's upload session (the empty config's is left out). */
const blobPuts = (proxy: FaultProxy, repository: string) =>
  proxy.log.filter((r) =>
    r.method === "PUT" && r.repository === repository && r.path.includes("/blobs/uploads/") &&
    !r.query.includes(EMPTY_CONFIG_DESCRIPTOR.digest.replace(":", "%3A")) &&
    !r.query.includes(EMPTY_CONFIG_DESCRIPTOR.digest)
  );

/** The manifest digest of the same bytes pushed from their file (in a repository of its own). */
async function fileDigestOf(
  client: PartedClient,
  host: string,
  path: string,
  partSize: number,
): Promise<string> {
  return (await client.push(`${host}/live/file:v1`, fromFile(path), { partSize })).digest;
}

Deno.test("a push from a stream sends parts while they arrive once one was missing: bytes before the input ends, the file's manifest, nothing on a rerun", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  await using tmp = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  const bytes = patternBytes(3 * PART + 5 * MiB, 7);
  await Deno.writeFile(`${tmp.path}/w.bin`, bytes);
  const options = { partSize: PART };
  const repository = "live/a";
  // Part 1 waits for the registry to lack part 0, part 2 for a chunk of part 1 to be taken; the
  // last part's last chunk waits for parts 1 and 2 to have been received by PATCH (they would
  // come only after the input ended otherwise).
  let patchedBeforeEnd = 0;
  const gates = new Map<number, () => boolean>([
    [PART, () => proxy.log.some((r) => r.method === "POST" && r.repository === repository)],
    [2 * PART, () => patched(proxy, repository).some((r) => r.status === 202)],
    [3 * PART + 4 * MiB, () => (patchedBeforeEnd = patchedBytes(proxy, repository)) >= 2 * PART],
  ]);
  const stream = await client.push(
    `${proxy.host}/${repository}:v1`,
    fromStream(gatedSource(bytes, gates), { name: "w.bin", spillDirectory: tmp.path }),
    options,
  );
  assert(patchedBeforeEnd >= 2 * PART, `PATCHed before the input ended: ${patchedBeforeEnd}`);
  // Part 0 went up whole; parts 1 to 3 in chunks, each committed by a bodiless PUT.
  assertEquals(blobPuts(proxy, repository).map((r) => r.bodyBytes), [PART, 0, 0, 0]);
  assertEquals(patchedBytes(proxy, repository), 2 * PART + 5 * MiB);
  assertStrictEquals(
    stream.digest,
    await fileDigestOf(client, registry.host, `${tmp.path}/w.bin`, PART),
  );

  const before = proxy.log.length;
  let skipped = 0;
  await client.push(
    `${proxy.host}/${repository}:v2`,
    fromStream(gatedSource(bytes, new Map()), { name: "w.bin", spillDirectory: tmp.path }),
    { ...options, onProgress: (s) => void (skipped = s.partsSkipped ?? 0) },
  );
  const rerun = proxy.log.slice(before);
  assertEquals(rerun.filter((r) => r.bodyBytes > 0 && r.method !== "PUT").length, 0);
  assertEquals(rerun.filter((r) => r.method === "POST" || r.method === "PATCH").length, 0);
  assertStrictEquals(skipped, 4);
  assertEquals((await entries(tmp.path)).filter((n) => n.startsWith("ocipart-")), []);
});

Deno.test("a registry that refuses chunks gets each part whole, and is asked once", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  await using tmp = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  proxy.fault({ method: "PATCH", respond: { status: 405 }, times: 1000 });
  const bytes = patternBytes(3 * PART + MiB, 8);
  await Deno.writeFile(`${tmp.path}/w.bin`, bytes);
  const repository = "live/refused";
  const gates = new Map<number, () => boolean>([
    [PART, () => proxy.log.some((r) => r.method === "POST" && r.repository === repository)],
  ]);
  const stream = await client.push(
    `${proxy.host}/${repository}:v1`,
    fromStream(gatedSource(bytes, gates), { name: "w.bin", spillDirectory: tmp.path }),
    { partSize: PART },
  );
  assertEquals(patched(proxy, repository).length, 1);
  assertEquals(
    blobPuts(proxy, repository).map((r) => r.bodyBytes).sort((a, b) => a - b),
    [MiB, PART, PART, PART],
  );
  assertStrictEquals(
    stream.digest,
    await fileDigestOf(client, registry.host, `${tmp.path}/w.bin`, PART),
  );
});

Deno.test("a part sent while it arrived and found present once whole is not committed: it counts as present", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  await using tmp = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  // Part 2 is part 0 again: the registry has it by the time part 2 is whole.
  const first = patternBytes(PART, 9);
  const bytes = new Uint8Array(3 * PART + MiB);
  bytes.set(first, 0);
  bytes.set(patternBytes(PART, 10), PART);
  bytes.set(first, 2 * PART);
  bytes.set(patternBytes(MiB, 11), 3 * PART);
  await Deno.writeFile(`${tmp.path}/w.bin`, bytes);
  const repository = "live/present";
  const gates = new Map<number, () => boolean>([
    [PART, () => proxy.log.some((r) => r.method === "POST" && r.repository === repository)],
    // Part 2 is cut once part 0 is in the registry and a chunk of part 1 was taken.
    [2 * PART, () =>
      blobPuts(proxy, repository).some((r) => r.status === 201) &&
      patched(proxy, repository).some((r) => r.status === 202)],
  ]);
  let skipped = 0;
  const stream = await client.push(
    `${proxy.host}/${repository}:v1`,
    fromStream(gatedSource(bytes, gates), { name: "w.bin", spillDirectory: tmp.path }),
    { partSize: PART, onProgress: (s) => void (skipped = s.partsSkipped ?? 0) },
  );
  assertStrictEquals(skipped, 1);
  // Part 2's session was dropped, not committed: parts 0, 1 and 3 were stored.
  assert(proxy.log.some((r) => r.method === "DELETE" && r.repository === repository));
  assertEquals(blobPuts(proxy, repository).length, 3);
  assertStrictEquals(
    stream.digest,
    await fileDigestOf(client, registry.host, `${tmp.path}/w.bin`, PART),
  );
});

Deno.test("a push stopped during a chunk ends within 1 s and removes its part files", async () => {
  await using registry = await startMemoryRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  await using tmp = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  // Chunks crawl: a stop finds one on its way.
  proxy.fault({ method: "PATCH", throttleRequest: MiB, times: 1000 });
  const bytes = patternBytes(3 * PART, 12);
  const repository = "live/stopped";
  const controller = new AbortController();
  let stoppedAt = 0;
  const gates = new Map<number, () => boolean>([
    [PART, () => proxy.log.some((r) => r.method === "POST" && r.repository === repository)],
    [2 * PART, () => {
      // A chunk of part 1 is on its way: stop.
      if (patched(proxy, repository).length === 0) return false;
      if (stoppedAt === 0) {
        stoppedAt = performance.now();
        controller.abort(new Error("stopped"));
      }
      return true;
    }],
  ]);
  await assertRejects(
    client.push(
      `${proxy.host}/${repository}:v1`,
      fromStream(gatedSource(bytes, gates), { name: "w.bin", spillDirectory: tmp.path }),
      { partSize: PART, signal: controller.signal },
    ),
    Error,
    "stopped",
  );
  assert(stoppedAt > 0, "a chunk was on its way");
  const took = performance.now() - stoppedAt;
  assert(took < 1000, `stopped after ${took.toFixed(0)} ms`);
  assertEquals((await entries(tmp.path)).filter((n) => n.startsWith("ocipart-")), []);
  assertStrictEquals(registry.store.getManifest(repository, "v1"), undefined);
});

registryTest(
  "sent while cut against Distribution with credentials (token on plain HTTP, basic over TLS), CA-signed, pinned and unverified: the file's manifest",
  { needs: ["openssl"] },
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
    const credential = { username: "alice", password: "pw" };
    const bytes = patternBytes(2 * PART + 3 * MiB, 13);
    await Deno.writeFile(`${tmp.path}/w.bin`, bytes);
    const modes = [
      { name: "plain HTTP", host: plain.host, options: { plainHttp: true } },
      { name: "CA-signed", host: signed.host, options: { caCerts: [signed.caCert!] } },
      { name: "pinned", host: pinned.host, options: { caCerts: [selfSigned.cert] } },
      { name: "unverified", host: pinned.host, options: { insecureTls: true } },
    ];
    for (const mode of modes) {
      using client = new PartedClient({ ...mode.options, credential });
      const repository = `live/${mode.name.replace(/[^a-z]/gi, "").toLowerCase()}`;
      let posted = false;
      let chunked = false;
      const observed = new PartedClient({
        ...mode.options,
        credential,
        onExchange: (e) => {
          posted ||= e.method === "POST" && e.status === 202;
          chunked ||= e.method === "PATCH" && e.status === 202;
        },
      });
      try {
        const expected = await fileDigestOf(client, mode.host, `${tmp.path}/w.bin`, PART);
        // The file push made `live/file`; this repository lacks every part. Part 1 waits for
        // the registry to have lacked part 0 (its upload session opened).
        const gates = new Map([[PART, () => posted]]);
        const stream = await observed.push(
          `${mode.host}/${repository}:v1`,
          fromStream(gatedSource(bytes, gates), { name: "w.bin", spillDirectory: tmp.path }),
          { partSize: PART },
        );
        assertStrictEquals(stream.digest, expected, mode.name);
        assert(chunked, `${mode.name}: a part went up in chunks`);
      } finally {
        observed.close();
      }
    }
  },
);
