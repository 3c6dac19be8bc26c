/**
 * The blob library against Distribution on S3 storage: blob GETs answer 307 to presigned URLs
 * on another port of the same host, checked by the S3 gate like AWS S3 checks them.
 *
 * @module
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { s3Test, startS3Registry } from "../fixtures/s3.ts";
import { ErrorLedger } from "../confidentiality/_helpers.ts";
import { createAuthFetch } from "../../src/auth/create_auth_fetch.ts";
import { staticCredentials } from "../../src/auth/credential.ts";
import { BlobClient, type BlobClientOptions } from "../../src/blob/mod.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { assertNoCredentialOnStorage, assertNoRefusals, signatureOf, USER } from "./_helpers.ts";

const MiB = 1024 * 1024;

/** A blob client logged in to `host`, reaching loopback storage the documented way. */
function blobClient(host: string, options: BlobClientOptions = {}) {
  const registryTransport = new HttpTransport();
  // The default storage transport refuses loopback peers: the storage here is on loopback.
  const storageTransport = new HttpTransport();
  const transport = createAuthFetch({
    registry: host,
    plainHttp: true,
    fetch: registryTransport.fetch,
    credentials: staticCredentials(USER),
  });
  const client = new BlobClient({
    plainHttp: true,
    transport,
    storageTransport: storageTransport.fetch,
    retryPolicy: { maxAttempts: 4, baseDelayMs: 10, maxDelayMs: 50 },
    ...options,
  });
  return {
    client,
    [Symbol.dispose]() {
      client.close();
      registryTransport.close();
      storageTransport.close();
    },
  };
}

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

s3Test(
  "s3 blob: pull, pullRange and parallel pull read presigned storage URLs without credentials",
  { needs: ["htpasswd"] },
  async () => {
    await using s3 = await startS3Registry({ htpasswd: { [USER.username]: USER.password } });
    using c = blobClient(s3.registry.host);
    const repo = `${s3.registry.host}/s3/blob`;
    const bytes = patternBytes(6 * MiB + 5, 31);
    const digest = sha256Bytes(bytes);
    await c.client.push(repo, digest, bytes.length, bytes);

    assertEquals(sha256Bytes(await bytesOf(await c.client.pull(repo, digest))), digest);
    const range = await bytesOf(await c.client.pullRange(repo, digest, 3 * MiB + 1, 100_000));
    assertEquals(range, bytes.subarray(3 * MiB + 1, 3 * MiB + 1 + 100_000));
    using p = blobClient(s3.registry.host, { parallelPull: { workers: 4, chunkSize: MiB } });
    const parallel = await bytesOf(await p.client.pull(repo, digest));
    assertEquals(sha256Bytes(parallel), digest);

    const requests = assertNoCredentialOnStorage(s3.gate);
    await assertNoRefusals(s3.gate);
    assert(requests.every((r) => r.query.includes("X-Amz-Signature=")), "presigned only");
    const ranged = requests.filter((r) => r.headers.range !== undefined);
    assert(ranged.some((r) => r.headers.range === `bytes=${3 * MiB + 1}-${3 * MiB + 100_000}`));
    assert(ranged.length >= 6, `parallel chunks read ranges of storage (${ranged.length})`);
  },
);

s3Test(
  "s3 blob: a storage answer cut mid-body continues with a ranged GET on a presigned URL",
  async () => {
    await using s3 = await startS3Registry();
    using c = blobClient(s3.registry.host);
    const repo = `${s3.registry.host}/s3/cut`;
    const bytes = patternBytes(4 * MiB, 32);
    const digest = sha256Bytes(bytes);
    await c.client.push(repo, digest, bytes.length, bytes);

    s3.gate.cutNext({ afterBytes: MiB + 7 });
    assertEquals(sha256Bytes(await bytesOf(await c.client.pull(repo, digest))), digest);
    const gets = s3.gate.clientRequests().filter((r) => r.method === "GET");
    assertEquals(gets.length, 2, "one cut answer, one continuation");
    assert(gets[0].outcome === "cut" && gets[0].headers.range === undefined);
    assertEquals(gets[1].headers.range, `bytes=${MiB + 7}-`, "continued where it was cut");
    assertEquals(gets[1].path, gets[0].path, "the same object");
    assert(signatureOf(gets[1]) !== "", "on a presigned URL");
    await assertNoRefusals(s3.gate);
  },
);

s3Test(
  "s3 blob: an expired presigned URL makes the client ask the registry for a fresh redirect",
  async () => {
    await using s3 = await startS3Registry();
    // In front of the registry: counts the client's blob GETs there.
    await using proxy = await startFaultProxy({ target: s3.registry.url });
    using c = blobClient(proxy.host);
    const repo = `${proxy.host}/s3/expired`;
    const bytes = patternBytes(4 * MiB, 33);
    const digest = sha256Bytes(bytes);
    await c.client.push(repo, digest, bytes.length, bytes);

    // The first URL expires on its way to storage.
    s3.gate.expireNext();
    assertEquals(sha256Bytes(await bytesOf(await c.client.pull(repo, digest))), digest);
    // URLs live 2 s; the cut answer holds its connection until its URL is older than that.
    s3.gate.maxAgeSeconds = 2;
    s3.gate.cutNext({ afterBytes: MiB, holdMs: 3500 });
    assertEquals(sha256Bytes(await bytesOf(await c.client.pull(repo, digest))), digest);
    const gets = s3.gate.clientRequests().filter((r) => r.method === "GET");
    assertEquals(gets.map((r) => `${r.status} ${r.outcome}`), [
      "403 answered",
      "200 answered",
      "200 cut",
      "206 answered",
    ]);
    assert(gets.every((r) => signatureOf(r) !== ""), "presigned URLs only");
    const registryGets = proxy.log.filter((r) => r.method === "GET" && r.route === "blob");
    assertEquals(registryGets.length, 4, "every storage GET follows its own fresh redirect");
    assert(registryGets.every((r) => r.status === 307));
    assert(signatureOf(gets[3]) !== signatureOf(gets[2]), "the continuation's URL is newer");
    assertEquals(gets[3].headers.range, `bytes=${MiB}-`, "without fetching the first MiB again");
  },
);

s3Test(
  "s3 blob: failures on storage name no signature, query or storage host",
  async () => {
    await using s3 = await startS3Registry();
    using c = blobClient(s3.registry.host, {
      retryPolicy: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    const repo = `${s3.registry.host}/s3/leak`;
    const bytes = patternBytes(MiB, 34);
    const digest = sha256Bytes(bytes);
    await c.client.push(repo, digest, bytes.length, bytes);

    const ledger = new ErrorLedger();
    ledger.forbid(s3.gate.host, s3.gate.port, s3.registry.port, "X-Amz", "ocipart-blobs");
    s3.gate.maxAgeSeconds = -1; // every presigned URL is expired on arrival
    await ledger.rejection(c.client.pull(repo, digest).then(bytesOf));
    await ledger.rejection(c.client.pullRange(repo, digest, 10, 10).then(bytesOf));
    for (const record of s3.gate.clientRequests()) ledger.forbid(signatureOf(record));
    for (const err of [...ledger.errors]) ledger.check(err);
    assert(s3.gate.clientRequests().every((r) => r.status === 403), "storage refused them all");
  },
);
