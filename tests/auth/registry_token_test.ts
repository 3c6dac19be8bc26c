/**
 * Registry authentication end to end: the real Distribution registry with `auth.token` and the
 * test token server (ES256 JWTs), driven by the parted client and by raw request sequences
 * through the authenticated fetch.
 */
import { AuthRetryError } from "../../src/auth/auth_retry_error.ts";
import { RegistryAuthenticator } from "../../src/auth/authenticator.ts";
import { createAuthFetch } from "../../src/auth/create_auth_fetch.ts";
import { staticCredentials } from "../../src/auth/credential.ts";
import { dockerConfigCredentials } from "../../src/auth/docker_config.ts";
import { findError } from "../../src/errors/find_error.ts";
import { AuthChallengeError, CredentialError, HttpStatusError } from "../../src/errors/kinds.ts";
import { UnauthorizedError } from "../../src/errors/sentinels.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { resolveLocation, withDigestQuery } from "../../src/registry/location.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import {
  EMPTY_CONFIG_BYTES,
  EMPTY_CONFIG_DESCRIPTOR,
  OCI_MANIFEST_MEDIA_TYPE,
} from "../../src/registry/media_types.ts";
import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { patternBytes, sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  allMessages,
  blobPut,
  countingTransport,
  startTokenRegistry,
  uploadBlob,
  withCredentialHelper,
} from "./_registry_helpers.ts";

const PART = 64 * 1024;
const SIZE = 5 * PART - 1000; // 5 parts
const PARTS = 5;
/** Per blob (5 parts + the config): HEAD, POST, PUT; then the manifest PUT. */
const PUSH_REQUESTS = 3 * (PARTS + 1) + 1;

registryTest(
  "unchallenged registry: a transfer makes no extra request and sends no credential",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    using transport = countingTransport();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, SIZE);
    using client = new PartedClient({
      plainHttp: true,
      transport: transport.fetch,
      credential: { username: "alice", password: "pw" },
    });
    await client.push(`${registry.host}/team/data:v1`, fromFile(src), {
      partSize: PART,
      workers: 1,
    });
    assertEquals(transport.log.length, PUSH_REQUESTS);
    await client.pull(`${registry.host}/team/data:v1`, toFile(`${dir.path}/out.bin`), {
      workers: 1,
    });
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
    assertEquals(
      transport.log.length,
      PUSH_REQUESTS + 1 + PARTS,
      "manifest GET + one GET per part",
    );
    assert(transport.log.every((r) => r.authorization === null && r.status !== 401));
  },
);

registryTest(
  "token auth: push and pull with an explicit credential, exact request counts",
  async () => {
    await using auth = await startTokenRegistry();
    await using dir = await tempDir();
    using transport = countingTransport();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, SIZE);
    using client = new PartedClient({
      plainHttp: true,
      transport: transport.fetch,
      credential: { username: "alice", password: "pw" },
    });
    const ref = `${auth.registry.host}/team/data:v1`;
    await client.push(ref, fromFile(src), { partSize: PART, workers: 1 });
    const registryRequests = () => transport.log.filter((r) => !r.path.startsWith("/token"));
    // One refusal (the first request is anonymous), then every request carries a token.
    assertEquals(registryRequests().length, PUSH_REQUESTS + 1);
    assertEquals(registryRequests().filter((r) => r.status === 401).length, 1);
    // One token request per scope entry while the tokens live: pull (HEAD) and push.
    assertEquals(auth.tokens.requests.map((r) => [r.user, r.scopes]), [
      ["alice", ["repository:team/data:pull"]],
      ["alice", ["repository:team/data:pull,push"]],
    ]);

    await client.pull(ref, toFile(`${dir.path}/out.bin`), { workers: 1 });
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
    // The client's token cache outlives the push: the pull presents the pull,push token at
    // once (no refusal) and asks for no new token.
    assertEquals(registryRequests().length, PUSH_REQUESTS + 1 + 1 + PARTS);
    assertEquals(registryRequests().filter((r) => r.status === 401).length, 1);
    assertEquals(auth.tokens.requests.length, 2, "the pull reused the client's token");
  },
);

