/**
 * The authenticator's decisions, against an in-process registry emulation (a Fetch) that
 * counts every request: the real registry cannot send 403 challenges, expire tokens on demand
 * or let a fake clock drive token lifetimes. End-to-end checks against Distribution live in
 * registry_token_test.ts and registry_basic_test.ts.
 */
import { AuthRetryError } from "../../src/auth/auth_retry_error.ts";
import { RegistryAuthenticator } from "../../src/auth/authenticator.ts";
import { createAuthFetch } from "../../src/auth/create_auth_fetch.ts";
import type { Credential, CredentialSource } from "../../src/auth/credential.ts";
import { staticCredentials } from "../../src/auth/credential.ts";
import { basicAuthorization } from "../../src/auth/token_exchange.ts";
import { causeChain, findError } from "../../src/errors/find_error.ts";
import { AuthChallengeError, CredentialError, HttpStatusError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { UnauthorizedError } from "../../src/errors/sentinels.ts";
import type { Clock } from "../../src/transport/clock.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";

const SECRET = "pl4nted-realm-s3cret";
const REGISTRY = "reg.example";
const ORIGIN = `https://${REGISTRY}`;
const REALM = `https://auth.example/token?secret=${SECRET}`;
const BLOB = `/v2/org/data/blobs/sha256:${"a".repeat(64)}`;
const UPLOADS = "/v2/org/data/blobs/uploads/";

interface Logged {
  via: "registry" | "external";
  method: string;
  url: string;
  authorization: string | null;
  status: number;
  bodyBytes: number;
}

interface EmulatorOptions {
  /** "bearer" (default), "basic", or "open" (never challenges). */
  mode?: "bearer" | "basic" | "open";
  realm?: string;
  users?: Record<string, string>;
  /** Repositories anonymous users may pull. */
  publicRepos?: string[];
  /** Stated expires_in; null for none. */
  expiresIn?: number | null;
  /** With a clock, tokens really expire after their stated lifetime (default 60 s). */
  clock?: Clock & { advance(ms: number): void };
  /** Reading a request body advances the clock this much per byte (a slow upload). */
  msPerBodyByte?: number;
}

function fakeClock(): Clock & { advance(ms: number): void } {
  let now = 5_000_000;
  return {
    now: () => now,
    random: () => 0.5,
    sleep: () => Promise.resolve(),
    advance(ms: number) {
      now += ms;
    },
  };
}

/**
 * A token-auth registry and its token endpoint as two Fetches. Tokens are opaque strings that
 * map to granted scopes; `expire(token)` makes the registry refuse one (as an expired JWT).
 */
function emulator(options: EmulatorOptions = {}) {
  const mode = options.mode ?? "bearer";
  const realm = options.realm ?? REALM;
  const users = options.users ?? { alice: "pw" };
  const publicRepos = options.publicRepos ?? [];
  const log: Logged[] = [];
  const tokens = new Map<string, { grants: Set<string>; expired: boolean; until: number }>();
  const tokenScopes: string[][] = [];
  const scripted: Response[] = [];
  const tokenFaults: Response[] = [];
  let serial = 0;

  const challenge = (repository: string | undefined, action: string) =>
    mode === "basic"
      ? 'Basic realm="Registry Realm"'
      : `Bearer realm="${realm}",service="other.service"` +
        (repository ? `,scope="repository:${repository}:${action}"` : "");

  const issue = (request: Request): Response => {
    const url = new URL(request.url);
    const faulted = tokenFaults.shift();
    if (faulted !== undefined) return faulted;
    let user = "";
    const authorization = request.headers.get("authorization");
    if (authorization !== null) {
      const [name, password] = atob(authorization.replace(/^Basic /, "")).split(":");
      if (users[name!] !== password) return new Response(`denied ${SECRET}`, { status: 401 });
      user = name!;
    }
    const scopes = url.searchParams.getAll("scope");
    tokenScopes.push(scopes);
    const grants = new Set<string>();
    for (const scope of scopes) {
      const [, name, actions] = scope.split(":");
      for (const action of actions!.split(",")) {
        if (user !== "" || (action === "pull" && publicRepos.includes(name!))) {
          grants.add(`${name}:${action}`);
        }
      }
    }
    const token = `tok-${++serial}`;
    const lifetimeMs = (options.expiresIn ?? 60) * 1000;
    tokens.set(token, {
      grants,
      expired: false,
      until: options.clock ? options.clock.now() + lifetimeMs : Infinity,
    });
    const body: Record<string, unknown> = { token, issued_at: "2000-01-01T00:00:00Z" };
    if (options.expiresIn !== null) body.expires_in = options.expiresIn ?? 300;
    return Response.json(body);
  };

  const serve = (request: Request): Response => {
    const override = scripted.shift();
    if (override !== undefined) return override;
    if (mode === "open") return new Response(null, { status: 200 });
    const url = new URL(request.url);
    const match = /^\/v2\/(.+?)\/(blobs|manifests)\//.exec(url.pathname);
    const repository = match?.[1];
    const action = request.method === "GET" || request.method === "HEAD" ? "pull" : "push";
    const wanted = action === "pull" ? "pull" : "pull,push";
    const authorization = request.headers.get("authorization");
    const refuse = (error?: string) =>
      new Response(`{"errors":"${SECRET}"}`, {
        status: 401,
        headers: {
          "www-authenticate": challenge(repository, wanted) +
            (error ? `,error="${error}"` : ""),
        },
      });
    if (mode === "basic") {
      const [name, password] = authorization?.startsWith("Basic ")
        ? atob(authorization.slice(6)).split(":")
        : [];
      return name !== undefined && users[name] === password
        ? new Response(null, { status: 200 })
        : refuse();
    }
    if (authorization === null || !authorization.startsWith("Bearer ")) return refuse();
    const token = tokens.get(authorization.slice(7));
    const now = options.clock?.now() ?? 0;
    if (token === undefined || token.expired || now >= token.until) {
      return refuse("invalid_token");
    }
    const needed = wanted.split(",").map((a) => `${repository}:${a}`);
    if (repository !== undefined && !needed.every((n) => token.grants.has(n))) {
      return refuse("insufficient_scope");
    }
    return new Response(null, { status: request.method === "POST" ? 202 : 200 });
  };

  const record =
    (via: Logged["via"], handler: (r: Request) => Response): Fetch => async (request) => {
      // Authorization is checked once the body has arrived, like a registry behind a proxy that
      // buffers request bodies.
      const bodyBytes = request.body === null ? 0 : (await request.arrayBuffer()).byteLength;
      options.clock?.advance(bodyBytes * (options.msPerBodyByte ?? 0));
      const url = new URL(request.url);
      const response = url.origin === ORIGIN
        ? serve(request)
        : url.hostname === "auth.example" || url.hostname === REGISTRY
        ? issue(request)
        : handler(request);
      log.push({
        via,
        method: request.method,
        url: request.url,
        authorization: request.headers.get("authorization"),
        status: response.status,
        bodyBytes,
      });
      return response;
    };
  const other = () => new Response("elsewhere", { status: 200 });
  return {
    fetch: record("registry", other),
    externalFetch: record("external", other),
    log,
    tokenScopes,
    tokenRequests: () => log.filter((l) => new URL(l.url).pathname === "/token").length,
    registryRequests: () => log.filter((l) => new URL(l.url).origin === ORIGIN),
    expire(token: string) {
      tokens.get(token)!.expired = true;
    },
    expireAll() {
      for (const t of tokens.values()) t.expired = true;
    },
    script(...responses: Response[]) {
      scripted.push(...responses);
    },
    failToken(...responses: Response[]) {
      tokenFaults.push(...responses);
    },
  };
}

/** A credential source that records the hosts it was asked for. */
function spySource(credential: Credential): CredentialSource & { hosts: string[] } {
  const hosts: string[] = [];
  return {
    hosts,
    get(host: string) {
      hosts.push(host);
      return Promise.resolve({ ...credential });
    },
  };
}

function setup(options: EmulatorOptions & { credential?: Credential } = {}) {
  const registry = emulator(options);
  const source = spySource(options.credential ?? { username: "alice", password: "pw" });
  const auth = new RegistryAuthenticator({
    registry: REGISTRY,
    fetch: registry.fetch,
    externalFetch: registry.externalFetch,
    credentials: source,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return { registry, source, auth };
}

const get = (path: string, init: RequestInit = {}) => new Request(`${ORIGIN}${path}`, init);
const put = (path: string, body = new Uint8Array(1000)) =>
  new Request(`${ORIGIN}${path}`, {
    method: "PUT",
    body,
    headers: { "content-type": "application/octet-stream" },
  });

function allMessages(err: unknown): string {
  return [...causeChain(err)].map((e) => (e instanceof Error ? e.message : String(e))).join("|");
}

Deno.test("authenticator: a registry that never challenges sees no extra request", async () => {
  const { registry, source, auth } = setup({ mode: "open" });
  for (let i = 0; i < 3; i++) assertEquals((await auth.fetch(get(BLOB))).status, 200);
  assertEquals((await auth.fetch(put(`${UPLOADS}x?digest=d`))).status, 200);
  assertEquals(registry.log.length, 4);
  assert(registry.log.every((l) => l.authorization === null), "no credential sent");
  assertEquals(source.hosts, [], "credentials were never even looked up");
  assertEquals(auth.stats.tokenRequests, 0);
});

Deno.test("authenticator: first request anonymous, one token request per scope entry", async () => {
  const clock = fakeClock();
  const { registry, auth } = setup({ clock });
  assertEquals((await auth.fetch(get(BLOB, { method: "HEAD" }))).status, 200);
  assertEquals(
    registry.log.map((l) => [l.method, l.authorization === null ? "anon" : "auth", l.status]),
    [["HEAD", "anon", 401], ["GET", "auth", 200], ["HEAD", "auth", 200]],
  );
  // Same entry: reused. New entry (push): acquired before the request is built.
  await auth.fetch(get(BLOB));
  assertEquals((await auth.fetch(get(UPLOADS, { method: "POST" }))).status, 202);
  await auth.fetch(put(`${UPLOADS}s?digest=d`));
  await auth.fetch(get(BLOB, { method: "HEAD" }));
  assertEquals(registry.tokenRequests(), 2);
  assertEquals(registry.tokenScopes, [
    ["repository:org/data:pull"],
    ["repository:org/data:pull,push"],
  ]);
  assertEquals(registry.registryRequests().length, 6, "one 401, then one request per call");
  assertEquals(auth.tokenCache.entryCount("org/data"), 2);
  // The first token request carried the Basic credential; the credential went to the realm.
  assertEquals(registry.log[1]?.authorization, basicAuthorization("alice", "pw"));
});

Deno.test("authenticator: token reuse follows lifetime − margin on the monotonic clock", async () => {
  const clock = fakeClock();
  const { registry, auth } = setup({ clock, expiresIn: 300 });
  await auth.fetch(get(BLOB));
  assertEquals(registry.tokenRequests(), 1);
  clock.advance(269_999);
  await auth.fetch(get(BLOB));
  assertEquals(registry.tokenRequests(), 1, "still inside lifetime − 30 s");
  clock.advance(1);
  await auth.fetch(get(BLOB));
  assertEquals(registry.tokenRequests(), 2, "renewed before the request was built");
  assertEquals(registry.registryRequests().filter((l) => l.status === 401).length, 1);

  const short = setup({ clock, expiresIn: null });
  await short.auth.fetch(get(BLOB));
  clock.advance(29_999);
  await short.auth.fetch(get(BLOB));
  assertEquals(short.registry.tokenRequests(), 1, "60 s default, 30 s margin");
  clock.advance(1);
  await short.auth.fetch(get(BLOB));
  assertEquals(short.registry.tokenRequests(), 2);
});

Deno.test("authenticator: an expired token on a replayable request is renewed in the call", async () => {
  const { registry, auth } = setup();
  await auth.fetch(get(BLOB));
  registry.expire("tok-1"); // the server stated a longer life than the token really has
  const response = await auth.fetch(get(BLOB));
  assertEquals(response.status, 200);
  assertEquals(
    registry.log.slice(-3).map((l) => [l.authorization, l.status]),
    [["Bearer tok-1", 401], [basicAuthorization("alice", "pw"), 200], ["Bearer tok-2", 200]],
  );
  assertEquals(auth.stats.reissued, 2, "the first challenge and the expiry");
});

Deno.test("authenticator: an expired token on a PUT is renewed, the PUT is not replayed", async () => {
  const { registry, auth } = setup();
  await auth.fetch(get(UPLOADS, { method: "POST" }));
  registry.expire("tok-1");
  const err = await assertRejects(() => auth.fetch(put(`${UPLOADS}s?digest=d`)), AuthRetryError);
  assertEquals([err.status, retryable(err).retryable], [401, true]);
  const puts = () => registry.log.filter((l) => l.method === "PUT");
  assertEquals(puts().length, 1, "the body was sent once in that call");
  assertEquals(registry.tokenRequests(), 2, "renewed before the caller rebuilds the request");
  // The caller's retry loop rebuilds the request (re-streamed body): it carries the new token.
  assertEquals((await auth.fetch(put(`${UPLOADS}s?digest=d`))).status, 200);
  assertEquals(puts().map((l) => [l.authorization, l.status, l.bodyBytes]), [
    ["Bearer tok-1", 401, 1000],
    ["Bearer tok-2", 200, 1000],
  ]);
  assertEquals(registry.tokenRequests(), 2);
  assertEquals(auth.stats.retriesRequested, 1);
});

Deno.test("authenticator: a refreshed token that never succeeded has had its chance", async () => {
  // Anonymous token on a private repository: the registry refuses the fresh token.
  const { registry, auth } = setup({ credential: {} });
  const response = await auth.fetch(get(BLOB));
  assertEquals(response.status, 401, "returned to the caller, who reports unauthorized");
  await response.body?.cancel();
  assertEquals(registry.tokenRequests(), 1);
  assertEquals(registry.registryRequests().map((l) => l.status), [401, 401]);
  // A PUT whose proactively acquired token is refused is terminal too: no retry requested.
  const putResponse = await auth.fetch(put(`${UPLOADS}s?digest=d`));
  assertEquals(putResponse.status, 401);
  assertEquals(auth.stats.retriesRequested, 0);
  assertEquals(registry.log.filter((l) => l.method === "PUT").length, 1);
});

Deno.test("authenticator: anonymous pull of a public repository", async () => {
  const { registry, auth } = setup({ credential: {}, publicRepos: ["org/data"] });
  assertEquals((await auth.fetch(get(BLOB))).status, 200);
  assertEquals(registry.log[1]?.authorization, null, "anonymous token request");
});

Deno.test("authenticator: the token endpoint refusing the credential is unauthorized", async () => {
  const { registry, auth } = setup({ credential: { username: "alice", password: "wrong" } });
  const err = await assertRejects(() => auth.fetch(get(BLOB)), UnauthorizedError);
  assertEquals(err.message, "unauthorized: token endpoint refused pull access");
  // A part PUT once the challenge is known: refused before any body is sent (0 attempts).
  const putErr = await assertRejects(
    () => auth.fetch(put(`${UPLOADS}s?digest=d`)),
    UnauthorizedError,
  );
  assertEquals(putErr.message, "unauthorized: token endpoint refused pull,push access");
  assertEquals(registry.log.filter((l) => l.method === "PUT").length, 0);
  for (const e of [err, putErr]) assert(!allMessages(e).includes(SECRET));
});

Deno.test("authenticator: 403 with a challenge is one refresh, without one it is final", async () => {
  const { registry, auth } = setup();
  await auth.fetch(get(BLOB));
  registry.script(
    new Response(null, {
      status: 403,
      headers: { "www-authenticate": `Bearer realm="${REALM}",service="s"` },
    }),
  );
  assertEquals((await auth.fetch(get(BLOB))).status, 200);
  assertEquals(registry.tokenRequests(), 2);
  registry.script(new Response("proxy says no", { status: 403 }));
  const final = await auth.fetch(get(BLOB));
  assertEquals(final.status, 403, "returned unchanged: a permission answer");
  assertEquals(await final.text(), "proxy says no");
  assertEquals(registry.tokenRequests(), 2, "no refresh for a 403 without a challenge");
});

Deno.test("authenticator: unreadable or unanswerable challenges are terminal", async () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ "www-authenticate": `Bearer realm="${SECRET}` }, "challenge could not be read"],
    [{}, "refusal carries no challenge"],
    [{ "www-authenticate": `Negotiate ${SECRET}` }, "no supported challenge"],
    [{ "www-authenticate": `Bearer service="${SECRET}"` }, "challenge has no usable realm"],
    [{ "www-authenticate": `Bearer realm="ftp://x/${SECRET}"` }, "token realm scheme is not"],
    [{ "www-authenticate": `Bearer realm="http://x/${SECRET}"` }, "token realm downgrades"],
    [{ "www-authenticate": `Bearer realm="https://u:p@x/${SECRET}"` }, "realm carries"],
  ];
  for (const [headers, text] of cases) {
    const { registry, auth } = setup();
    registry.script(new Response(SECRET, { status: 401, headers }));
    const err = await assertRejects(() => auth.fetch(get(BLOB)), AuthChallengeError);
    assert(err.message.includes(text), err.message);
    assertEquals(err.status, 401);
    assert(!allMessages(err).includes(SECRET), "challenge text never enters the error");
    assertEquals(findError(err, UnauthorizedError), undefined);
    assertEquals(registry.tokenRequests(), 0);
  }
});

