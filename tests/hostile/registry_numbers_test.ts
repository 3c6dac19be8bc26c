/**
 * Numbers a registry states never size memory nor a count: each site where one could (a
 * manifest's length and sizes, an error body, an upload's chunk minimum) against a registry
 * stating the worst. The parallel pull's stated total is in `tests/blob/parallel_pull_test.ts`.
 *
 * @module
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { PartedClient, toFile } from "../../mod.ts";
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError, InvalidManifestError } from "../../src/errors/kinds.ts";
import { OCI_MANIFEST_MEDIA_TYPE } from "../../src/registry/media_types.ts";
import { ERROR_BODY_LIMIT } from "../../src/registry/status.ts";
import { encode, sha, validManifest } from "../parted/_manifests.ts";
import { ANNOTATION_FILE_SIZE, ANNOTATION_PART_SIZE } from "../../src/parted/format.ts";
import { assertSafeError, blob } from "../blob/_helpers.ts";
import { exists } from "../fixtures/expect.ts";

const MiB = 1024 * 1024;
const MAX = Number.MAX_SAFE_INTEGER;

/** Pulls `repository:v1` into a fresh directory; the error, and whether anything was written. */
async function pullFails(host: string, repository: string) {
  await using dir = await tempDir();
  using client = new PartedClient({ plainHttp: true, retryPolicy: { maxAttempts: 1 } });
  const dest = `${dir.path}/out.bin`;
  let error: unknown;
  try {
    await client.pull(`${host}/${repository}:v1`, toFile(dest));
  } catch (err) {
    error = assertSafeError(err);
  }
  const written = (await exists(dest)) || (await exists(`${dest}.parted-partial`));
  return { error, written };
}

Deno.test("a manifest larger than 4 MiB is refused as it arrives, nothing written", async () => {
  await using registry = await startFakeRegistry();
  const padded = { ...validManifest(), padding: "x".repeat(5 * MiB) };
  registry.store.putManifest("n/big", "v1", encode(padded), OCI_MANIFEST_MEDIA_TYPE);
  const { error, written } = await pullFails(registry.host, "n/big");
  assert(findError(error, InvalidManifestError), String(error));
  assert(!written);
});

Deno.test("a manifest stating 2^53-1 bytes in parts of one byte is refused before any plan", async () => {
  await using registry = await startFakeRegistry();
  const manifest = validManifest();
  manifest.annotations[ANNOTATION_FILE_SIZE] = String(MAX);
  manifest.annotations[ANNOTATION_PART_SIZE] = "1";
  registry.store.putManifest("n/parts", "v1", encode(manifest), OCI_MANIFEST_MEDIA_TYPE);
  const { error, written } = await pullFails(registry.host, "n/parts");
  assert(findError(error, InvalidManifestError), String(error));
  assert(/4096 parts/.test((error as Error).message), String(error));
  assert(!written);
});

Deno.test("a consistent manifest of 2^53-1 bytes in two parts costs neither memory nor a file", async () => {
  await using registry = await startFakeRegistry();
  const partSize = 2 ** 52;
  const manifest = validManifest();
  manifest.annotations[ANNOTATION_FILE_SIZE] = String(MAX);
  manifest.annotations[ANNOTATION_PART_SIZE] = String(partSize);
  const digest = sha(new Uint8Array([1]));
  manifest.layers = [partSize, MAX - partSize].map((size) => ({
    ...manifest.layers[0],
    size,
    digest,
  }));
  registry.store.putManifest("n/huge", "v1", encode(manifest), OCI_MANIFEST_MEDIA_TYPE);
  const before = Deno.memoryUsage().rss;
  const { error, written } = await pullFails(registry.host, "n/huge");
  const grown = Deno.memoryUsage().rss - before;
  assert(error !== undefined, "the pull succeeded");
  assert(grown < 256 * MiB, `memory grew by ${grown} bytes`);
  assert(!written, "a file was left");
  // Nothing was asked of the parts: the destination was refused first.
  assertEquals(registry.count({ path: /\/blobs\// }), 0);
});

Deno.test("an error body of 16 MiB is kept to its first 4 KiB", async () => {
  await using registry = await startFakeRegistry();
  const { bytes, digest } = blob(1024, 3);
  registry.store.putBlob("n/err", bytes);
  registry.fault({
    method: "GET",
    path: /\/blobs\//,
    respond: { status: 400, body: new Uint8Array(16 * MiB).fill(0x7b) },
  });
  using client = new BlobClient({ plainHttp: true, retryPolicy: { maxAttempts: 1 } });
  let error: unknown;
  try {
    await new Response(await client.pull(`${registry.host}/n/err`, digest)).arrayBuffer();
  } catch (err) {
    error = assertSafeError(err);
  }
  const status = findError(error, HttpStatusError);
  assert(status !== undefined, String(error));
  assert(status.body.byteLength <= ERROR_BODY_LIMIT, `kept ${status.body.byteLength} bytes`);
});

Deno.test("an OCI-Chunk-Min-Length of 2^53-1 sends the blob in one streamed chunk", async () => {
  await using registry = await startFakeRegistry({ ociChunkMinLength: MAX });
  const { bytes, digest } = blob(4 * MiB, 4);
  using client = new BlobClient({ plainHttp: true, chunkedUpload: { chunkSize: MiB } });
  const before = Deno.memoryUsage().rss;
  await client.push(`${registry.host}/n/chunks`, digest, bytes.length, new Blob([bytes]).stream());
  assert(Deno.memoryUsage().rss - before < 256 * MiB);
  assert(registry.store.hasBlob("n/chunks", digest));
  assertEquals(registry.log.filter((r) => r.method === "PATCH").map((r) => r.bodyBytes), [
    bytes.length,
  ]);
});
