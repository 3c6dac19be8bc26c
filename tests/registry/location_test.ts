import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { LocationError } from "../../src/errors/mod.ts";
import { causeChain } from "../../src/errors/find_error.ts";
import { resolveLocation, withDigestQuery } from "../../src/registry/location.ts";

const D = "sha256:" + "0123456789abcdef".repeat(4);
const D_QUERY = `digest=sha256%3A${"0123456789abcdef".repeat(4)}`;
const HTTPS_BASE = new URL("https://registry.example:5000/v2/org/data/blobs/uploads/");
const HTTP_BASE = new URL("http://127.0.0.1:5000/v2/org/data/blobs/uploads/");
const OP = "POST blob upload";

function rejected(value: string | null, base: URL): LocationError {
  let caught: unknown;
  try {
    resolveLocation(value, base, OP);
  } catch (err) {
    caught = err;
  }
  assert(caught instanceof LocationError, `accepted: ${value}`);
  return caught;
}

Deno.test("every rejection class of endpoint rule 1 names its rule", () => {
  const cases: [string | null, URL, string][] = [
    [null, HTTPS_BASE, "missing"],
    ["", HTTPS_BASE, "empty"],
    ["   ", HTTPS_BASE, "empty"],
    ["http://[::1/x", HTTP_BASE, "malformed"],
    ["https://host:99999/x", HTTPS_BASE, "malformed"],
    ["https://exa mple.com/x", HTTPS_BASE, "malformed"],
    ["/v2/x\n/y", HTTPS_BASE, "malformed"],
    ["/v2/x\ty", HTTPS_BASE, "malformed"],
    [" /v2/x", HTTPS_BASE, "malformed"],
    ["https:\\\\evil.example\\x", HTTPS_BASE, "malformed"],
    ["/\\evil.example/x", HTTPS_BASE, "malformed"],
    ["http:///x", HTTP_BASE, "hostless"],
    ["https:///x", HTTPS_BASE, "hostless"],
    ["https://", HTTPS_BASE, "hostless"],
    ["https://?x=1", HTTPS_BASE, "hostless"],
    ["http:x", HTTP_BASE, "hostless"],
    ["https:/x", HTTPS_BASE, "hostless"],
    ["///x", HTTPS_BASE, "hostless"],
    ["https://u:p@storage.example/x", HTTPS_BASE, "credentials"],
    ["https://u@storage.example/x", HTTPS_BASE, "credentials"],
    ["https://:p@storage.example/x", HTTPS_BASE, "credentials"],
    ["//u:p@storage.example/x", HTTPS_BASE, "credentials"],
    ["https://@storage.example/x", HTTPS_BASE, "credentials"],
    ["ftp://storage.example/x", HTTPS_BASE, "unsupported-scheme"],
    ["file:///etc/passwd", HTTPS_BASE, "unsupported-scheme"],
    ["data:text/plain,hello", HTTPS_BASE, "unsupported-scheme"],
    ["javascript:alert(1)", HTTPS_BASE, "unsupported-scheme"],
    ["ws://storage.example/x", HTTP_BASE, "unsupported-scheme"],
    ["http://storage.example/x", HTTPS_BASE, "https-to-http"],
    ["HTTP://registry.example:5000/x", HTTPS_BASE, "https-to-http"],
  ];
  for (const [value, base, rule] of cases) {
    const err = rejected(value, base);
    assertStrictEquals(err.rule, rule, String(value));
    assertStrictEquals(err.message, `${OP}: location rejected (${rule})`);
    assertStrictEquals(err.code, "ERR_LOCATION");
    assertStrictEquals(err.retryable, false);
  }
});

Deno.test("a rejected location never appears in the rendered error or its causes", () => {
  const secrets = [
    "https://u:s3cr3t@storage.example/up?X-Amz-Signature=s3cr3t",
    "http://storage.example/up?X-Amz-Signature=s3cr3t",
    "ftp://storage.example/up?X-Amz-Signature=s3cr3t",
    "https://storage.example:99999/up?X-Amz-Signature=s3cr3t",
    "http:///storage.example/up?X-Amz-Signature=s3cr3t",
    "/up?X-Amz-Signature=s3cr3t#storage.example\n",
  ];
  for (const value of secrets) {
    const err = rejected(value, HTTPS_BASE);
    for (const link of causeChain(err)) {
      const text = link instanceof Error
        ? `${link}\n${link.stack}\n${JSON.stringify(link)}`
        : String(link);
      for (const part of ["storage.example", "s3cr3t", "/up", "X-Amz", "99999", "u:"]) {
        assert(!text.includes(part), `${part} rendered for ${JSON.stringify(value)}`);
      }
    }
  }
});