registryTest(
  "token auth: credentials from the docker config file and from a credential helper",
  async () => {
    await using auth = await startTokenRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, SIZE);
    const host = auth.registry.host;

    const configPath = `${dir.path}/config.json`;
    await Deno.writeTextFile(
      configPath,
      JSON.stringify({ auths: { [host]: { auth: btoa("alice:pw") } } }),
    );
    using fromConfig = new PartedClient({
      plainHttp: true,
      credentials: dockerConfigCredentials({ configPath }),
    });
    await fromConfig.push(`${host}/team/config:v1`, fromFile(src), { partSize: PART });
    await fromConfig.pull(`${host}/team/config:v1`, toFile(`${dir.path}/a.bin`));
    assertEquals(await sha256File(`${dir.path}/a.bin`), digest);

    await withCredentialHelper(async (asked) => {
      const helperConfig = `${dir.path}/helper.json`;
      await Deno.writeTextFile(
        helperConfig,
        JSON.stringify({ credHelpers: { [host]: "ocitest" } }),
      );
      using fromHelper = new PartedClient({
        plainHttp: true,
        credentials: dockerConfigCredentials({ configPath: helperConfig }),
      });
      await fromHelper.push(`${host}/team/helper:v1`, fromFile(src), { partSize: PART });
      await fromHelper.pull(`${host}/team/helper:v1`, toFile(`${dir.path}/b.bin`));
      assertEquals(await sha256File(`${dir.path}/b.bin`), digest);
      assertEquals(await asked(), [host], "asked for the dialed host, once per client");
    });
    assert(auth.tokens.requests.every((r) => r.user === "alice"));
  },
);

registryTest(
  "token auth: anonymous pull of a public repository; a private one is refused",
  async () => {
    await using auth = await startTokenRegistry({
      grants: { alice: { "*": ["pull", "push"] }, "": { "public/data": ["pull"] } },
    });
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, SIZE);
    const host = auth.registry.host;
    using alice = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "pw" },
    });
    await alice.push(`${host}/public/data:v1`, fromFile(src), { partSize: PART });
    await alice.push(`${host}/team/data:v1`, fromFile(src), { partSize: PART });

    using anonymous = new PartedClient({ plainHttp: true, credentials: staticCredentials({}) });
    await anonymous.pull(`${host}/public/data:v1`, toFile(`${dir.path}/pub.bin`));
    assertEquals(await sha256File(`${dir.path}/pub.bin`), digest);

    const before = auth.tokens.requests.length;
    const err = await assertRejects(
      () => anonymous.pull(`${host}/team/data:v1`, toFile(`${dir.path}/priv.bin`)),
    );
    assert(findError(err, UnauthorizedError), "the anonymous token is refused: unauthorized");
    assertEquals(auth.tokens.requests.length - before, 1, "terminal: no second token request");
    assertEquals(auth.tokens.requests.at(-1)?.user, "");
  },
);

registryTest(
  "token auth: wrong password is unauthorized with zero part attempts; identity token refused",
  async () => {
    await using auth = await startTokenRegistry();
    await using dir = await tempDir();
    using transport = countingTransport();
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, SIZE);
    const host = auth.registry.host;
    using wrong = new PartedClient({
      plainHttp: true,
      transport: transport.fetch,
      credential: { username: "alice", password: "wrong" },
    });
    const err = await assertRejects(() =>
      wrong.push(`${host}/team/data:v1`, fromFile(src), { partSize: PART, workers: 1 })
    );
    const unauthorized = findError(err, UnauthorizedError);
    assert(unauthorized, "unauthorized");
    assert(allMessages(err).includes("refused pull access"), "names the refused access");
    assertEquals(transport.count("PUT"), 0, "no part was sent");
    assertEquals(transport.count("POST"), 0, "no session was opened");
    assertEquals(auth.tokens.requests.filter((r) => r.status === 401).length, 1);

    const configPath = `${dir.path}/config.json`;
    await Deno.writeTextFile(
      configPath,
      JSON.stringify({ auths: { [host]: { auth: btoa("alice:"), identitytoken: "refresh" } } }),
    );
    const tokenRequests = auth.tokens.requests.length;
    using identity = new PartedClient({
      plainHttp: true,
      credentials: dockerConfigCredentials({ configPath }),
    });
    const idErr = await assertRejects(() =>
      identity.push(`${host}/team/data:v1`, fromFile(src), { partSize: PART })
    );
    assert(findError(idErr, CredentialError), "an explicit credential error");
    assertEquals(findError(idErr, UnauthorizedError), undefined, "never downgraded");
    assertEquals(auth.tokens.requests.length, tokenRequests, "no request to the token endpoint");
  },
);

