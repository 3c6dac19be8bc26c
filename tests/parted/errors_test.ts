import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  ContentEncodingError,
  DigestMismatchError,
  findError,
  InvalidManifestError,
  InvalidReferenceError,
  LocalFileError,
  NotFoundError,
  NotPartedArtifactError,
  PartTooLargeError,
  SentinelError,
  SourceChangedError,
  UnauthorizedError,
} from "../../src/errors/mod.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { failureWords } from "../../src/cli/words/failure_words.ts";
import { encodeManifest } from "../../src/parted/manifest.ts";
import { recordingClock } from "./_helpers.ts";
import { BROKEN_MANIFESTS, validManifest } from "./_manifests.ts";
import { exists } from "../fixtures/expect.ts";

const P = 64 * 1024;

async function env() {
  const fake = await startFakeRegistry();
  const dir = await tempDir();
  const src = `${dir.path}/src.bin`;
  await writePatternFile(src, 3 * P + 1);
  const clock = recordingClock();
  const client = new PartedClient({ plainHttp: true, clock });
  return {
    fake,
    dir,
    src,
    clock,
    client,
    async [Symbol.asyncDispose]() {
      client.close();
      await fake.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

Deno.test("options: non-positive part size or workers are RangeErrors before anything is opened", async () => {
  await using e = await env();
  const missing = fromFile(`${e.dir.path}/does-not-exist`);
  const ref = `${e.fake.host}/e/f:v1`;
  for (const options of [{ partSize: 0 }, { partSize: -1 }, { partSize: 1.5 }, { workers: 0 }]) {
    await assertRejects(() => e.client.push(ref, missing, options), RangeError);
  }
  await assertRejects(
    () => e.client.pull(ref, toFile(`${e.dir.path}/no-dir/x`), { workers: -2 }),
    RangeError,
  );
  assertEquals(e.fake.log.length, 0);
  assert(!(await exists(`${e.dir.path}/no-dir`)));
});

Deno.test("local files: missing or non-regular source, missing destination directory", async () => {
  await using e = await env();
  const ref = `${e.fake.host}/e/f:v1`;
  for (const path of [`${e.dir.path}/missing.bin`, e.dir.path]) {
    const err = await assertRejects(() => e.client.push(ref, fromFile(path)), LocalFileError);
    assertEquals(findError(err, SentinelError), undefined, "no sentinel for a local file");
  }
  assertEquals(e.fake.log.length, 0);
  await e.client.push(ref, fromFile(e.src), { partSize: P });
  const err = await assertRejects(
    () => e.client.pull(ref, toFile(`${e.dir.path}/no-such-dir/out.bin`)),
    LocalFileError,
  );
  assertEquals(findError(err, SentinelError), undefined);
  await assertRejects(
    () => e.client.push("no-registry:v1", fromFile(e.src)),
    InvalidReferenceError,
  );
});

Deno.test("pull: 404, 401 (anonymous against a challenge) and 403 on the manifest map to sentinels; a zero-length partial is removed", async () => {
  await using e = await env();
  const dest = `${e.dir.path}/out.bin`;
  await Deno.writeFile(`${dest}.parted-partial`, new Uint8Array());
  const err404 = await assertRejects(() => e.client.pull(`${e.fake.host}/e/none:v1`, toFile(dest)));
  assertInstanceOf(findError(err404, NotFoundError), NotFoundError);
  assert(!(await exists(`${dest}.parted-partial`)), "zero-length partial removed");
  const refusals = [
    { status: 401, headers: { "www-authenticate": 'Basic realm="registry"' } },
    { status: 403 },
  ];
  for (const respond of refusals) {
    e.fake.clearFaults();
    e.fake.fault({ method: "GET", path: /\/manifests\//, respond, times: 2 });
    const err = await assertRejects(() => e.client.pull(`${e.fake.host}/e/f:v1`, toFile(dest)));
    assertInstanceOf(findError(err, UnauthorizedError), UnauthorizedError);
    assertEquals(e.clock.waits.length, 0, "not retried");
  }
  // A partial with data is kept when the manifest fails.
  await Deno.writeFile(`${dest}.parted-partial`, new Uint8Array([1]));
  await assertRejects(() => e.client.pull(`${e.fake.host}/e/none:v1`, toFile(dest)));
  assert(await exists(`${dest}.parted-partial`));
  assert(!(await exists(dest)));
});

Deno.test("pull: each broken manifest gives the right class and writes nothing", async () => {
  await using e = await env();
  const dest = `${e.dir.path}/out.bin`;
  for (const [name, mutate, expected] of BROKEN_MANIFESTS) {
    e.fake.clearFaults();
    const body = new TextEncoder().encode(JSON.stringify(mutate(validManifest())));
    e.fake.fault({
      method: "GET",
      path: /\/manifests\//,
      respond: {
        status: 200,
        headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" },
        body,
      },
    });
    const err = await assertRejects(() => e.client.pull(`${e.fake.host}/e/f:v1`, toFile(dest)));
    if (expected === "kind") {
      assertInstanceOf(findError(err, NotPartedArtifactError), NotPartedArtifactError, name);
    } else {
      assertInstanceOf(findError(err, InvalidManifestError), InvalidManifestError, name);
      assertEquals(findError(err, SentinelError), undefined, `${name}: no sentinel`);
    }
    assertEquals([...Deno.readDirSync(e.dir.path)].map((d) => d.name), ["src.bin"], name);
  }
  assertEquals(e.fake.count({ method: "GET", route: "blob" }), 0);
});

Deno.test("pull: a manifest that differs from the caller's digest is a digest mismatch", async () => {
  await using e = await env();
  const good = await e.client.push(`${e.fake.host}/e/f:v1`, fromFile(e.src), { partSize: P });
  const other = encodeManifest({
    partSize: 10,
    fileSize: 0,
    fileDigest: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    partDigests: ["sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
  });
  e.fake.fault({
    method: "GET",
    path: /\/manifests\//,
    respond: {
      status: 200,
      headers: {
        "content-type": "application/vnd.oci.image.manifest.v1+json",
        "docker-content-digest": good.digest,
      },
      body: other,
    },
    times: 2,
  });
  for (const ref of [`${e.fake.host}/e/f@${good.digest}`, `${e.fake.host}/e/f:v1`]) {
    const err = await assertRejects(() => e.client.pull(ref, toFile(`${e.dir.path}/o.bin`)));
    assertInstanceOf(findError(err, DigestMismatchError), DigestMismatchError);
  }
  assert(!(await exists(`${e.dir.path}/o.bin`)));
});

Deno.test("push: 413 on a part is PartTooLargeError naming the part; no manifest is written", async () => {
  await using e = await env();
  e.fake.fault({ method: "PUT", path: /\/blobs\/uploads\//, nth: 2, respond: { status: 413 } });
  const err = await assertRejects(() =>
    e.client.push(`${e.fake.host}/e/f:v1`, fromFile(e.src), { partSize: P, workers: 1 })
  );
  assertInstanceOf(findError(err, PartTooLargeError), PartTooLargeError);
  assert(/part 1\b/.test((err as Error).message), (err as Error).message);
  assertEquals(e.fake.count({ method: "PUT", route: "manifest" }), 0);
  assertEquals(e.clock.waits.length, 0, "not retried");
});

Deno.test("push: a source changed while it is pushed aborts without a manifest, not retried", async () => {
  await using e = await env();
  // Same-length mutation while the parts are being uploaded.
  let mutated = false;
  const err = await assertRejects(() =>
    e.client.push(`${e.fake.host}/e/f:v1`, fromFile(e.src), {
      partSize: P,
      workers: 1,
      onProgress: (s) => {
        if (!mutated && s.phase === "uploading") {
          mutated = true;
          const handle = Deno.openSync(e.src, { write: true });
          handle.writeSync(new Uint8Array([0xff, 0xfe, 0xfd]));
          handle.close();
        }
      },
    })
  );
  assertInstanceOf(findError(err, SourceChangedError), SourceChangedError);
  assertEquals(e.fake.count({ method: "PUT", route: "manifest" }), 0);
  // A file shortened while pushed.
  await writePatternFile(e.src, 3 * P + 1, 4);
  let cut = false;
  const err2 = await assertRejects(() =>
    e.client.push(`${e.fake.host}/e/g:v1`, fromFile(e.src), {
      partSize: P,
      workers: 1,
      onProgress: (s) => {
        if (!cut && s.phase === "uploading") {
          cut = true;
          Deno.truncateSync(e.src, P + 10);
        }
      },
    })
  );
  assertInstanceOf(findError(err2, SourceChangedError), SourceChangedError);
  assertEquals(e.fake.count({ method: "PUT", route: "manifest" }), 0);
});

Deno.test("push: a last part changed while it uploads is told as the file, before the registry's 400", async () => {
  await using e = await env();
  // The last part (1 byte at 3P) is hashed, then its session opens slowly: the byte changes
  // (same length) in that time, so its PUT sends bytes the registry hashes to another digest.
  e.fake.fault({ method: "POST", path: /\/blobs\/uploads\/$/, nth: 4, delayMs: 400 });
  const ref = `${e.fake.host}/e/late:v1`;
  const push = e.client.push(ref, fromFile(e.src), { partSize: P, workers: 1 })
    .then(() => undefined, (err) => err);
  const posts = () => e.fake.log.filter((r) => r.method === "POST").length;
  while (posts() < 4) await new Promise((resolve) => setTimeout(resolve, 5));
  const handle = await Deno.open(e.src, { write: true });
  await handle.seek(3 * P, Deno.SeekMode.Start);
  await handle.write(new Uint8Array([0xee]));
  handle.close();
  const err = await push;
  assertInstanceOf(findError(err, SourceChangedError), SourceChangedError);
  assertEquals(e.fake.count({ method: "PUT", route: "manifest" }), 0);
  const words = failureWords(err, { command: "push", input: { reference: ref, file: "w.bin" } });
  assertEquals(words?.sentence, "w.bin changed while it was pushed", `${err}`);
  assertEquals(words?.hint, "push it again once nothing writes to it");
  assert(!/registry|\b400\b|Bad Request/.test(`${words?.sentence} ${words?.hint}`));
});

Deno.test("pull: a non-identity content encoding is refused and not retried; reads send identity", async () => {
  await using e = await env();
  await e.client.push(`${e.fake.host}/e/f:v1`, fromFile(e.src), { partSize: P });
  const manifestGets = e.fake.log.filter((r) => r.method === "GET" && r.route === "manifest");
  assertEquals(manifestGets.length, 0);
  e.fake.fault({ method: "GET", path: /\/blobs\//, headers: { "content-encoding": "gzip" } });
  const err = await assertRejects(
    () => e.client.pull(`${e.fake.host}/e/f:v1`, toFile(`${e.dir.path}/o.bin`), { workers: 1 }),
    ContentEncodingError,
  );
  assert(!(err as Error).message.includes("gzip"));
  assertEquals(e.fake.count({ method: "GET", route: "blob" }), 1);
  assertEquals(e.clock.waits.length, 0);
  for (const r of e.fake.log.filter((r) => r.method === "GET")) {
    assertEquals(r.headers["accept-encoding"], "identity", `${r.route}`);
    if (r.route === "manifest") {
      assert(r.headers.accept.startsWith("application/vnd.oci.image.manifest.v1+json"));
    }
  }
  // A blob garbage-collected after the manifest was read: NotFoundError naming the part.
  e.fake.clearFaults();
  e.fake.fault({ method: "GET", path: /\/blobs\//, nth: 2, respond: { status: 404 } });
  const gone = await assertRejects(() =>
    e.client.pull(`${e.fake.host}/e/f:v1`, toFile(`${e.dir.path}/o.bin`), { workers: 1 })
  );
  assertInstanceOf(findError(gone, NotFoundError), NotFoundError);
  assert(/part \d/.test((gone as Error).message));
  e.fake.clearFaults();
  await e.client.pull(`${e.fake.host}/e/f:v1`, toFile(`${e.dir.path}/o.bin`));
  e.fake.expectNoUnexpected();
});
