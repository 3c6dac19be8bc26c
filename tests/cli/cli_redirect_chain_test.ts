/**
 * The redirect-chain rule through the CLI, on the real registry with token auth and the storage
 * redirect middleware: once a blob read has left the registry origin for storage, a hop that
 * storage sends back to the registry origin carries no credential, and the pull still completes
 * (the next attempt starts a fresh chain at the registry).
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import { credentialHeaders } from "../confidentiality/_helpers.ts";
import { runCli } from "./_cli.ts";

const PASSWORD = "s3cret-chain";
/** A blob path the registry does not hold: the hop back only needs to reach the origin. */
const ABSENT = `sha256:${"0".repeat(64)}`;

registryTest("a storage hop back to the registry origin carries no credential (CLI)", async () => {
  await using tmp = await tempDir();
  await using storageDir = await tempDir();
  await using token = await startTokenServer({ users: { alice: PASSWORD } });
  await using files = await startFileServer({ root: storageDir.path });
  await using registry = await startRegistry({
    storageDir: storageDir.path,
    token: {
      realm: token.realm,
      service: token.service,
      issuer: token.issuer,
      rootCertBundle: token.rootCertBundle,
    },
    redirect: { baseUrl: files.url },
  });
  await using proxy = await startFaultProxy({ target: registry.url });
  const source = `${tmp.path}/weights.bin`;
  const digest = await writePatternFile(source, 3 * 1024 * 1024);
  const reference = `${proxy.host}/chain/model:v1`;
  const login = ["--plain-http", "--progress", "none", "--username", "alice", "--password-stdin"];
  const push = await runCli(["push", ...login, "--part-size", "1MiB", reference, source], {
    tmp: tmp.path,
    stdin: PASSWORD,
  });
  assertStrictEquals(push.code, 0, push.stderr);

  // Storage answers the first blob read with a redirect back to the registry origin.
  files.fault({
    method: "GET",
    respond: {
      status: 307,
      headers: { location: `${proxy.url}/v2/chain/model/blobs/${ABSENT}?back=1` },
    },
  });
  const before = proxy.log.length;
  const out = `${tmp.path}/out.bin`;
  const pull = await runCli(["pull", ...login, "--workers", "1", reference, out], {
    tmp: tmp.path,
    stdin: PASSWORD,
  });
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(await sha256File(out), digest);
  const back = proxy.log.slice(before).filter((record) => record.query === "back=1");
  assertStrictEquals(back.length, 1, "the hop back reached the registry origin once");
  assertEquals(credentialHeaders(back[0].headers), [], "no credential on the way back");
  // Blob reads that start at the registry do carry the token: the rule is about the chain.
  const signed = proxy.log.slice(before).filter((record) =>
    record.method === "GET" && /\/blobs\/sha256:/.test(record.path) && record.query === "" &&
    record.headers.authorization !== undefined
  );
  assert(signed.length > 0, "registry-origin blob reads are authenticated");
});