Deno.test("authenticator: credentials are resolved for the dialed host, not the service", async () => {
  const { source, auth } = setup();
  await auth.fetch(get(BLOB));
  await auth.fetch(get(UPLOADS, { method: "POST" }));
  assertEquals(source.hosts, [REGISTRY], "once, for the dialed host");
});

Deno.test("authenticator: routing of token realms and other origins", async () => {
  const offOrigin = setup();
  await offOrigin.auth.fetch(get(BLOB));
  assertEquals(offOrigin.registry.log.map((l) => l.via), ["registry", "external", "registry"]);
  // A realm on the registry's own host (another port) uses the registry transport.
  const sameHost = setup({ realm: `https://${REGISTRY}:8443/token` });
  await sameHost.auth.fetch(get(BLOB));
  assertEquals(sameHost.registry.log.map((l) => l.via), ["registry", "registry", "registry"]);
  // Another origin (storage): passed to the external transport with no credential added.
  const response = await offOrigin.auth.fetch(
    new Request("https://storage.example/blob?sig=1"),
  );
  assertEquals(await response.text(), "elsewhere");
  const last = offOrigin.registry.log.at(-1)!;
  assertEquals([last.via, last.authorization], ["external", null]);
  // Same host, other scheme: another origin as well.
  await offOrigin.auth.fetch(new Request(`http://${REGISTRY}${BLOB}`));
  assertEquals(offOrigin.registry.log.at(-1)!.authorization, null);
});