Deno.test("relative and absolute same- and other-origin locations resolve", () => {
  const cases: [string, URL, string][] = [
    [
      "/v2/org/data/blobs/uploads/abc?_state=x",
      HTTPS_BASE,
      "https://registry.example:5000/v2/org/data/blobs/uploads/abc?_state=x",
    ],
    ["./abc", HTTPS_BASE, "https://registry.example:5000/v2/org/data/blobs/uploads/abc"],
    ["abc", HTTPS_BASE, "https://registry.example:5000/v2/org/data/blobs/uploads/abc"],
    ["?q=1", HTTPS_BASE, "https://registry.example:5000/v2/org/data/blobs/uploads/?q=1"],
    ["../x", HTTPS_BASE, "https://registry.example:5000/v2/org/data/blobs/x"],
    [
      "https://registry.example:5000/v2/org/data/blobs/uploads/abc",
      HTTPS_BASE,
      "https://registry.example:5000/v2/org/data/blobs/uploads/abc",
    ],
    [
      "https://storage.example/bucket/up?X-Amz-Signature=a%2Fb",
      HTTPS_BASE,
      "https://storage.example/bucket/up?X-Amz-Signature=a%2Fb",
    ],
    ["//storage.example/up", HTTPS_BASE, "https://storage.example/up"],
    [
      "http://127.0.0.1:5000/v2/x/blobs/uploads/1",
      HTTP_BASE,
      "http://127.0.0.1:5000/v2/x/blobs/uploads/1",
    ],
    // An http registry may hand out an https location (an upgrade is fine).
    ["https://storage.example/up", HTTP_BASE, "https://storage.example/up"],
    ["HTTPS://Storage.Example/up", HTTP_BASE, "https://storage.example/up"],
    ["http://[::1]:5000/v2/x/blobs/uploads/1", HTTP_BASE, "http://[::1]:5000/v2/x/blobs/uploads/1"],
    // The fragment is never sent, so it is dropped.
    [
      "/v2/x/blobs/uploads/1#frag",
      HTTPS_BASE,
      "https://registry.example:5000/v2/x/blobs/uploads/1",
    ],
  ];
  for (const [value, base, expected] of cases) {
    assertStrictEquals(resolveLocation(value, base, OP).href, expected, value);
  }
});

Deno.test("resolution keeps the signed query bytes exactly", () => {
  const value = "https://s.example/up?X-Amz-Signature=a%2Fb&_state=x%3D%3D&b=1&a=2&e=&&z=%7E~";
  assertStrictEquals(resolveLocation(value, HTTPS_BASE, OP).search, new URL(value).search);
  assertStrictEquals(
    resolveLocation(value, HTTPS_BASE, OP).search,
    "?X-Amz-Signature=a%2Fb&_state=x%3D%3D&b=1&a=2&e=&&z=%7E~",
  );
});

Deno.test("withDigestQuery replaces the digest keeping every other byte", () => {
  const signed = new URL(
    "https://s.example/up?X-Amz-Signature=a%2Fb&_state=x%3D%3D&digest=old",
  );
  const out = withDigestQuery(signed, D);
  assertStrictEquals(
    out.href,
    `https://s.example/up?X-Amz-Signature=a%2Fb&_state=x%3D%3D&${D_QUERY}`,
  );
  assertStrictEquals(out.searchParams.get("digest"), D);
  // The input is not modified.
  assertStrictEquals(signed.search, "?X-Amz-Signature=a%2Fb&_state=x%3D%3D&digest=old");
  // In place, not moved to the end; repeats and encoded names are folded into one.
  assertStrictEquals(
    withDigestQuery(new URL("https://s.example/u?digest=old&b=%2F&digest=older&%64igest=x"), D)
      .search,
    `?${D_QUERY}&b=%2F`,
  );
  // A parameter whose name merely contains "digest" is somebody else's.
  assertStrictEquals(
    withDigestQuery(new URL("https://s.example/u?x-digest=1&digests=2"), D).search,
    `?x-digest=1&digests=2&${D_QUERY}`,
  );
});

Deno.test("withDigestQuery adds the digest to a URL with or without a query", () => {
  assertStrictEquals(
    withDigestQuery(new URL("https://s.example/up"), D).href,
    `https://s.example/up?${D_QUERY}`,
  );
  assertStrictEquals(
    withDigestQuery(new URL("https://s.example/up?"), D).href,
    `https://s.example/up?${D_QUERY}`,
  );
  assertStrictEquals(
    withDigestQuery(
      new URL("https://s.example/up?X-Amz-Signature=a%2Fb&_state=x%3D%3D&b=1&a=2&e=&&z=%7E~"),
      D,
    ).search,
    `?X-Amz-Signature=a%2Fb&_state=x%3D%3D&b=1&a=2&e=&&z=%7E~&${D_QUERY}`,
  );
  // Distribution's own session location: the _state parameter survives untouched.
  const session = resolveLocation(
    "/v2/a/blobs/uploads/5b1d?_state=AbC%2B%2F%3D%3D",
    HTTP_BASE,
    OP,
  );
  assertStrictEquals(
    withDigestQuery(session, D).href,
    `http://127.0.0.1:5000/v2/a/blobs/uploads/5b1d?_state=AbC%2B%2F%3D%3D&${D_QUERY}`,
  );
  // Only the query changes.
  const other = withDigestQuery(new URL("https://u.example:8443/a/b?a=1#f"), D);
  assertStrictEquals(other.href, `https://u.example:8443/a/b?a=1&${D_QUERY}#f`);
});
