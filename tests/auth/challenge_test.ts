import { parseChallenges } from "../../src/auth/challenge.ts";
import { AuthChallengeError } from "../../src/errors/kinds.ts";
import { assert, assertEquals, assertThrows } from "../fixtures/assert.ts";

function params(value: string, index = 0): Record<string, string> {
  return { ...parseChallenges(value)[index]!.params };
}

Deno.test("challenge: Distribution's Bearer challenge with a multi-action scope", () => {
  const value =
    'Bearer realm="http://127.0.0.1:5102/token",service="test-registry",scope="repository:a/b:pull,push"';
  const [challenge] = parseChallenges(value);
  assertEquals(challenge?.scheme, "bearer");
  assertEquals(params(value), {
    realm: "http://127.0.0.1:5102/token",
    service: "test-registry",
    scope: "repository:a/b:pull,push",
  });
});

Deno.test("challenge: several challenges, as Headers.get joins repeated lines", () => {
  const value =
    'Basic realm="basic, with a comma", Bearer realm="https://a/t",error="invalid_token"';
  const challenges = parseChallenges(value);
  assertEquals(challenges.map((c) => c.scheme), ["basic", "bearer"]);
  assertEquals(params(value, 0), { realm: "basic, with a comma" });
  assertEquals(params(value, 1), { realm: "https://a/t", error: "invalid_token" });
});

Deno.test("challenge: escaped quotes and backslashes inside quoted strings", () => {
  assertEquals(params('Bearer realm="a\\"b\\\\c",service=svc'), {
    realm: 'a"b\\c',
    service: "svc",
  });
});

Deno.test("challenge: case-insensitive scheme and names, whitespace around =, tokens", () => {
  const [challenge] = parseChallenges('  BEARER   Realm = "https://a/t" ,  Service=reg , ');
  assertEquals(challenge?.scheme, "bearer");
  assertEquals({ ...challenge!.params }, { realm: "https://a/t", service: "reg" });
});

Deno.test("challenge: token68 and a bare scheme", () => {
  const challenges = parseChallenges("Negotiate, Basic dXNlcjpwYXNz==, Bearer realm=x");
  assertEquals(challenges.map((c) => c.scheme), ["negotiate", "basic", "bearer"]);
  assertEquals(challenges[1]?.token68, "dXNlcjpwYXNz==");
  assertEquals({ ...challenges[2]!.params }, { realm: "x" });
});

Deno.test("challenge: the first occurrence of a repeated parameter wins", () => {
  assertEquals(params('Bearer realm="first",realm="second"'), { realm: "first" });
});

Deno.test("challenge: an empty value yields no challenge", () => {
  assertEquals(parseChallenges(""), []);
  assertEquals(parseChallenges(" , ,"), []);
});

Deno.test("challenge: malformed values are refused without quoting them", () => {
  const secret = "s3cr3t-in-challenge";
  for (
    const value of [
      `Bearer realm="${secret}`, // unterminated quoted string
      `realm="${secret}"`, // a parameter before any scheme
      `Bearer realm=${secret} extra`, // unquoted value with a space
      `Bearer realm="x" y=,service="${secret}"`, // a parameter without a value
      `Bearer realm="x" "${secret}"`, // stray quoted string
    ]
  ) {
    const err = assertThrows(() => parseChallenges(value), AuthChallengeError);
    assert(!err.message.includes(secret), "the challenge text stays out of the message");
    assertEquals(err.retryable, false);
  }
});