Deno.test("authenticator: an identity token is refused without a token request", async () => {
  const { registry, auth } = setup({ credential: { identityToken: "refresh-token" } });
  await assertRejects(() => auth.fetch(get(BLOB)), CredentialError);
  assertEquals(registry.tokenRequests(), 0);
});

Deno.test("authenticator: a registry token is presented verbatim, never exchanged", async () => {
  const { registry, auth } = setup({ credential: { registryToken: "verbatim" } });
  const response = await auth.fetch(get(BLOB));
  assertEquals(response.status, 401, "the emulator does not know it: refused once, final");
  assertEquals(registry.log.map((l) => l.authorization), [null, "Bearer verbatim"]);
  assertEquals(registry.tokenRequests(), 0);
});

Deno.test("authenticator: Basic challenges are answered with Basic credentials", async () => {
  const { registry, auth } = setup({ mode: "basic" });
  assertEquals((await auth.fetch(get(BLOB))).status, 200);
  assertEquals((await auth.fetch(put(`${UPLOADS}s?digest=d`))).status, 200);
  const basic = basicAuthorization("alice", "pw");
  assertEquals(registry.log.map((l) => l.authorization), [null, basic, basic]);

  const wrong = setup({ mode: "basic", credential: { username: "alice", password: "no" } });
  const refused = await wrong.auth.fetch(get(BLOB));
  assertEquals(refused.status, 401);
  assertEquals(wrong.registry.log.length, 2, "one answer, then final");
  const anonymous = setup({ mode: "basic", credential: {} });
  assertEquals((await anonymous.auth.fetch(get(BLOB))).status, 401);
  assertEquals(anonymous.registry.log.length, 1, "nothing to answer with");
});