registryTest(
  "token auth: an expired token is renewed, in the call for a HEAD, as a retry for a PUT",
  async () => {
    // The token endpoint states 300 s but the JWT really expires at once: with Distribution's
    // 60 s leeway it is accepted for about 4 s, then refused.
    await using auth = await startTokenRegistry({ expiresIn: 300, expOffsetSeconds: -56 });
    using transport = countingTransport();
    const base = auth.registry.url;
    const authenticator = new RegistryAuthenticator({
      registry: auth.registry.host,
      plainHttp: true,
      fetch: transport.fetch,
      credentials: staticCredentials({ username: "alice", password: "pw" }),
    });
    const bytes = patternBytes(10_000, 3);
    const digest = sha256Digest(bytes);
    const head = () =>
      authenticator.fetch(new Request(`${base}/v2/team/data/blobs/${digest}`, { method: "HEAD" }));

    /** Waits until the registry itself refuses the cached token of an entry. */
    const waitUntilRefused = async (action: "pull" | "push") => {
      const token = authenticator.tokenCache.peek("team/data", action)!.token;
      while (true) {
        const probe = await fetch(`${base}/v2/team/data/blobs/${digest}`, {
          method: "HEAD",
          headers: { authorization: `Bearer ${token}` },
        });
        if (probe.status === 401) return;
        await new Promise((r) => setTimeout(r, 250));
      }
    };

    assertEquals((await head()).status, 404, "accepted: the token carried a success");
    await waitUntilRefused("pull");
    auth.tokens.configure({ expOffsetSeconds: 300 });
    assertEquals((await head()).status, 404, "renewed and re-issued inside the same call");
    assertEquals(auth.tokens.requests.length, 2, "a second token request after expiry");
    assertEquals(
      transport.log.filter((r) => r.method === "HEAD").map((r) => r.status),
      [401, 404, 401, 404],
    );

    // A PUT: the renewal happens, the body is not replayed; the rebuilt request succeeds.
    auth.tokens.configure({ expOffsetSeconds: -56 });
    const post = await authenticator.fetch(
      new Request(`${base}/v2/team/data/blobs/uploads/`, { method: "POST" }),
    );
    assertEquals(post.status, 202);
    await post.body?.cancel();
    const session = withDigestQuery(
      resolveLocation(post.headers.get("location"), new URL(base), "POST"),
      digest,
    );
    await waitUntilRefused("push");
    auth.tokens.configure({ expOffsetSeconds: 300 });
    const err = await assertRejects(
      () => authenticator.fetch(blobPut(session, bytes)),
      AuthRetryError,
    );
    assertEquals(err.retryable, true);
    const put = await authenticator.fetch(blobPut(session, bytes));
    assertEquals(put.status, 201, "the session survived the early 401");
    await put.body?.cancel();
    assertEquals(transport.count("PUT"), 2);
    assertEquals(auth.tokens.requests.length, 4);
    assertEquals(authenticator.stats.retriesRequested, 1);
  },
);

