import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { seedBlob } from "../fixtures/seed.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../fixtures/assert.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { pathExists, pidGone } from "./helpers.ts";

registryTest(
  "registry: answers /v2/, stores a pushed blob at blobPath, stop removes all",
  async () => {
    const registry = await startRegistry();
    const storage = registry.storageDir;
    try {
      const base = await fetch(`${registry.url}/v2/`);
      await base.body?.cancel();
      assertEquals(base.status, 200);
      assertEquals(registry.host, `127.0.0.1:${registry.port}`);

      const bytes = patternBytes(100_000, 7);
      const digest = await seedBlob(registry.url, "fixtures/anon", bytes);
      const head = await fetch(`${registry.url}/v2/fixtures/anon/blobs/${digest}`, {
        method: "HEAD",
      });
      assertEquals(head.status, 200);
      assertEquals(head.headers.get("content-length"), "100000");
      const stored = await Deno.readFile(registry.blobPath(digest));
      assertEquals(sha256Bytes(stored), digest);
    } finally {
      await registry.stop();
    }
    assert(await pidGone(registry.pid), "registry process still running after stop");
    assert(!(await pathExists(storage)), "temp storage left behind");
    await registry.stop(); // idempotent
  },
);

registryTest("registry: htpasswd answers 401 without and 200 with basic credentials", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "s3cret", bob: "other" } });
  const anonymous = await fetch(`${registry.url}/v2/`);
  await anonymous.body?.cancel();
  assertEquals(anonymous.status, 401);
  assertStringIncludes(anonymous.headers.get("www-authenticate") ?? "", "Basic");
  for (const [user, password] of [["alice", "s3cret"], ["bob", "other"]]) {
    const ok = await fetch(`${registry.url}/v2/`, {
      headers: { authorization: `Basic ${btoa(`${user}:${password}`)}` },
    });
    await ok.body?.cancel();
    assertEquals(ok.status, 200);
  }
  const wrong = await fetch(`${registry.url}/v2/`, {
    headers: { authorization: `Basic ${btoa("alice:nope")}` },
  });
  await wrong.body?.cancel();
  assertEquals(wrong.status, 401);
});

registryTest("registry: TLS is served with the test CA and refused without it", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  assert(registry.url.startsWith("https://127.0.0.1:"));
  assert(registry.caCert?.includes("BEGIN CERTIFICATE"));
  const client = Deno.createHttpClient({ caCerts: [registry.caCert!] });
  try {
    const ok = await fetch(`${registry.url}/v2/`, { client });
    await ok.body?.cancel();
    assertEquals(ok.status, 200);
  } finally {
    client.close();
  }
  const untrusting = Deno.createHttpClient({});
  try {
    await assertRejects(() => fetch(`${registry.url}/v2/`, { client: untrusting }));
  } finally {
    untrusting.close();
  }
});

registryTest("registry: redirect middleware sends blob GETs to the file server", async () => {
  // The file server serves the registry's storage root: create that dir first.
  const storageDir = await makeTempDir("ocipart-storage-");
  try {
    await using server = await startFileServer({ root: storageDir });
    await using registry = await startRegistry({ storageDir, redirect: { baseUrl: server.url } });
    const bytes = patternBytes(50_000, 3);
    const digest = await seedBlob(registry.url, "fixtures/redirect", bytes);
    const redirected = await fetch(`${registry.url}/v2/fixtures/redirect/blobs/${digest}`, {
      redirect: "manual",
      headers: { authorization: "Bearer secret-for-registry-only" },
    });
    await redirected.body?.cancel();
    assertEquals(redirected.status, 307);
    const location = new URL(redirected.headers.get("location")!);
    assertEquals(location.origin, server.url);
    assertEquals(location.pathname, registry.blobPath(digest).slice(storageDir.length));

    const full = await fetch(location);
    assertEquals(full.status, 200);
    assertEquals(sha256Bytes(new Uint8Array(await full.arrayBuffer())), digest);
    const part = await fetch(location, { headers: { range: "bytes=10-19" } });
    assertEquals(part.status, 206);
    assertEquals(part.headers.get("content-range"), "bytes 10-19/50000");
    assertEquals(new Uint8Array(await part.arrayBuffer()), bytes.subarray(10, 20));
    const beyond = await fetch(location, { headers: { range: "bytes=50000-" } });
    await beyond.body?.cancel();
    assertEquals(beyond.status, 416);
    assertEquals(beyond.headers.get("content-range"), "bytes */50000");

    assertEquals(server.count({ method: "GET" }), 3);
    for (const record of server.log) assertEquals(record.headers.authorization, undefined);
  } finally {
    await removeDir(storageDir);
  }
});

registryTest(
  "registry: a reused storageDir keeps blobs across restarts and is not removed",
  async () => {
    const storageDir = await makeTempDir("ocipart-storage-");
    try {
      const bytes = patternBytes(1000, 11);
      let digest: string;
      {
        await using first = await startRegistry({ storageDir });
        digest = await seedBlob(first.url, "fixtures/reuse", bytes);
      }
      assert(await pathExists(storageDir), "caller's storage dir was removed");
      await using second = await startRegistry({ storageDir });
      const got = await fetch(`${second.url}/v2/fixtures/reuse/blobs/${digest}`);
      assertEquals(new Uint8Array(await got.arrayBuffer()), bytes);
    } finally {
      await removeDir(storageDir);
    }
  },
);

registryTest("registry: a config the registry rejects fails start-up with its stderr", async () => {
  const error = await assertRejects(() =>
    startRegistry({
      token: {
        realm: "http://127.0.0.1:1/token",
        service: "test",
        issuer: "test",
        rootCertBundle: "/nonexistent/bundle.crt",
      },
    })
  );
  assertStringIncludes(error.message, "exited during start-up");
  assertStringIncludes(error.message, "bundle.crt");
});