Deno.test("authenticator: concurrent refusals share one token request", async () => {
  const { registry, auth } = setup();
  const responses = await Promise.all(
    Array.from({ length: 8 }, () => auth.fetch(get(BLOB))),
  );
  assert(responses.every((r) => r.status === 200));
  assertEquals(registry.tokenRequests(), 1);
  registry.expireAll();
  await Promise.all(Array.from({ length: 8 }, () => auth.fetch(get(BLOB))));
  assertEquals(registry.tokenRequests(), 2, "one renewal for all eight refusals");
});

Deno.test("authenticator: token endpoint 429/5xx is transient, 200 without token is not", async () => {
  const { registry, auth } = setup();
  registry.failToken(
    new Response(SECRET, { status: 429, headers: { "retry-after": "3" } }),
    new Response(`{"message":"${SECRET}"}`, { status: 200 }),
  );
  const transient = await assertRejects(() => auth.fetch(get(BLOB)), HttpStatusError);
  assertEquals(
    [transient.status, transient.retryable, transient.retryAfterMs, transient.offOrigin],
    [429, true, 3000, true],
  );
  const noToken = await assertRejects(() => auth.fetch(get(BLOB)), AuthChallengeError);
  assertEquals(findError(noToken, UnauthorizedError), undefined);
  assertEquals(retryable(noToken).retryable, false);
  for (const e of [transient, noToken]) assert(!allMessages(e).includes(SECRET));
  // The next attempt succeeds.
  assertEquals((await auth.fetch(get(BLOB))).status, 200);
});

