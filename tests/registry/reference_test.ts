import { assert, assertEquals, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { InvalidReferenceError } from "../../src/errors/mod.ts";
import {
  formatReference,
  isRegistryHost,
  parseReference,
  type Reference,
} from "../../src/registry/reference.ts";

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

const D = "sha256:" + "0123456789abcdef".repeat(4);

const VALID: [string, Reference][] = [
  ["ghcr.io/org/model:v1", { registry: "ghcr.io", repository: "org/model", tag: "v1" }],
  ["localhost/x:latest", { registry: "localhost", repository: "x", tag: "latest" }],
  ["localhost:5000/x:1", { registry: "localhost:5000", repository: "x", tag: "1" }],
  ["127.0.0.1:5000/a/b:t", { registry: "127.0.0.1:5000", repository: "a/b", tag: "t" }],
  ["[::1]:5000/data:v1", { registry: "[::1]:5000", repository: "data", tag: "v1" }],
  ["[::1]/data:v1", { registry: "[::1]", repository: "data", tag: "v1" }],
  ["[2001:db8::1]:443/a:b", { registry: "[2001:db8::1]:443", repository: "a", tag: "b" }],
  ["GHCR.IO/org/x:1", { registry: "GHCR.IO", repository: "org/x", tag: "1" }],
  ["Registry.Example.COM:5000/x:1", {
    registry: "Registry.Example.COM:5000",
    repository: "x",
    tag: "1",
  }],
  ["r.io/a/b/c/d/e:1", { registry: "r.io", repository: "a/b/c/d/e", tag: "1" }],
  [`r.io/x@${D}`, { registry: "r.io", repository: "x", digest: D }],
  [`localhost:5000/nested/repo@${D}`, {
    registry: "localhost:5000",
    repository: "nested/repo",
    digest: D,
  }],
  [`r.io/x:v1@${D}`, { registry: "r.io", repository: "x", tag: "v1", digest: D }],
  ["r.io/a.b_c__d--e/f-g:1", { registry: "r.io", repository: "a.b_c__d--e/f-g", tag: "1" }],
  ["r.io/x:V1.0-RC_1", { registry: "r.io", repository: "x", tag: "V1.0-RC_1" }],
  ["r.io/x:_", { registry: "r.io", repository: "x", tag: "_" }],
  [`r.io/x:${"a".repeat(128)}`, { registry: "r.io", repository: "x", tag: "a".repeat(128) }],
  ["my-registry.example:1/x:1", { registry: "my-registry.example:1", repository: "x", tag: "1" }],
  ["r.io/0/1:2", { registry: "r.io", repository: "0/1", tag: "2" }],
  ["a.b:65535/x:1", { registry: "a.b:65535", repository: "x", tag: "1" }],
];

const INVALID: [string, string][] = [
  ["", "empty reference"],
  ["ubuntu:1", "missing registry"],
  ["ubuntu", "missing registry"],
  ["library/ubuntu:1", "missing registry"],
  ["org/team/model:1", "missing registry"],
  [`library/ubuntu@${D}`, "missing registry"],
  ["/x:1", "missing registry"],
  ["LocalHost/x:1", "missing registry"],
  ["r.io/Org/x:1", "repository must be lowercase"],
  ["r.io/org/Model:1", "repository must be lowercase"],
  [`localhost:5000/UPPER@${D}`, "repository must be lowercase"],
  ["r.io/x", "missing tag or digest"],
  ["localhost:5000/a/b", "missing tag or digest"],
  ["[::1]:5000/data", "missing tag or digest"],
  ["r.io/:1", "missing repository"],
  ["127.0.0.1:5400", "missing repository"],
  ["localhost:5000", "missing repository"],
  ["localhost", "missing repository"],
  ["ghcr.io", "missing repository"],
  ["[::1]:5000", "missing repository"],
  ["http://127.0.0.1:5000/a/b:v1", "a reference has no scheme such as http or https"],
  ["https://ghcr.io/org/model:v1", "a reference has no scheme such as http or https"],
  ["oci://ghcr.io/org/model:v1", "a reference has no scheme such as http or https"],
  ["r.io/", "missing repository"],
  ["r.io/x:", "invalid tag"],
  [`r.io/x:${"a".repeat(129)}`, "invalid tag"],
  ["r.io/x:.v1", "invalid tag"],
  ["r.io/x:-v1", "invalid tag"],
  ["r.io/x:v/1", "invalid tag"],
  ["r.io/x:v+1", "invalid tag"],
  ["r.io/x@sha256:abc", "digest must be sha256 with 64 lowercase hex characters"],
  [`r.io/x@${D.toUpperCase()}`, "digest must be sha256 with 64 lowercase hex characters"],
  [`r.io/x@sha256:${"A".repeat(64)}`, "digest must be sha256 with 64 lowercase hex characters"],
  [`r.io/x@sha256:${"a".repeat(65)}`, "digest must be sha256 with 64 lowercase hex characters"],
  [`r.io/x@sha512:${"a".repeat(128)}`, "digest must be sha256 with 64 lowercase hex characters"],
  ["r.io/x@", "digest must be sha256 with 64 lowercase hex characters"],
  [`r.io/x@${D}@${D}`, "digest must be sha256 with 64 lowercase hex characters"],
  ["r.io/x_:1", "invalid repository"],
  ["r.io/-x:1", "invalid repository"],
  ["r.io/x//y:1", "invalid repository"],
  ["r.io/x/:1", "invalid repository"],
  ["r.io/x___y:1", "invalid repository"],
  ["r.io/x y:1", "invalid repository"],
  ["r.io/x:y:1", "invalid repository"],
  ["-r.io/x:1", "invalid registry host"],
  ["r_x.io/x:1", "invalid registry host"],
  ["r.io:99999/x:1", "invalid registry host"],
  ["r.io:/x:1", "invalid registry host"],
  ["[::1/x:1", "invalid registry host"],
  ["[zz::1]:5000/x:1", "invalid registry host"],
  ["user@r.io/x:1", "invalid registry host"],
  [`r.io/${"a/".repeat(125)}abcde:1`, "name longer than 255 characters"],
];

Deno.test("parseReference accepts the valid table and formats it back", () => {
  assert(VALID.length + INVALID.length >= 40);
  for (const [text, expected] of VALID) {
    const ref = parseReference(text);
    assertEquals(ref, expected, text);
    assertStrictEquals(formatReference(ref), text);
    assertEquals(parseReference(formatReference(ref)), ref);
  }
});

Deno.test("parseReference rejects the invalid table naming the rule, never the input", () => {
  for (const [text, rule] of INVALID) {
    const caught = thrown(() => parseReference(text));
    assert(caught instanceof InvalidReferenceError, `${text} was accepted`);
    assertStrictEquals(caught.message, `invalid reference: ${rule}`, text);
    assertStrictEquals(caught.rule, rule, text);
    assertStrictEquals(caught.code, "ERR_INVALID_REFERENCE");
    assertStrictEquals(caught.retryable, false);
    assertStrictEquals(caught.cause, undefined);
  }
});

Deno.test("a rejected reference's message, stack head and fields carry none of the input", () => {
  for (
    const text of [
      "secrethost/Topsecretrepo:tag",
      "secret.example/Topsecretrepo:tag",
      "secret.example/topsecretrepo:tag@sha256:feedface",
      "secret.example/topsecretrepo:tag!!",
      "secret.example/topsecretrepo",
    ]
  ) {
    const err = thrown(() => parseReference(text));
    assert(err instanceof InvalidReferenceError);
    const rendered = `${err.message}\n${err.stack?.split("\n")[0]}\n${JSON.stringify(err)}`;
    for (const part of ["secret", "Topsecretrepo", "topsecretrepo", "feedface", "tag!!"]) {
      assert(!rendered.includes(part), `rendered error echoes ${part}`);
    }
  }
});

Deno.test("the 255-character name limit counts registry and repository together", () => {
  const repository = "a".repeat(255 - "r.io/".length);
  assertStrictEquals(parseReference(`r.io/${repository}:1`).repository, repository);
  assertThrows(() => parseReference(`r.io/${repository}b:1`), InvalidReferenceError);
});

Deno.test("isRegistryHost accepts hosts, IPv4, bracketed IPv6 and ports", () => {
  for (const host of ["localhost", "a.b", "a.b:1", "[::1]", "[::1]:5000", "10.0.0.1:80", "A.B"]) {
    assert(isRegistryHost(host), host);
  }
  for (const host of ["", "a..b", "a.b:", "a.b:65536", "::1", "[::1", "a b", "a.b/c", "[:::]"]) {
    assert(!isRegistryHost(host), host);
  }
});
