/**
 * The parted library and the CLI against Distribution on S3 storage: part reads answer 307 to
 * presigned URLs on another port of the same host, checked by the S3 gate like AWS S3 checks
 * them.
 *
 * @module
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { s3Test, startS3Registry } from "../fixtures/s3.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import { runCli } from "../cli/_cli.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { assertNoCredentialOnStorage, assertNoRefusals, signatureOf, USER } from "./_helpers.ts";
import { exists } from "../fixtures/expect.ts";

const MiB = 1024 * 1024;
const FAST = { maxAttempts: 4, baseDelayMs: 10, maxDelayMs: 50 };

s3Test(
  "s3 parted: push and pull round-trip, parts read from presigned URLs without the credential",
  { needs: ["htpasswd"] },
  async () => {
    await using s3 = await startS3Registry({ htpasswd: { [USER.username]: USER.password } });
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, 6 * MiB + 11, 41);
    using client = new PartedClient({ plainHttp: true, credential: USER, retryPolicy: FAST });
    const ref = `${s3.registry.host}/s3/parted:v1`;
    await client.push(ref, fromFile(src), { partSize: MiB });
    await client.pull(ref, toFile(`${dir.path}/out.bin`), { workers: 3 });
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);

    const requests = assertNoCredentialOnStorage(s3.gate);
    await assertNoRefusals(s3.gate);
    const gets = requests.filter((r) => r.method === "GET");
    assertEquals(gets.length, 7, "every part was read from storage");
    assert(requests.every((r) => signatureOf(r) !== ""), "presigned URLs only");
  },
);

s3Test("s3 parted: with token auth, no registry token reaches storage", async () => {
  await using tokens = await startTokenServer({ users: { [USER.username]: USER.password } });
  await using s3 = await startS3Registry({
    token: {
      realm: tokens.realm,
      service: tokens.service,
      issuer: tokens.issuer,
      rootCertBundle: tokens.rootCertBundle,
    },
  });
  await using dir = await tempDir();
  const src = `${dir.path}/src.bin`;
  const digest = await writePatternFile(src, 3 * MiB, 45);
  using client = new PartedClient({ plainHttp: true, credential: USER, retryPolicy: FAST });
  const ref = `${s3.registry.host}/s3/token:v1`;
  await client.push(ref, fromFile(src), { partSize: MiB });
  await client.pull(ref, toFile(`${dir.path}/out.bin`));
  assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
  assert(tokens.requests.length > 0, "the client logged in with a token");
  for (const record of assertNoCredentialOnStorage(s3.gate)) {
    const text = JSON.stringify(record.headers) + record.query;
    assert(!/Bearer|eyJ/.test(text), "a registry token reached storage");
  }
  await assertNoRefusals(s3.gate);
});

s3Test(
  "s3 parted: a cancelled pull resumes, fetching from storage only the parts it lacks",
  async () => {
    await using s3 = await startS3Registry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, 6 * MiB, 42);
    using client = new PartedClient({ plainHttp: true, retryPolicy: FAST });
    const ref = `${s3.registry.host}/s3/resume:v1`;
    await client.push(ref, fromFile(src), { partSize: MiB });
    const dest = `${dir.path}/out.bin`;

    const controller = new AbortController();
    const reason = new DOMException("stop", "AbortError");
    const err = await client.pull(ref, toFile(dest), {
      workers: 1,
      signal: controller.signal,
      onProgress: (s) => {
        if (s.completedBytes >= 2 * MiB) controller.abort(reason);
      },
    }).then(() => undefined, (e) => e);
    assertEquals(err, reason);
    assert(await exists(`${dest}.parted-partial`), "partial kept");
    const before = s3.gate.clientRequests().filter((r) => r.method === "GET").length;
    await client.pull(ref, toFile(dest), { workers: 3 });
    assertEquals(await sha256File(dest), digest);
    const after = s3.gate.clientRequests().filter((r) => r.method === "GET").length - before;
    assert(after >= 1 && after <= 4, `only the missing parts were fetched (${after} GETs)`);
    await assertNoRefusals(s3.gate);
  },
);

s3Test(
  "s3 parted: cut answers and expired URLs are retried on fresh redirects from the registry",
  async () => {
    await using s3 = await startS3Registry();
    await using proxy = await startFaultProxy({ target: s3.registry.url });
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, 4 * MiB, 43);
    using client = new PartedClient({ plainHttp: true, retryPolicy: FAST });
    const ref = `${proxy.host}/s3/faults:v1`;
    await client.push(ref, fromFile(src), { partSize: 2 * MiB });

    proxy.log.length = 0;
    s3.gate.expireNext(2);
    s3.gate.cutNext({ afterBytes: MiB / 2 });
    await client.pull(ref, toFile(`${dir.path}/out.bin`), { workers: 1 });
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
    const storageGets = s3.gate.clientRequests().filter((r) => r.method === "GET");
    assertEquals(storageGets.filter((r) => r.status === 403).length, 2, "two expired URLs");
    assertEquals(storageGets.filter((r) => r.outcome === "cut").length, 1, "one cut answer");
    const registryGets = proxy.log.filter((r) => r.method === "GET" && r.route === "blob");
    assertEquals(registryGets.length, storageGets.length, "each storage GET on a fresh redirect");
  },
);

s3Test(
  "s3 cli: push and pull work, and a failed pull prints no signature, query or storage host",
  async () => {
    await using s3 = await startS3Registry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, 3 * MiB, 44);
    const ref = `${s3.registry.host}/s3/cli:v1`;
    const common = ["--plain-http", "--progress", "plain"];
    const push = await runCli(["push", ...common, "--part-size", "1MiB", ref, src], {
      tmp: dir.path,
    });
    assertEquals(push.code, 0, push.stderr);
    const pull = await runCli(["pull", ...common, ref, `${dir.path}/out.bin`], { tmp: dir.path });
    assertEquals(pull.code, 0, pull.stderr);
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);

    s3.gate.maxAgeSeconds = -1; // every presigned URL is expired on arrival
    const failed = await runCli(["pull", ...common, "--debug", ref, `${dir.path}/again.bin`], {
      tmp: dir.path,
    });
    assert(failed.code !== 0, "the pull failed");
    const output = failed.stdout + failed.stderr;
    const signatures = s3.gate.clientRequests().map(signatureOf).filter((s) => s !== "");
    assert(signatures.length > 0);
    const debug = output.split("\n").filter((line) => line.includes("debug: "));
    assert(debug.some((line) => / storage 403 /.test(line)), `no storage exchange: ${output}`);
    const origin = `${s3.gate.host}:${s3.gate.port}`;
    for (const forbidden of [origin, "X-Amz", "?", ...signatures]) {
      assert(!output.includes(forbidden), `CLI output contains "${forbidden}": ${output}`);
    }
    // Byte counts and durations may contain any digits; every other line names no port.
    const rest = output.split("\n").filter((line) => !line.includes("debug: ")).join("\n");
    assert(!rest.includes(String(s3.gate.port)), `CLI output names the storage port: ${rest}`);
  },
);
