/**
 * Off-origin upload sessions against the real registry with token auth: a fault proxy rewrites
 * the session Location to a storage origin that forwards with its own signature. The PUT
 * arrives there without Authorization or Cookie, is never replayed, a 401 or 403 from it opens
 * a fresh session on the next attempt (never a credential), and its body never reaches an
 * error.
 */
import {
  assert,
  assertEquals,
  assertMatch,
  assertNotStrictEquals,
  assertStrictEquals,
} from "../fixtures/assert.ts";
import { join } from "node:path";
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError, RetriesExhaustedError } from "../../src/errors/kinds.ts";
import { NotFoundError, UnauthorizedError } from "../../src/errors/sentinels.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import {
  credentialHeaders,
  ErrorLedger,
  FAST_POLICY,
  sameBytes,
  SECRET,
  startStorageForwarder,
  writeRandomFile,
} from "./_helpers.ts";

const PART = 64 * 1024;
const REPOSITORY = "conf/upload";

registryTest("confidentiality: off-origin upload sessions", async (t) => {
  const ledger = new ErrorLedger();
  const work = await makeTempDir("ocipart-conf-");
  await using token = await startTokenServer({
    users: { alice: "s3cret-pass" },
    realmQuery: `secret=${SECRET}`,
  });
  await using registry = await startRegistry({
    token: {
      realm: token.realm,
      service: token.service,
      issuer: token.issuer,
      rootCertBundle: token.rootCertBundle,
    },
  });
  // The storage origin presents its own signature to the registry, as a signed URL would.
  const storage = await startStorageForwarder({
    target: registry.url,
    authorization: async () =>
      `Bearer ${await token.issue({
        user: "alice",
        access: [{ type: "repository", name: REPOSITORY, actions: ["pull", "push"] }],
      })}`,
    answerHeaders: { "set-cookie": "storage=abc123" },
  });
  await using proxy = await startFaultProxy({ target: registry.url });
  proxy.fault({
    method: "POST",
    path: /\/blobs\/uploads\/$/,
    location: storage.url,
    headers: { "set-cookie": "registry=def456" },
    times: Infinity,
  });
  proxy.fault({ headers: { "set-cookie": "registry=def456" }, times: Infinity });
  ledger.forbid(registry.port, storage.port, proxy.port, new URL(token.url).port);
  ledger.forbid("s3cret-pass", "abc123", "def456");

  using client = new PartedClient({
    plainHttp: true,
    credential: { username: "alice", password: "s3cret-pass" },
    retryPolicy: FAST_POLICY,
  });
  const posts = () => proxy.count({ method: "POST" });
  const puts = () => storage.log.filter((r) => r.method === "PUT");
  try {
    await t.step("the PUT reaches storage without credential or cookie", async () => {
      const source = join(work, "a.bin");
      const bytes = await writeRandomFile(source, 3 * PART + 10, 21);
      await client.push(`${proxy.host}/${REPOSITORY}:a`, fromFile(source), { partSize: PART });
      assert(puts().length >= 4, "every part went to the storage origin");
      for (const record of storage.log) {
        assertEquals(credentialHeaders(record.headers), [], "storage got credentials");
      }
      for (const record of proxy.log.filter((r) => r.method === "POST")) {
        assertMatch(record.headers.authorization ?? "", /^Bearer /, "the registry got the token");
        assertStrictEquals(record.headers.cookie, undefined);
      }
      // The parts really landed through the storage origin.
      const dest = join(work, "a.out");
      await client.pull(`${proxy.host}/${REPOSITORY}:a`, toFile(dest));
      assert(sameBytes(await Deno.readFile(dest), bytes));
    });

    for (const status of [401, 403]) {
      await t.step(`a ${status} from storage opens a fresh session, no credential`, async () => {
        const source = join(work, `r${status}.bin`);
        const bytes = await writeRandomFile(source, 5000, status);
        storage.failNext({
          status,
          headers: { "www-authenticate": `Bearer realm="${token.realm}",service="x"` },
          body: `<Error>SignatureDoesNotMatch X-Amz-Signature=${SECRET}</Error>`,
        });
        const postsBefore = posts();
        const putsBefore = puts().length;
        const tokensBefore = token.requests.length;
        await client.push(`${proxy.host}/${REPOSITORY}:r${status}`, fromFile(source));
        // Two sessions for the one part: the refused one and the fresh one.
        assertStrictEquals(posts() - postsBefore, 2);
        const attempts = puts().slice(putsBefore);
        assertStrictEquals(attempts.length, 2);
        assertNotStrictEquals(
          attempts[0].path + attempts[0].query,
          attempts[1].path + attempts[1].query,
        );
        for (const record of attempts) assertEquals(credentialHeaders(record.headers), []);
        // The storage challenge was not answered: the only token requests are the registry's
        // own (at most one per scope for this push).
        assert(token.requests.length - tokensBefore <= 2);
        for (const record of token.requests.slice(tokensBefore)) {
          assertNotStrictEquals(record.query.includes("service=x"), true, "storage realm not used");
        }
        const dest = join(work, `r${status}.out`);
        await client.pull(`${proxy.host}/${REPOSITORY}:r${status}`, toFile(dest));
        assert(sameBytes(await Deno.readFile(dest), bytes));
      });
    }

    await t.step("a storage refusal on every attempt fails without a sentinel", async () => {
      const source = join(work, "refused.bin");
      await writeRandomFile(source, 7000, 99);
      for (let i = 0; i < FAST_POLICY.maxAttempts; i++) {
        storage.failNext({ status: 403, body: `X-Amz-Signature=${SECRET}` });
      }
      const postsBefore = posts();
      const putsBefore = puts().length;
      const err = await ledger.rejection(
        client.push(`${proxy.host}/${REPOSITORY}:refused`, fromFile(source)),
      );
      assertStrictEquals(findError(err, UnauthorizedError), undefined);
      assertStrictEquals(findError(err, NotFoundError), undefined);
      assert(findError(err, RetriesExhaustedError));
      const http = findError(err, HttpStatusError);
      assert(http);
      assertStrictEquals(http.status, 403);
      assertStrictEquals(http.offOrigin, true);
      assertStrictEquals(http.body.byteLength, 0, "the storage body is dropped unread");
      assertStrictEquals(posts() - postsBefore, FAST_POLICY.maxAttempts, "a session per attempt");
      assertStrictEquals(
        puts().length - putsBefore,
        FAST_POLICY.maxAttempts,
        "one PUT per session",
      );
    });

    await t.step("no request anywhere carried a cookie", () => {
      for (const record of [...storage.log, ...proxy.log]) {
        assertStrictEquals(record.headers.cookie, undefined);
      }
    });
  } finally {
    await storage.close();
    await removeDir(work);
  }
});