Deno.test("authenticator: a challenge's scope widens the request, filed under the method", async () => {
  const { registry, auth } = setup();
  await auth.fetch(get(UPLOADS, { method: "POST" }));
  const mount = `${UPLOADS}?mount=sha256:${"b".repeat(64)}&from=org/src`;
  registry.script(
    new Response(null, {
      status: 401,
      headers: {
        "www-authenticate": `Bearer realm="${REALM}",service="s",` +
          `scope="repository:org/data:push,pull repository:org/src:pull",` +
          `error="insufficient_scope"`,
      },
    }),
  );
  assertEquals((await auth.fetch(get(mount, { method: "POST" }))).status, 202);
  assertEquals(registry.tokenScopes.at(-1), [
    "repository:org/data:pull,push",
    "repository:org/src:pull",
  ]);
  assertEquals(auth.tokenCache.entryCount("org/data"), 1, "filed under the push entry only");
  assertEquals(auth.tokenCache.entryCount("org/src"), 0);
});

Deno.test("authenticator: ensureFresh renews a token that would expire mid-part", async () => {
  const clock = fakeClock();
  const { registry, auth } = setup({ clock, expiresIn: 300 });
  assertEquals(await auth.ensureFresh("org/data", "push", 60_000), false, "no challenge yet");
  await auth.fetch(get(UPLOADS, { method: "POST" }));
  clock.advance(200_000); // 100 s of stated life left, still reused for 70 s
  assertEquals(await auth.ensureFresh("org/data", "push", 50_000), false, "enough left");
  assertEquals(await auth.ensureFresh("org/data", "push", 150_000), true);
  assertEquals(auth.stats.earlyRefreshes, 1);
  assertEquals(registry.tokenRequests(), 2);
  assertEquals(await auth.ensureFresh("org/data", "pull", 150_000), false, "nothing cached");
  // A need no token can cover, with a young token: nothing gained by renewing.
  assertEquals(await auth.ensureFresh("org/data", "push", 3_600_000), false);
  await auth.fetch(put(`${UPLOADS}s?digest=d`));
  assertEquals(registry.log.at(-1)?.authorization, "Bearer tok-2");
});

