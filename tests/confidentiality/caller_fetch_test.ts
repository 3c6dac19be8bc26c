/**
 * A caller-supplied transport hides the true peer: cross-host requests (a token realm, a blob
 * redirect to another host) fail closed before anything is sent, unless the caller opts in by
 * giving the same transport as `storageTransport`, which routes them through it.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { join } from "node:path";
import { findError } from "../../src/errors/find_error.ts";
import { PeerRefusedError } from "../../src/errors/kinds.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import {
  credentialHeaders,
  ErrorLedger,
  FAST_POLICY,
  sameBytes,
  SECRET,
  writeRandomFile,
} from "./_helpers.ts";

/** A caller's transport that records the host of every request it is given. */
function recordingFetch(): { fetch: Fetch; hosts: string[]; close(): void } {
  const transport = new HttpTransport();
  const hosts: string[] = [];
  return {
    fetch: (request) => {
      hosts.push(new URL(request.url).hostname);
      return transport.fetch(request);
    },
    hosts,
    close: () => transport.close(),
  };
}

registryTest("confidentiality: a caller's transport and cross-host requests", async (t) => {
  const ledger = new ErrorLedger();
  const work = await makeTempDir("ocipart-conf-");
  const storageDir = await makeTempDir("ocipart-conf-storage-");
  // Realm and storage are addressed as localhost, the registry as 127.0.0.1: other hosts.
  await using token = await startTokenServer({
    users: { alice: "s3cret-pass" },
    realmQuery: `secret=${SECRET}`,
  });
  const realm = token.realm.replace("127.0.0.1", "localhost");
  await using files = await startFileServer({ root: storageDir });
  const storageBase = files.url.replace("127.0.0.1", "localhost");
  await using registry = await startRegistry({
    storageDir,
    token: {
      realm,
      service: token.service,
      issuer: token.issuer,
      rootCertBundle: token.rootCertBundle,
    },
    redirect: { baseUrl: storageBase },
  });
  // The same storage, anonymous: its only cross-host request is the blob redirect.
  await using anonymous = await startRegistry({ storageDir, redirect: { baseUrl: storageBase } });
  ledger.forbid(registry.port, anonymous.port, files.port, new URL(token.url).port, "s3cret-pass");
  const caller = recordingFetch();
  const credential = { username: "alice", password: "s3cret-pass" };
  const source = join(work, "source.bin");
  const bytes = await writeRandomFile(source, 20_000, 5);
  try {
    await t.step("without the opt-in a cross-host token realm fails closed", async () => {
      using client = new PartedClient({
        plainHttp: true,
        credential,
        transport: caller.fetch,
        retryPolicy: FAST_POLICY,
      });
      const err = await ledger.rejection(
        client.push(`${registry.host}/conf/caller:v1`, fromFile(source)),
      );
      assert(findError(err, PeerRefusedError), "fails closed");
      assertStrictEquals(token.requests.length, 0, "the realm was never contacted");
      assert(caller.hosts.length > 0, "registry requests went through the caller's fetch");
      assert(caller.hosts.every((host) => host === "127.0.0.1"), "only the registry's host");
    });

    await t.step("with the opt-in it goes through the caller's transport", async () => {
      using client = new PartedClient({
        plainHttp: true,
        credential,
        transport: caller.fetch,
        storageTransport: caller.fetch,
        retryPolicy: FAST_POLICY,
      });
      caller.hosts.length = 0;
      await client.push(`${registry.host}/conf/caller:v1`, fromFile(source));
      assert(token.requests.length > 0);
      assert(caller.hosts.includes("localhost"), "the realm request used the caller's fetch");
      const dest = join(work, "opt-in.out");
      caller.hosts.length = 0;
      const storageBefore = files.log.length;
      await client.pull(`${registry.host}/conf/caller:v1`, toFile(dest));
      assert(sameBytes(await Deno.readFile(dest), bytes));
      assert(files.log.length > storageBefore, "the redirect was followed");
      for (const record of files.log) assertEquals(credentialHeaders(record.headers), []);
    });

    await t.step("without the opt-in a cross-host blob redirect fails closed", async () => {
      using client = new PartedClient({
        plainHttp: true,
        transport: caller.fetch,
        retryPolicy: FAST_POLICY,
      });
      const storageBefore = files.log.length;
      caller.hosts.length = 0;
      const err = await ledger.rejection(
        client.pull(`${anonymous.host}/conf/caller:v1`, toFile(join(work, "closed.out"))),
      );
      assert(findError(err, PeerRefusedError), "fails closed");
      assertStrictEquals(files.log.length, storageBefore, "storage was never contacted");
      assert(caller.hosts.every((host) => host === "127.0.0.1"));
    });

    await t.step("the default transport refuses the loopback realm as well", async () => {
      using client = new PartedClient({ plainHttp: true, credential, retryPolicy: FAST_POLICY });
      const before = token.requests.length;
      const err = await ledger.rejection(
        client.pull(`${registry.host}/conf/caller:v1`, toFile(join(work, "default.out"))),
      );
      assert(findError(err, PeerRefusedError));
      assertStrictEquals(token.requests.length, before);
    });
  } finally {
    caller.close();
    await removeDir(work);
    await removeDir(storageDir);
  }
});
