/**
 * `insecureTls` on both clients against the real registry serving HTTPS with a certificate no
 * root trusts: refused by default, accepted with the option on every path (manifests, part
 * uploads from files, downloads, blob pushes and pulls).
 */
import { assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { BlobClient, fromFile, PartedClient, sha256Digest, toFile } from "../../mod.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { assertCertificateRefused } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";

const KiB = 1024;

registryTest("PartedClient: insecureTls pushes, inspects and pulls over unverified TLS", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 300 * KiB, 3);
  const ref = `${registry.host}/insecure/parted:v1`;

  using strict = new PartedClient({ retryPolicy: {} });
  await assertCertificateRefused(strict.push(ref, fromFile(source), { partSize: 128 * KiB }));

  using client = new PartedClient({ insecureTls: true });
  await client.push(ref, fromFile(source), { partSize: 128 * KiB });
  const description = await client.inspect(ref);
  assertStrictEquals(description.parts.length, 3);
  await client.pull(ref, toFile(`${tmp.path}/out.bin`));
  assertEquals(await Deno.readFile(`${tmp.path}/out.bin`), await Deno.readFile(source));
  assertStrictEquals((await client.verify(ref, source)).identical, true);
});

registryTest("BlobClient: insecureTls pushes and pulls a blob over unverified TLS", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  const repository = `${registry.host}/insecure/blob`;
  const bytes = new TextEncoder().encode("self-signed but accepted");
  const digest = sha256Digest(bytes);

  using strict = new BlobClient({ retryPolicy: {} });
  await assertCertificateRefused(strict.exists(repository, digest));

  using client = new BlobClient({ insecureTls: true });
  await client.push(repository, digest, bytes.length, bytes);
  assertStrictEquals(await client.exists(repository, digest), true);
  const pulled = await new Response(await client.pull(repository, digest)).arrayBuffer();
  assertEquals(new Uint8Array(pulled), bytes);
});

registryTest("HttpTransport: insecureTls reaches the registry; the default refuses it", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  const strict = new HttpTransport();
  const insecure = new HttpTransport({ insecureTls: true });
  try {
    await assertCertificateRefused(strict.fetch(new Request(`${registry.url}/v2/`)));
    const response = await insecure.fetch(new Request(`${registry.url}/v2/`));
    assertStrictEquals(response.status, 200);
    await response.body?.cancel();
  } finally {
    strict.close();
    insecure.close();
  }
});