registryTest(
  "token auth: realm path and query, challenge text and token bodies stay out of errors",
  async () => {
    const pathSecret = "p4th-s3cret";
    const querySecret = "qu3ry-s3cret";
    const bodySecret = "b0dy-s3cret";
    await using auth = await startTokenRegistry({
      realmPath: `/auth/${pathSecret}`,
      realmQuery: `key=${querySecret}`,
    });
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, SIZE);
    const host = auth.registry.host;
    const errors: unknown[] = [];
    const capture = async (fn: () => Promise<unknown>) => {
      try {
        await fn();
      } catch (err) {
        errors.push(err);
        return err;
      }
      throw new Error("expected a failure");
    };
    const client = (password: string) =>
      new PartedClient({ plainHttp: true, credential: { username: "alice", password } });
    // Refused credential, through the parted client.
    using refused = client("wrong");
    await capture(() => refused.push(`${host}/team/data:v1`, fromFile(src), { partSize: PART }));
    // A token request the push aborted may still reach the server after the push rejected (it
    // was on its way): the faults below are for the next requests, so wait until none arrives.
    for (let seen = -1; seen !== auth.tokens.requests.length;) {
      seen = auth.tokens.requests.length;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    // Token endpoint failures, through the authenticated fetch.
    using transport = countingTransport();
    const authFetch = createAuthFetch({
      registry: host,
      plainHttp: true,
      fetch: transport.fetch,
      credentials: staticCredentials({ username: "alice", password: "pw" }),
    });
    const manifest = () => authFetch(new Request(`${auth.registry.url}/v2/team/data/manifests/v1`));
    auth.tokens.failNext(
      { status: 503, body: bodySecret, headers: { "retry-after": "1" } },
      { status: 200, body: `{"error":"${bodySecret}"}` },
      { status: 401, body: bodySecret },
    );
    assertInstanceOf(await capture(manifest), HttpStatusError);
    assertInstanceOf(await capture(manifest), AuthChallengeError);
    assertInstanceOf(await capture(manifest), UnauthorizedError);
    assertEquals(errors.length, 4);
    assert(
      auth.tokens.requests.every((r) =>
        r.path.includes(pathSecret) && r.query.includes(querySecret)
      ),
      "the realm the registry advertised (with both secrets) was used",
    );
    for (const err of errors) {
      const text = allMessages(err);
      for (const secret of [pathSecret, querySecret, bodySecret, auth.tokens.url]) {
        assert(!text.includes(secret), `an error message quotes ${secret}: ${text}`);
      }
    }
  },
);

registryTest(
  "token auth: skopeo, given the same credentials, reads what was pushed",
  { needs: ["skopeo"] },
  async () => {
    await using auth = await startTokenRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, SIZE);
    const host = auth.registry.host;
    using client = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "pw" },
    });
    const descriptor = await client.push(`${host}/team/data:v1`, fromFile(src), { partSize: PART });
    // A small image pushed with raw requests through the authenticated fetch as well.
    using transport = countingTransport();
    const authFetch = createAuthFetch({
      registry: host,
      plainHttp: true,
      fetch: transport.fetch,
      credentials: staticCredentials({ username: "alice", password: "pw" }),
    });
    const extra = patternBytes(5000, 9);
    const extraDigest = await uploadBlob(authFetch, auth.registry.url, "team/raw", extra);
    await uploadBlob(authFetch, auth.registry.url, "team/raw", EMPTY_CONFIG_BYTES);
    const rawManifest = new TextEncoder().encode(JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST_MEDIA_TYPE,
      config: EMPTY_CONFIG_DESCRIPTOR,
      layers: [{ mediaType: "application/octet-stream", digest: extraDigest, size: extra.length }],
    }));
    const manifestPut = await authFetch(
      new Request(`${auth.registry.url}/v2/team/raw/manifests/v1`, {
        method: "PUT",
        body: rawManifest,
        headers: {
          "content-type": OCI_MANIFEST_MEDIA_TYPE,
          "content-length": String(rawManifest.byteLength),
        },
      }),
    );
    assertEquals(manifestPut.status, 201);
    await manifestPut.body?.cancel();

    const skopeo = async (...args: string[]) => {
      const out = await new Deno.Command("skopeo", { args, stdout: "piped", stderr: "piped" })
        .output();
      if (!out.success) throw new Error(`skopeo: ${new TextDecoder().decode(out.stderr)}`);
      return new TextDecoder().decode(out.stdout);
    };
    const raw = await skopeo(
      "inspect",
      "--raw",
      "--tls-verify=false",
      "--creds",
      "alice:pw",
      `docker://${host}/team/data:v1`,
    );
    assertEquals(sha256Digest(new TextEncoder().encode(raw)), descriptor.digest);
    const copy = `${dir.path}/copy`;
    await skopeo(
      "copy",
      "--src-tls-verify=false",
      "--src-creds",
      "alice:pw",
      `docker://${host}/team/data:v1`,
      `dir:${copy}`,
    );
    const manifest = JSON.parse(raw) as { layers: { digest: string; size: number }[] };
    assertEquals(manifest.layers.length, PARTS);
    for (const layer of manifest.layers) {
      assertEquals(await sha256File(`${copy}/${layer.digest.slice(7)}`), layer.digest);
    }
    const rawCopy = `${dir.path}/raw`;
    await skopeo(
      "copy",
      "--src-tls-verify=false",
      "--src-creds",
      "alice:pw",
      `docker://${host}/team/raw:v1`,
      `dir:${rawCopy}`,
    );
    assertEquals(await Deno.readFile(`${rawCopy}/${extraDigest.slice(7)}`), extra);
  },
);

