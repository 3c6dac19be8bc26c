import { RegistryHandler, startMemoryRegistry } from "../../src/testing/mod.ts";
import { toolTest } from "../fixtures/registry.ts";
import { seedArtifact, seedBlob } from "../fixtures/seed.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

async function errorCodes(response: Response): Promise<string[]> {
  const body = await response.json() as { errors: { code: string }[] };
  return body.errors.map((e) => e.code);
}

Deno.test("memory registry: chunked upload with absolute Locations and Range acknowledgements", async () => {
  await using registry = await startMemoryRegistry();
  const bytes = patternBytes(10_000, 1);
  const started = await fetch(`${registry.url}/v2/mem/a/blobs/uploads/`, { method: "POST" });
  await started.body?.cancel();
  assertEquals(started.status, 202);
  assertEquals(started.headers.get("range"), "0-0");
  assert(started.headers.get("docker-upload-uuid"));
  let location = started.headers.get("location")!;
  assert(location.startsWith(`${registry.url}/v2/mem/a/blobs/uploads/`), location);
  for (const [start, end] of [[0, 4000], [4000, 9000]]) {
    const patch = await fetch(location, {
      method: "PATCH",
      body: bytes.slice(start, end),
      headers: { "content-range": `${start}-${end - 1}` },
    });
    await patch.body?.cancel();
    assertEquals(patch.status, 202);
    assertEquals(patch.headers.get("range"), `0-${end - 1}`);
    assert(patch.headers.get("location") !== location, "Location must be fresh");
    location = patch.headers.get("location")!;
  }
  const put = await fetch(`${location}&digest=${sha256Bytes(bytes)}`, {
    method: "PUT",
    body: bytes.slice(9000),
  });
  await put.body?.cancel();
  assertEquals(put.status, 201);
  assertEquals(put.headers.get("docker-content-digest"), sha256Bytes(bytes));
  assertEquals(registry.store.getBlob("mem/a", sha256Bytes(bytes)), bytes);
  assertEquals(registry.store.openUploads, 0);
});

Deno.test("memory registry: protocol errors a client must handle", async () => {
  await using registry = await startMemoryRegistry();
  const open = async () => {
    const r = await fetch(`${registry.url}/v2/mem/e/blobs/uploads/`, { method: "POST" });
    await r.body?.cancel();
    return r.headers.get("location")!;
  };
  // A digest that does not match the bytes.
  const mismatch = await fetch(`${await open()}&digest=sha256:${"0".repeat(64)}`, {
    method: "PUT",
    body: new Uint8Array([1]),
  });
  assertEquals(mismatch.status, 400);
  assertEquals(await errorCodes(mismatch), ["DIGEST_INVALID"]);
  // A PATCH that does not continue the session.
  const gap = await fetch(await open(), {
    method: "PATCH",
    body: new Uint8Array([1]),
    headers: { "content-range": "5-5" },
  });
  await gap.body?.cancel();
  assertEquals(gap.status, 416);
  // A stale Location after the session moved on.
  const first = await open();
  const step = await fetch(first, { method: "PATCH", body: new Uint8Array([1]) });
  await step.body?.cancel();
  const stale = await fetch(first, { method: "PATCH", body: new Uint8Array([2]) });
  assertEquals(stale.status, 404);
  assertEquals(await errorCodes(stale), ["BLOB_UPLOAD_INVALID"]);
  // A cancelled session is gone.
  const cancelled = await open();
  const del = await fetch(cancelled, { method: "DELETE" });
  await del.body?.cancel();
  assertEquals(del.status, 204);
  const after = await fetch(cancelled, { method: "PATCH", body: new Uint8Array([1]) });
  assertEquals(await errorCodes(after), ["BLOB_UPLOAD_UNKNOWN"]);
  // Unknown blobs.
  const missing = await fetch(`${registry.url}/v2/mem/e/blobs/sha256:${"1".repeat(64)}`);
  assertEquals(missing.status, 404);
  assertEquals(await errorCodes(missing), ["BLOB_UNKNOWN"]);
});

Deno.test("memory registry: ranges answer 206 and 416 with the unsatisfied form", async () => {
  await using registry = await startMemoryRegistry();
  const bytes = patternBytes(1000, 2);
  const digest = await seedBlob(registry.url, "mem/r", bytes);
  const url = `${registry.url}/v2/mem/r/blobs/${digest}`;
  const middle = await fetch(url, { headers: { range: "bytes=100-199" } });
  assertEquals(middle.status, 206);
  assertEquals(middle.headers.get("content-range"), "bytes 100-199/1000");
  assertEquals(new Uint8Array(await middle.arrayBuffer()), bytes.subarray(100, 200));
  const open = await fetch(url, { headers: { range: "bytes=900-" } });
  assertEquals(open.headers.get("content-range"), "bytes 900-999/1000");
  assertEquals(new Uint8Array(await open.arrayBuffer()), bytes.subarray(900));
  const beyond = await fetch(url, { headers: { range: "bytes=1000-" } });
  await beyond.body?.cancel();
  assertEquals(beyond.status, 416);
  assertEquals(beyond.headers.get("content-range"), "bytes */1000");
  const head = await fetch(url, { method: "HEAD" });
  assertEquals(head.status, 200);
  assertEquals(head.headers.get("content-length"), "1000");
  assertEquals(head.headers.get("docker-content-digest"), digest);
});