Deno.test("authenticator: ensureFresh saves an attempt when tokens are checked after the body", async () => {
  // A 1000-byte part takes 150 s; the push token states (and really has) 300 s.
  const slowPut = async (withEnsureFresh: boolean) => {
    const clock = fakeClock();
    const { registry, auth } = setup({ clock, expiresIn: 300, msPerBodyByte: 150 });
    await auth.fetch(get(UPLOADS, { method: "POST" }));
    clock.advance(200_000); // still reused by the cache: 70 s before lifetime − margin
    if (withEnsureFresh) await auth.ensureFresh("org/data", "push", 150_000 * 1.25);
    try {
      const response = await auth.fetch(put(`${UPLOADS}s?digest=d`));
      return { status: response.status, auth, registry };
    } catch (err) {
      assertInstanceOf(err, AuthRetryError);
      return { status: "retry", auth, registry };
    }
  };
  const without = await slowPut(false);
  assertEquals(without.status, "retry", "the token ran out while the body was sent");
  const withFresh = await slowPut(true);
  assertEquals(withFresh.status, 200, "renewed first: the attempt is saved");
  assertEquals(withFresh.auth.stats.earlyRefreshes, 1);
  assertEquals(withFresh.registry.log.filter((l) => l.method === "PUT").length, 1);
});

