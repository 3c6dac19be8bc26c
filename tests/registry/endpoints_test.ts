import assert from "node:assert/strict";
import {
  blobUrl,
  manifestUrl,
  parseRegistryPath,
  registryOrigin,
  tagsUrl,
  uploadUrl,
} from "../../src/registry/endpoints.ts";

const D = "sha256:" + "ab".repeat(32);

Deno.test("registryOrigin defaults to https and uses http only with plainHttp", () => {
  assert.equal(registryOrigin("ghcr.io").href, "https://ghcr.io/");
  assert.equal(registryOrigin("ghcr.io", { plainHttp: false }).href, "https://ghcr.io/");
  assert.equal(
    registryOrigin("localhost:5000", { plainHttp: true }).href,
    "http://localhost:5000/",
  );
  assert.equal(registryOrigin("[::1]:5000", { plainHttp: true }).href, "http://[::1]:5000/");
  assert.equal(registryOrigin("Registry.Example:443").origin, "https://registry.example");
  for (const bad of ["", "a.b/c", "u@a.b", "a.b:99999", "a.b?x", "http://a.b"]) {
    assert.throws(() => registryOrigin(bad), TypeError, bad);
  }
});

Deno.test("URL builders place nested repositories, digests and tags on the origin", () => {
  const origin = registryOrigin("r.example:5000", { plainHttp: true });
  assert.equal(
    blobUrl(origin, "org/team/model", D).href,
    `http://r.example:5000/v2/org/team/model/blobs/${D}`,
  );
  assert.equal(
    uploadUrl(origin, "org/team/model").href,
    "http://r.example:5000/v2/org/team/model/blobs/uploads/",
  );
  assert.equal(
    uploadUrl(origin, "a/b", { mount: D, from: "c/d" }).href,
    `http://r.example:5000/v2/a/b/blobs/uploads/?mount=sha256%3A${"ab".repeat(32)}&from=c%2Fd`,
  );
  assert.equal(
    manifestUrl(origin, "org/team/model", "v1.0_rc-1").href,
    "http://r.example:5000/v2/org/team/model/manifests/v1.0_rc-1",
  );
  assert.equal(
    manifestUrl(origin, "org/team/model", D).href,
    `http://r.example:5000/v2/org/team/model/manifests/${D}`,
  );
  assert.equal(tagsUrl(origin, "a/b").href, "http://r.example:5000/v2/a/b/tags/list");
  // Any path or query on the given origin is ignored: the API lives at /v2/ on the origin.
  const withPath = new URL("https://r.example/some/path?q=1");
  assert.equal(blobUrl(withPath, "x", D).href, `https://r.example/v2/x/blobs/${D}`);
});

Deno.test("URL builders refuse names that would escape their path", () => {
  const origin = registryOrigin("r.example");
  assert.throws(() => blobUrl(origin, "../x", D), TypeError);
  assert.throws(() => blobUrl(origin, "Org/x", D), TypeError);
  assert.throws(() => blobUrl(origin, "x", "sha256:../../x"), TypeError);
  assert.throws(() => blobUrl(origin, "x", "sha256:abc"), TypeError);
  assert.throws(() => uploadUrl(origin, "x?y=1"), TypeError);
  assert.throws(() => uploadUrl(origin, "x", { mount: "nope" }), TypeError);
  assert.throws(() => uploadUrl(origin, "x", { mount: D, from: "../y" }), TypeError);
  assert.throws(() => manifestUrl(origin, "x", ".."), TypeError);
  assert.throws(() => manifestUrl(origin, "x", "a/b"), TypeError);
  assert.throws(() => manifestUrl(origin, "x", ""), TypeError);
  assert.throws(() => tagsUrl(origin, "x/"), TypeError);
});

Deno.test("parseRegistryPath recognises blob, upload, manifest and tag paths", () => {
  const cases: [string, ReturnType<typeof parseRegistryPath>][] = [
    [`/v2/x/blobs/${D}`, { repository: "x", kind: "blobs", reference: D }],
    [`/v2/org/team/model/blobs/${D}`, {
      repository: "org/team/model",
      kind: "blobs",
      reference: D,
    }],
    ["/v2/org/model/blobs/uploads/", { repository: "org/model", kind: "uploads", reference: "" }],
    ["/v2/org/model/blobs/uploads/5b1d2c6e-0f3a-4e0e-9a1d-0123456789ab", {
      repository: "org/model",
      kind: "uploads",
      reference: "5b1d2c6e-0f3a-4e0e-9a1d-0123456789ab",
    }],
    ["/v2/a/b/c/manifests/v1", { repository: "a/b/c", kind: "manifests", reference: "v1" }],
    [`/v2/a/manifests/${D}`, { repository: "a", kind: "manifests", reference: D }],
    ["/v2/a/b/tags/list", { repository: "a/b", kind: "tags" }],
    // Path components named like endpoint words are still repository components.
    [`/v2/blobs/manifests/blobs/${D}`, {
      repository: "blobs/manifests",
      kind: "blobs",
      reference: D,
    }],
    ["/v2/tags/list/manifests/v1", { repository: "tags/list", kind: "manifests", reference: "v1" }],
  ];
  for (const [path, expected] of cases) assert.deepEqual(parseRegistryPath(path), expected, path);
});

Deno.test("parseRegistryPath returns undefined for anything else", () => {
  for (
    const path of [
      "",
      "/",
      "/v2",
      "/v2/",
      "/v2/_catalog",
      "/v1/x/blobs/" + D,
      "/v2/x/blobs/",
      "/v2/x/blobs/notadigest",
      `/v2/X/blobs/${D}`,
      `/v2//blobs/${D}`,
      `/v2/x/blobs/${D}/extra`,
      "/v2/x/blobs/uploads/a/b",
      "/v2/x/manifests/",
      "/v2/x/manifests/a/",
      "/v2/x/tags/list/",
      "/v2/x/tags",
      `/v2/../x/blobs/${D}`,
      `v2/x/blobs/${D}`,
    ]
  ) {
    assert.equal(parseRegistryPath(path), undefined, path);
  }
});

Deno.test("parseRegistryPath inverts the URL builders", () => {
  const origin = registryOrigin("r.example");
  assert.deepEqual(parseRegistryPath(blobUrl(origin, "a/b", D).pathname), {
    repository: "a/b",
    kind: "blobs",
    reference: D,
  });
  assert.deepEqual(parseRegistryPath(uploadUrl(origin, "a/b", { mount: D }).pathname), {
    repository: "a/b",
    kind: "uploads",
    reference: "",
  });
  assert.deepEqual(parseRegistryPath(manifestUrl(origin, "a/b", "t").pathname), {
    repository: "a/b",
    kind: "manifests",
    reference: "t",
  });
  assert.deepEqual(parseRegistryPath(tagsUrl(origin, "a/b").pathname), {
    repository: "a/b",
    kind: "tags",
  });
});