registryTest(
  "token auth through a proxy: a refused part PUT costs one attempt; 403 without challenge is final",
  async () => {
    await using auth = await startTokenRegistry();
    await using proxy = await startFaultProxy({ target: auth.registry.url });
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, SIZE);
    using client = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "pw" },
    });
    const challenge = `Bearer realm="${auth.tokens.realm}",service="${auth.tokens.service}"` +
      `,scope="repository:team/data:pull,push",error="invalid_token"`;
    // The first part PUT is refused as if its token had expired; then a 403 with a challenge.
    proxy.fault({
      method: "PUT",
      path: /\/blobs\/uploads\//,
      respond: { status: 401, headers: { "www-authenticate": challenge } },
    });
    proxy.fault({
      method: "PUT",
      path: /\/blobs\/uploads\//,
      nth: 3,
      respond: { status: 403, headers: { "www-authenticate": challenge } },
    });
    let wireBytes = 0;
    await client.push(`${proxy.host}/team/data:v1`, fromFile(src), {
      partSize: PART,
      workers: 1,
      onProgress: (s) => (wireBytes = s.wireBytes),
    });
    assertEquals(proxy.faultsApplied, 2);
    // Two parts were re-streamed once each: one extra PUT per refusal, nothing more.
    assertEquals(proxy.count({ method: "PUT", route: "session" }), PARTS + 1 + 2);
    assert(wireBytes > SIZE, "the refused parts were sent again");
    assertEquals(auth.tokens.requests.length, 2 + 2, "pull, push, and one renewal per refusal");
    await client.pull(`${proxy.host}/team/data:v1`, toFile(`${dir.path}/out.bin`));
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);

    // A 403 without a challenge is a permission answer: final, no part sent.
    proxy.clearFaults();
    proxy.log.length = 0;
    proxy.fault({ method: "HEAD", respond: { status: 403 }, times: Infinity });
    const err = await assertRejects(() =>
      client.push(`${proxy.host}/team/other:v1`, fromFile(src), { partSize: PART })
    );
    assert(findError(err, UnauthorizedError), "reported as unauthorized");
    assertEquals(proxy.count({ method: "PUT" }), 0);
    assertEquals(proxy.count({ method: "POST" }), 0);
  },
);

registryTest("token auth: the authenticated fetch as the blob client's transport", async () => {
  await using auth = await startTokenRegistry();
  using transport = countingTransport();
  const host = auth.registry.host;
  const client = new BlobClient({
    plainHttp: true,
    transport: createAuthFetch({
      registry: host,
      plainHttp: true,
      fetch: transport.fetch,
      credentials: staticCredentials({ username: "alice", password: "pw" }),
    }),
  });
  const bytes = patternBytes(200_000, 5);
  const digest = sha256Digest(bytes);
  await client.push(`${host}/team/blob`, digest, bytes.length, bytes);
  const stream = await client.pull(`${host}/team/blob`, digest);
  const back = new Uint8Array(await new Response(stream).arrayBuffer());
  assertEquals(sha256Digest(back), digest);
  assertEquals(auth.tokens.requests.length, 2, "one push token, one pull token");
  assertEquals(transport.log.filter((r) => r.status === 401).length, 1, "only the first request");
});
