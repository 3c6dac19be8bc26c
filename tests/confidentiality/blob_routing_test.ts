/**
 * The blob library's cross-origin routing against the real registry with token auth: storage
 * redirects and absolute off-origin upload locations go to the storage transport, stripped of
 * Authorization, Proxy-Authorization, Cookie and Referer, and never through the registry
 * transport (so an authenticating wrapper cannot add a credential); off-origin refusals never
 * match the unauthorized sentinel; the default storage transport refuses loopback storage.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { createAuthFetch } from "../../src/auth/create_auth_fetch.ts";
import { staticCredentials } from "../../src/auth/credential.ts";
import { BlobClient } from "../../src/blob/client.ts";
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError, PeerRefusedError } from "../../src/errors/kinds.ts";
import { NotFoundError, UnauthorizedError } from "../../src/errors/sentinels.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import {
  credentialHeaders,
  ErrorLedger,
  sameBytes,
  SECRET,
  startStorageForwarder,
} from "./_helpers.ts";

const REPOSITORY = "conf/blob";
const POLICY = { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 };

registryTest("confidentiality: blob library cross-origin routing", async (t) => {
  const ledger = new ErrorLedger();
  const storageDir = await makeTempDir("ocipart-conf-storage-");
  await using token = await startTokenServer({
    users: { alice: "s3cret-pass" },
    realmQuery: `secret=${SECRET}`,
  });
  await using files = await startFileServer({ root: storageDir, setCookie: "storage=abc123" });
  await using registry = await startRegistry({
    storageDir,
    token: {
      realm: token.realm,
      service: token.service,
      issuer: token.issuer,
      rootCertBundle: token.rootCertBundle,
    },
    redirect: { baseUrl: files.url },
  });
  const forwarder = await startStorageForwarder({
    target: registry.url,
    authorization: async () =>
      `Bearer ${await token.issue({
        user: "alice",
        access: [{ type: "repository", name: REPOSITORY, actions: ["pull", "push"] }],
      })}`,
  });
  await using proxy = await startFaultProxy({ target: registry.url });
  ledger.forbid(registry.port, files.port, forwarder.port, proxy.port, "s3cret-pass");

  // The caller's registry transport: authenticates, and adds every other credential-like
  // header to whatever it is given. It must only ever be given registry requests.
  const base = new HttpTransport();
  const authenticated = createAuthFetch({
    registry: proxy.host,
    plainHttp: true,
    fetch: base.fetch,
    credentials: staticCredentials({ username: "alice", password: "s3cret-pass" }),
  });
  const seenByRegistryTransport: string[] = [];
  const transport: Fetch = (request) => {
    seenByRegistryTransport.push(new URL(request.url).host);
    const headers = new Headers(request.headers);
    headers.set("cookie", "session=registry-cookie");
    headers.set("proxy-authorization", "Basic cHJveHk6cHJveHk=");
    headers.set("referer", `${proxy.url}/ui`);
    return authenticated(new Request(request, { headers }));
  };
  const storageTransport = new HttpTransport();
  const client = new BlobClient({
    plainHttp: true,
    transport,
    storageTransport: storageTransport.fetch,
    retryPolicy: POLICY,
  });
  const repo = `${proxy.host}/${REPOSITORY}`;
  const bytes = crypto.getRandomValues(new Uint8Array(50_000));
  const digest = sha256Digest(bytes);
  try {
    await t.step("an absolute upload location on another origin gets no credential", async () => {
      proxy.fault({
        method: "POST",
        path: /\/blobs\/uploads\/$/,
        location: forwarder.url,
        times: Infinity,
      });
      await client.push(repo, digest, bytes.byteLength, bytes);
      const put = forwarder.log.filter((r) => r.method === "PUT");
      assertStrictEquals(put.length, 1);
      assertEquals(credentialHeaders(put[0].headers), []);
      assert(
        seenByRegistryTransport.every((host) => host === proxy.host),
        "the registry transport never saw the storage origin",
      );
    });

    await t.step("a storage redirect gets no credential", async () => {
      const stream = await client.pull(repo, digest);
      assert(sameBytes(new Uint8Array(await new Response(stream).arrayBuffer()), bytes));
      const gets = files.log.filter((r) => r.method === "GET");
      assertStrictEquals(gets.length, 1);
      for (const record of files.log) assertEquals(credentialHeaders(record.headers), []);
      assert(seenByRegistryTransport.every((host) => host === proxy.host));
      // The registry did receive the credential and the added headers: they were real.
      const registryGets = proxy.log.filter((r) => r.method === "GET");
      assert(registryGets.some((r) => /^Bearer /.test(r.headers.authorization ?? "")));
    });

    await t.step("a storage 403 never matches the unauthorized sentinel", async () => {
      files.fault({
        method: "GET",
        times: Infinity,
        respond: { status: 403, body: `X-Amz-Signature=${SECRET}` },
      });
      const err = await ledger.rejection(client.pull(repo, digest).then((s) => s.cancel()));
      files.clearFaults();
      assertStrictEquals(findError(err, UnauthorizedError), undefined);
      assertStrictEquals(findError(err, NotFoundError), undefined);
      const http = findError(err, HttpStatusError);
      assert(http);
      assertStrictEquals(http.offOrigin, true);
      assertStrictEquals(http.body.byteLength, 0);
    });

    await t.step("the default storage transport refuses loopback storage", async () => {
      const guarded = new BlobClient({ plainHttp: true, transport, retryPolicy: POLICY });
      const before = files.log.length;
      try {
        const err = await ledger.rejection(guarded.pull(repo, digest).then((s) => s.cancel()));
        assert(findError(err, PeerRefusedError));
        assertStrictEquals(files.log.length, before, "storage was never contacted");
      } finally {
        guarded.close();
      }
    });
  } finally {
    client.close();
    storageTransport.close();
    base.close();
    await forwarder.close();
    await removeDir(storageDir);
  }
});
