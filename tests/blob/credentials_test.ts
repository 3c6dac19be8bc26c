/**
 * The blob client's credentials, taken as the parted client takes them (an explicit credential,
 * the docker configuration and its helpers, a source), against the real Distribution registry
 * with `auth.token`; none by default, as the blob specification says.
 */
import { BlobClient } from "../../src/blob/mod.ts";
import { dockerConfigCredentials } from "../../src/auth/docker_config.ts";
import { findError } from "../../src/errors/find_error.ts";
import { UnauthorizedError } from "../../src/errors/sentinels.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../fixtures/assert.ts";
import { patternBytes } from "../fixtures/files.ts";
import { registryTest } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  countingTransport,
  startTokenRegistry,
  withCredentialHelper,
} from "../auth/_registry_helpers.ts";

const BYTES = patternBytes(300_000, 9);
const DIGEST = sha256Digest(BYTES);

registryTest("blob credentials: none by default, so a private registry refuses", async () => {
  await using auth = await startTokenRegistry();
  using transport = countingTransport();
  using client = new BlobClient({ plainHttp: true, transport: transport.fetch });
  const err = await assertRejects(() =>
    client.push(`${auth.registry.host}/team/blob`, DIGEST, BYTES.length, BYTES)
  );
  assert(findError(err, UnauthorizedError), "unauthorized");
  assertEquals(auth.tokens.requests.length, 0, "no token asked for");
  assert(transport.log.every((r) => r.authorization === null), "no credential sent");
});

registryTest("blob credentials: an explicit credential pushes, checks and pulls", async () => {
  await using auth = await startTokenRegistry();
  using transport = countingTransport();
  const host = auth.registry.host;
  using client = new BlobClient({
    plainHttp: true,
    transport: transport.fetch,
    credential: { username: "alice", password: "pw" },
    chunkedUpload: { chunkSize: 100_000 },
  });
  await client.push(`${host}/team/blob`, DIGEST, BYTES.length, BYTES);
  assert(await client.exists(`${host}/team/blob`, DIGEST), "pushed");
  const stream = await client.pull(`${host}/team/blob`, DIGEST);
  assertEquals(sha256Digest(new Uint8Array(await new Response(stream).arrayBuffer())), DIGEST);
  assertEquals(auth.tokens.requests.length, 2, "one push token, one pull token: one cache");
  assertEquals(transport.log.filter((r) => r.status === 401).length, 1, "only the first request");
});

registryTest("blob credentials: the docker configuration's helper answers", async () => {
  await using auth = await startTokenRegistry();
  await using dir = await tempDir();
  const host = auth.registry.host;
  const configPath = `${dir.path}/config.json`;
  await Deno.writeTextFile(configPath, JSON.stringify({ credsStore: "ocitest" }));
  await withCredentialHelper(async (asked) => {
    using client = new BlobClient({
      plainHttp: true,
      credentials: dockerConfigCredentials({ configPath }),
    });
    await client.push(`${host}/team/helper`, DIGEST, BYTES.length, BYTES);
    const range = await client.pullRange(`${host}/team/helper`, DIGEST, 10, 10);
    assertEquals(new Uint8Array(await new Response(range).arrayBuffer()), BYTES.subarray(10, 20));
    assertEquals(await asked(), [host], "asked once, for the dialed host");
  });
});

Deno.test("blob credentials: credential and credentials together are refused", () => {
  assertThrows(
    () =>
      new BlobClient({
        credential: { username: "alice", password: "pw" },
        credentials: dockerConfigCredentials(),
      }),
    TypeError,
    "BlobClient: pass either credential or credentials, not both",
  );
});
