/**
 * Blob redirects against the real registry with token auth and the `redirect` storage
 * middleware, behind a counting proxy: the storage origin never receives a credential or a
 * cookie, a same-origin hop does carry the credential, at most three hops are followed, a
 * location is never reused by a later attempt, and storage refusals are retried without
 * matching the unauthorized or not-found sentinels.
 */
import { assert, assertEquals, assertMatch, assertStrictEquals } from "../fixtures/assert.ts";
import { join } from "node:path";
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError, RedirectError, RetriesExhaustedError } from "../../src/errors/kinds.ts";
import { NotFoundError, UnauthorizedError } from "../../src/errors/sentinels.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
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

const PART = 64 * 1024;
const BLOB_GET = /\/v2\/conf\/[a-z]+\/blobs\/sha256:/;
/** A blob path the registry does not hold: the hop back only needs to reach the origin. */
const EMPTY_PROBE = `sha256:${"0".repeat(64)}`;

registryTest("confidentiality: blob redirects to storage", async (t) => {
  const ledger = new ErrorLedger();
  const work = await makeTempDir("ocipart-conf-");
  const storageDir = await makeTempDir("ocipart-conf-storage-");
  await using token = await startTokenServer({
    users: { alice: "s3cret-pass" },
    realmQuery: `secret=${SECRET}`,
  });
  // The storage origin sets a cookie on every answer: it must never come back.
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
  await using proxy = await startFaultProxy({ target: registry.url });
  // The registry origin sets a cookie too: there is no cookie jar anywhere.
  proxy.fault({ headers: { "set-cookie": "registry=def456" }, times: Infinity });
  ledger.forbid(registry.port, files.port, new URL(token.url).port, proxy.port);
  ledger.forbid("s3cret-pass", "abc123", "def456");

  using client = new PartedClient({
    plainHttp: true,
    credential: { username: "alice", password: "s3cret-pass" },
    retryPolicy: FAST_POLICY,
  });
  const source = join(work, "source.bin");
  const many = await writeRandomFile(source, 3 * PART + 1000, 11);
  const single = join(work, "single.bin");
  const one = await writeRandomFile(single, 5000, 12);
  try {
    await client.push(`${proxy.host}/conf/many:v1`, fromFile(source), { partSize: PART });
    await client.push(`${proxy.host}/conf/one:v1`, fromFile(single), { partSize: PART });

    await t.step("a pull through storage redirects sends storage no credential", async () => {
      const before = files.log.length;
      const dest = join(work, "many.out");
      await client.pull(`${proxy.host}/conf/many:v1`, toFile(dest));
      assert(sameBytes(await Deno.readFile(dest), many));
      const storage = files.log.slice(before);
      assertStrictEquals(
        storage.filter((r) => r.method === "GET").length,
        4,
        "four parts via storage",
      );
      for (const record of storage) {
        assertEquals(credentialHeaders(record.headers), [], `storage got credentials`);
      }
      // The credential existed: the registry's own blob requests carried it.
      const registryBlobGets = proxy.log.filter((r) => r.method === "GET" && BLOB_GET.test(r.path));
      assert(registryBlobGets.length >= 4);
      for (const record of registryBlobGets) {
        assertMatch(record.headers.authorization ?? "", /^Bearer /);
        assertStrictEquals(record.headers.cookie, undefined, "no cookie jar for the registry");
      }
    });

    await t.step("a same-origin hop carries the credential, the storage hop does not", async () => {
      proxy.clearFaults();
      // First blob GET: the registry origin itself redirects to another path on its origin.
      proxy.fault({
        method: "GET",
        path: BLOB_GET,
        query: /^$/,
        respond: { status: 307, headers: { location: "?hop=1" } },
      });
      const before = files.log.length;
      const proxyBefore = proxy.log.length;
      const dest = join(work, "one.out");
      await client.pull(`${proxy.host}/conf/one:v1`, toFile(dest), { workers: 1 });
      assert(sameBytes(await Deno.readFile(dest), one));
      const hop = proxy.log.slice(proxyBefore).find((r) => r.query === "hop=1");
      assert(hop !== undefined, "the same-origin hop reached the registry origin");
      assertMatch(hop.headers.authorization ?? "", /^Bearer /, "same origin keeps the credential");
      const storage = files.log.slice(before);
      assertStrictEquals(storage.length, 1);
      assertEquals(credentialHeaders(storage[0].headers), []);
    });

    await t.step(
      "once the chain left the origin, a hop back to it carries no credential",
      async () => {
        proxy.clearFaults();
        // Storage answers the registry's redirect with a redirect back to the registry origin.
        files.fault({
          method: "GET",
          respond: {
            status: 307,
            headers: { location: `${proxy.url}/v2/conf/one/blobs/${EMPTY_PROBE}?back=1` },
          },
        });
        const proxyBefore = proxy.log.length;
        const dest = join(work, "back.out");
        await client.pull(`${proxy.host}/conf/one:v1`, toFile(dest), { workers: 1 });
        assert(sameBytes(await Deno.readFile(dest), one), "the retry completed the pull");
        const back = proxy.log.slice(proxyBefore).find((r) => r.query === "back=1");
        assert(back !== undefined, "the hop back reached the registry origin");
        assertEquals(credentialHeaders(back.headers), [], "no credential on the way back");
        files.clearFaults();
      },
    );

    await t.step("three hops are followed, a fourth is refused before its target", async () => {
      const hops = (n: number) => {
        proxy.clearFaults();
        for (let i = 1; i <= n; i++) {
          proxy.fault({
            method: "GET",
            path: BLOB_GET,
            query: i === 1 ? /^$/ : new RegExp(`hop=${i - 1}$`),
            respond: { status: 307, headers: { location: `?hop=${i}` } },
          });
        }
      };
      // Two same-origin hops plus the registry's own storage redirect: three, accepted.
      hops(2);
      await client.pull(`${proxy.host}/conf/one:v1`, toFile(join(work, "hops3.out")), {
        workers: 1,
      });
      // Three same-origin hops plus the storage redirect: the fourth is refused.
      hops(3);
      const before = files.log.length;
      const proxyBefore = proxy.log.length;
      const err = await ledger.rejection(
        client.pull(`${proxy.host}/conf/one:v1`, toFile(join(work, "hops4.out")), {
          workers: 1,
        }),
      );
      assert(findError(err, RedirectError), "a redirect error");
      assertStrictEquals(files.log.length, before, "the fourth target was never contacted");
      // Terminal: one attempt, four blob GETs at the registry origin (the first and 3 hops).
      const gets = proxy.log.slice(proxyBefore).filter((r) =>
        r.method === "GET" && BLOB_GET.test(r.path)
      );
      assertStrictEquals(gets.length, 4);
    });

    await t.step("a failed storage read asks the registry again", async () => {
      proxy.clearFaults();
      proxy.fault({ headers: { "set-cookie": "registry=def456" }, times: Infinity });
      files.fault({ method: "GET", respond: { status: 503, body: SECRET } });
      const before = files.log.length;
      const proxyBefore = proxy.log.length;
      const dest = join(work, "retry.out");
      await client.pull(`${proxy.host}/conf/one:v1`, toFile(dest), { workers: 1 });
      assert(sameBytes(await Deno.readFile(dest), one));
      const gets = proxy.log.slice(proxyBefore).filter((r) =>
        r.method === "GET" && BLOB_GET.test(r.path)
      );
      assertStrictEquals(gets.length, 2, "each attempt asks the registry for the blob");
      assertStrictEquals(files.log.length - before, 2);
    });

    for (const status of [401, 403, 404, 410]) {
      await t.step(`storage ${status} is retried and matches no sentinel`, async () => {
        files.clearFaults();
        files.fault({
          method: "GET",
          times: Infinity,
          respond: {
            status,
            headers: { "www-authenticate": `Bearer realm="${token.realm}"` },
            body: `<Error>expired X-Amz-Signature=${SECRET}</Error>`,
          },
        });
        const proxyBefore = proxy.log.length;
        const storageBefore = files.log.length;
        const tokensBefore = token.requests.length;
        const err = await ledger.rejection(
          client.pull(`${proxy.host}/conf/one:v1`, toFile(join(work, `s${status}.out`)), {
            workers: 1,
          }),
        );
        files.clearFaults();
        assertStrictEquals(findError(err, UnauthorizedError), undefined, "not unauthorized");
        assertStrictEquals(findError(err, NotFoundError), undefined, "not not-found");
        assert(findError(err, RetriesExhaustedError), "retried until the budget ran out");
        const http = findError(err, HttpStatusError);
        assert(http);
        assertStrictEquals(http.status, status);
        assertStrictEquals(http.offOrigin, true);
        assertStrictEquals(http.body.byteLength, 0, "the storage body is dropped unread");
        const gets = proxy.log.slice(proxyBefore).filter((r) =>
          r.method === "GET" && BLOB_GET.test(r.path)
        );
        assertStrictEquals(gets.length, FAST_POLICY.maxAttempts, "every attempt asks the registry");
        assertStrictEquals(files.log.length - storageBefore, FAST_POLICY.maxAttempts);
        // A storage refusal never sends a credential, not even after a challenge.
        for (const record of files.log.slice(storageBefore)) {
          assertEquals(credentialHeaders(record.headers), []);
        }
        // Its challenge is not the registry's: it asks for no token (the client's cached token
        // serves the registry's manifest).
        assertStrictEquals(token.requests.length - tokensBefore, 0);
      });
    }

    await t.step("a same-origin redirect target's 404 is retried, not not-found", async () => {
      proxy.clearFaults();
      proxy.fault({
        method: "GET",
        path: BLOB_GET,
        query: /^$/,
        times: Infinity,
        respond: { status: 307, headers: { location: "?hop=1" } },
      });
      proxy.fault({
        method: "GET",
        path: BLOB_GET,
        query: /hop=1$/,
        times: Infinity,
        respond: { status: 404, body: SECRET },
      });
      const proxyBefore = proxy.log.length;
      const err = await ledger.rejection(
        client.pull(`${proxy.host}/conf/one:v1`, toFile(join(work, "hop404.out")), {
          workers: 1,
        }),
      );
      proxy.clearFaults();
      assertStrictEquals(findError(err, NotFoundError), undefined, "not not-found");
      assert(findError(err, RetriesExhaustedError));
      const firsts = proxy.log.slice(proxyBefore).filter((r) =>
        r.method === "GET" && BLOB_GET.test(r.path) && r.query === ""
      );
      assertStrictEquals(firsts.length, FAST_POLICY.maxAttempts, "every attempt asks the registry");
    });

    await t.step("no request anywhere carried a cookie", () => {
      for (const record of [...files.log, ...proxy.log]) {
        assertStrictEquals(record.headers.cookie, undefined);
      }
      assert(ledger.errors.length >= 5);
    });
  } finally {
    await removeDir(work);
    await removeDir(storageDir);
  }
});