Deno.test("authenticator: an aborted request stops while its token is being fetched", async () => {
  const registry = emulator();
  const controller = new AbortController();
  const slowExternal: Fetch = (request) => {
    controller.abort(new DOMException("stop", "AbortError"));
    request.signal.throwIfAborted();
    return registry.externalFetch(request);
  };
  const auth = new RegistryAuthenticator({
    registry: REGISTRY,
    fetch: registry.fetch,
    externalFetch: slowExternal,
    credentials: staticCredentials({}),
  });
  const err = await assertRejects(
    () => auth.fetch(get(BLOB, { signal: controller.signal })),
    DOMException,
  );
  assertEquals(err.name, "AbortError");
});

Deno.test("createAuthFetch: a Fetch over the authenticator; bad options throw early", async () => {
  const registry = emulator();
  const authFetch = createAuthFetch({
    registry: REGISTRY,
    fetch: registry.fetch,
    externalFetch: registry.externalFetch,
    credentials: staticCredentials({ username: "alice", password: "pw" }),
  });
  assertEquals((await authFetch(get(BLOB))).status, 200);
  let thrown: unknown;
  try {
    createAuthFetch({ registry: "not a host", fetch: registry.fetch });
  } catch (err) {
    thrown = err;
  }
  assert(thrown instanceof TypeError);
});
