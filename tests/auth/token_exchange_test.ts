import {
  basicAuthorization,
  requestToken,
  tokenRequestUrl,
} from "../../src/auth/token_exchange.ts";
import { causeChain, findError } from "../../src/errors/find_error.ts";
import {
  AuthChallengeError,
  CredentialError,
  HttpStatusError,
  NetworkError,
} from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { UnauthorizedError } from "../../src/errors/sentinels.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { TokenServiceError } from "../../src/auth/token_service_error.ts";
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { startTokenServer } from "../fixtures/token_server.ts";

const SECRET = "realm-s3cret";
const fetchManual: Fetch = (request) => fetch(request, { redirect: "manual" });

function messages(err: unknown): string {
  return [...causeChain(err)].map((e) => (e instanceof Error ? e.message : String(e))).join(
    " | ",
  );
}

Deno.test("token exchange: realm query kept byte for byte, service and scopes appended", () => {
  const url = tokenRequestUrl(new URL("https://auth.example/t?a=%20b&c#frag"), "reg", [
    "repository:x/y:pull",
    "repository:z:pull,push",
  ]);
  assertEquals(
    url.href,
    "https://auth.example/t?a=%20b&c&service=reg&scope=repository%3Ax%2Fy%3Apull" +
      "&scope=repository%3Az%3Apull%2Cpush",
  );
  assertEquals(basicAuthorization("ü", "p"), `Basic ${btoa("\u00c3\u00bc:p")}`);
});

Deno.test("token exchange: Basic credentials, token and expires_in", async () => {
  await using server = await startTokenServer({
    users: { alice: "pw" },
    realmQuery: `secret=${SECRET}`,
    expiresIn: 120,
  });
  const answer = await requestToken({
    fetch: fetchManual,
    realm: new URL(server.realm),
    service: server.service,
    scopes: ["repository:a/b:pull,push"],
    credential: { username: "alice", password: "pw" },
    access: "pull,push",
  });
  assertEquals(answer.expiresIn, 120);
  assertEquals(answer.token.split(".").length, 3, "a JWT");
  const [record] = server.requests;
  assertEquals(record?.authorization, basicAuthorization("alice", "pw"));
  assertEquals(record?.user, "alice");
  assertEquals(record?.scopes, ["repository:a/b:pull,push"]);
  assert(record?.query.startsWith(`secret=${SECRET}&service=test-registry&scope=`));
});

Deno.test("token exchange: anonymous sends no Authorization; access_token is accepted", async () => {
  await using server = await startTokenServer({ tokenField: "access_token", expiresIn: null });
  const answer = await requestToken({
    fetch: fetchManual,
    realm: new URL(server.realm),
    scopes: ["repository:pub:pull"],
    credential: {},
    access: "pull",
  });
  assert(answer.token.length > 0);
  assertEquals(answer.expiresIn, undefined, "no stated lifetime");
  assertEquals(server.requests[0]?.authorization, null);
  assertEquals(server.requests[0]?.query.includes("service="), false);
});

Deno.test("token exchange: a refused credential is unauthorized naming the access", async () => {
  await using server = await startTokenServer({ users: { alice: "pw" } });
  const err = await assertRejects(
    () =>
      requestToken({
        fetch: fetchManual,
        realm: new URL(server.realm),
        scopes: ["repository:a:pull,push"],
        credential: { username: "alice", password: "wrong" },
        access: "pull,push",
      }),
    UnauthorizedError,
  );
  assertEquals(err.message, "unauthorized: token endpoint refused pull,push access");
  assertEquals(err.status, 401);
  assertEquals(retryable(err).retryable, false);
});

Deno.test("token exchange: 429 and 5xx are transient with the Retry-After floor", async () => {
  await using server = await startTokenServer({ realmQuery: `secret=${SECRET}` });
  server.failNext(
    { status: 429, headers: { "retry-after": "7" }, body: SECRET },
    { status: 503, body: SECRET },
    { status: 400, body: SECRET },
  );
  const ask = () =>
    requestToken({
      fetch: fetchManual,
      realm: new URL(server.realm),
      scopes: [],
      credential: {},
      access: "pull",
      offOrigin: true,
    });
  const tooMany = await assertRejects(ask, HttpStatusError);
  assertEquals([tooMany.status, tooMany.retryable, tooMany.retryAfterMs], [429, true, 7000]);
  assertEquals(tooMany.offOrigin, true);
  assertEquals(tooMany.body.byteLength, 0, "the token endpoint's body is not kept");
  const unavailable = await assertRejects(ask, HttpStatusError);
  assertEquals([unavailable.status, unavailable.retryable], [503, true]);
  const bad = await assertRejects(ask, HttpStatusError);
  assertEquals([bad.status, bad.retryable], [400, false]);
  for (const err of [tooMany, unavailable, bad]) assert(!messages(err).includes(SECRET));
});

Deno.test("token exchange: 200 without a token is terminal and not unauthorized", async () => {
  await using server = await startTokenServer();
  server.failNext(
    { status: 200, body: `{"detail":"${SECRET}"}` },
    { status: 200, body: `not json ${SECRET}` },
    { status: 200, body: `{"token":"bad\\ntoken ${SECRET}"}` },
  );
  for (let i = 0; i < 3; i++) {
    const err = await assertRejects(
      () =>
        requestToken({
          fetch: fetchManual,
          realm: new URL(server.realm),
          scopes: [],
          credential: {},
          access: "pull",
        }),
      AuthChallengeError,
    );
    assertEquals(findError(err, UnauthorizedError), undefined);
    assertEquals(retryable(err).retryable, false);
    assert(!messages(err).includes(SECRET));
  }
});

Deno.test("token exchange: an identity token is refused before any request", async () => {
  await using server = await startTokenServer();
  await assertRejects(
    () =>
      requestToken({
        fetch: fetchManual,
        realm: new URL(server.realm),
        scopes: [],
        credential: { identityToken: "refresh" },
        access: "pull",
      }),
    CredentialError,
  );
  assertEquals(server.requests.length, 0);
});

Deno.test("token exchange: an unclassified transport failure is the token service's", async () => {
  const failing: Fetch = () => Promise.reject(new TypeError(`connect refused ${SECRET}`));
  const err = await assertRejects(
    () =>
      requestToken({
        fetch: failing,
        realm: new URL(`http://127.0.0.1:9/token?${SECRET}`),
        scopes: [],
        credential: {},
        access: "pull",
      }),
    TokenServiceError,
  );
  assertEquals(err.message, "token request: the registry's token service could not be reached");
  assertEquals(err.retryable, true);
  const cause = err.cause as NetworkError;
  assertEquals([cause instanceof NetworkError, cause.message], [
    true,
    "token request: connection failed",
  ]);
});