Deno.test("memory registry: mounts link per repository; manifests need their blobs there", async () => {
  await using registry = await startMemoryRegistry();
  const layer = patternBytes(100, 3);
  const artifact = await seedArtifact(registry.url, "mem/src", "v1", [layer]);
  const layerDigest = artifact.layerDigests[0]!;
  // Blobs are per repository: the manifest cannot be pushed to another one yet.
  const early = await fetch(`${registry.url}/v2/mem/dst/manifests/v1`, {
    method: "PUT",
    headers: { "content-type": OCI_MANIFEST },
    body: artifact.manifest,
  });
  assertEquals(early.status, 400);
  assertEquals(await errorCodes(early), ["MANIFEST_BLOB_UNKNOWN", "MANIFEST_BLOB_UNKNOWN"]);
  // A mount from a repository without the blob opens a session instead.
  const declined = await fetch(
    `${registry.url}/v2/mem/dst/blobs/uploads/?mount=${layerDigest}&from=mem/none`,
    { method: "POST" },
  );
  await declined.body?.cancel();
  assertEquals(declined.status, 202);
  for (const digest of [artifact.configDigest, layerDigest]) {
    const mounted = await fetch(
      `${registry.url}/v2/mem/dst/blobs/uploads/?mount=${digest}&from=mem/src`,
      { method: "POST" },
    );
    await mounted.body?.cancel();
    assertEquals(mounted.status, 201);
    assertEquals(mounted.headers.get("docker-content-digest"), digest);
  }
  const wrongType = await fetch(`${registry.url}/v2/mem/dst/manifests/v1`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: artifact.manifest,
  });
  await wrongType.body?.cancel();
  assertEquals(wrongType.status, 400);
  const byDigest = await fetch(`${registry.url}/v2/mem/dst/manifests/${artifact.manifestDigest}`, {
    method: "PUT",
    headers: { "content-type": OCI_MANIFEST },
    body: artifact.manifest,
  });
  await byDigest.body?.cancel();
  assertEquals(byDigest.status, 201);
  assertEquals(byDigest.headers.get("docker-content-digest"), artifact.manifestDigest);
});

Deno.test("memory registry: manifest GET needs an Accept naming the stored type", async () => {
  await using registry = await startMemoryRegistry();
  const artifact = await seedArtifact(registry.url, "mem/m", "v1", [new Uint8Array([9])]);
  const url = `${registry.url}/v2/mem/m/manifests/v1`;
  for (const accept of [undefined, "*/*", "application/json"]) {
    const r = await fetch(url, accept === undefined ? {} : { headers: { accept } });
    assertEquals(r.status, 404, `Accept ${accept}`);
    assertEquals(await errorCodes(r), ["MANIFEST_UNKNOWN"]);
  }
  const ok = await fetch(url, {
    headers: { accept: `application/vnd.docker.distribution.manifest.v2+json, ${OCI_MANIFEST}` },
  });
  assertEquals(ok.status, 200);
  assertEquals(ok.headers.get("content-type"), OCI_MANIFEST);
  assertEquals(new Uint8Array(await ok.arrayBuffer()), artifact.manifest);
  const tags = await fetch(`${registry.url}/v2/mem/m/tags/list`);
  assertEquals(await tags.json(), { name: "mem/m", tags: ["v1"] });
});

Deno.test("memory registry: the handler works as a fetch without sockets", async () => {
  const handler = new RegistryHandler();
  const bytes = new TextEncoder().encode("in process");
  const started = await handler.fetch(
    new Request("http://registry.test/v2/p/q/blobs/uploads/", { method: "POST" }),
  );
  assertEquals(started.status, 202);
  const location = new URL(started.headers.get("location")!);
  assertEquals(location.origin, "http://registry.test");
  location.searchParams.set("digest", sha256Bytes(bytes));
  const put = await handler.fetch(new Request(location, { method: "PUT", body: bytes }));
  assertEquals(put.status, 201);
  assertEquals(handler.store.getBlob("p/q", sha256Bytes(bytes)), bytes);
});

toolTest("memory registry: skopeo copies an artifact out of and back into it", {
  needs: ["skopeo"],
}, async () => {
  await using registry = await startMemoryRegistry();
  const layers = [patternBytes(70_000, 4), patternBytes(1234, 5)];
  const artifact = await seedArtifact(registry.url, "mem/sk", "v1", layers);
  const dir = await makeTempDir("ocipart-skopeo-");
  try {
    const skopeo = async (...args: string[]) => {
      const out = await new Deno.Command("skopeo", {
        args: ["--insecure-policy", ...args],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stderr);
      assert(out.success, `skopeo ${args[0]} failed: ${text}`);
      return new TextDecoder().decode(out.stdout);
    };
    await skopeo(
      "copy",
      "--src-tls-verify=false",
      `docker://${registry.host}/mem/sk:v1`,
      `oci:${dir}:v1`,
    );
    await skopeo(
      "copy",
      "--dest-tls-verify=false",
      `oci:${dir}:v1`,
      `docker://${registry.host}/mem/copy:v2`,
    );
    const raw = await skopeo(
      "inspect",
      "--raw",
      "--tls-verify=false",
      `docker://${registry.host}/mem/copy:v2`,
    );
    assertEquals(new TextEncoder().encode(raw), artifact.manifest);
    for (const [i, digest] of artifact.layerDigests.entries()) {
      assertEquals(registry.store.getBlob("mem/copy", digest), layers[i]);
    }
  } finally {
    await removeDir(dir);
  }
});
