import { assertEquals, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
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
  assertStrictEquals(registryOrigin("ghcr.io").href, "https://ghcr.io/");
  assertStrictEquals(registryOrigin("ghcr.io", { plainHttp: false }).href, "https://ghcr.io/");
  assertStrictEquals(
    registryOrigin("localhost:5000", { plainHttp: true }).href,
    "http://localhost:5000/",
  );
  assertStrictEquals(registryOrigin("[::1]:5000", { plainHttp: true }).href, "http://[::1]:5000/");
  assertStrictEquals(registryOrigin("Registry.Example:443").origin, "https://registry.example");
  for (const bad of ["", "a.b/c", "u@a.b", "a.b:99999", "a.b?x", "http://a.b"]) {
    assertThrows(() => registryOrigin(bad), TypeError);
  }
});

Deno.test("URL builders place nested repositories, digests and tags on the origin", () => {
  const origin = registryOrigin("r.example:5000", { plainHttp: true });
  assertStrictEquals(
    blobUrl(origin, "org/team/model", D).href,
    `http://r.example:5000/v2/org/team/model/blobs/${D}`,
  );
  assertStrictEquals(
    uploadUrl(origin, "org/team/model").href,
    "http://r.example:5000/v2/org/team/model/blobs/uploads/",
  );
  assertStrictEquals(
    uploadUrl(origin, "a/b", { mount: D, from: "c/d" }).href,
    `http://r.example:5000/v2/a/b/blobs/uploads/?mount=sha256%3A${"ab".repeat(32)}&from=c%2Fd`,
  );
  assertStrictEquals(
    manifestUrl(origin, "org/team/model", "v1.0_rc-1").href,
    "http://r.example:5000/v2/org/team/model/manifests/v1.0_rc-1",
  );
  assertStrictEquals(
    manifestUrl(origin, "org/team/model", D).href,
    `http://r.example:5000/v2/org/team/model/manifests/${D}`,
  );
  assertStrictEquals(tagsUrl(origin, "a/b").href, "http://r.example:5000/v2/a/b/tags/list");
  // Any path or query on the given origin is ignored: the API lives at /v2/ on the origin.
  const withPath = new URL("https://r.example/some/path?q=1");
  assertStrictEquals(blobUrl(withPath, "x", D).href, `https://r.example/v2/x/blobs/${D}`);
});

Deno.test("URL builders refuse names that would escape their path", () => {
  const origin = registryOrigin("r.example");
  assertThrows(() => blobUrl(origin, "../x", D), TypeError);
  assertThrows(() => blobUrl(origin, "Org/x", D), TypeError);
  assertThrows(() => blobUrl(origin, "x", "sha256:../../x"), TypeError);
  assertThrows(() => blobUrl(origin, "x", "sha256:abc"), TypeError);
  assertThrows(() => uploadUrl(origin, "x?y=1"), TypeError);
  assertThrows(() => uploadUrl(origin, "x", { mount: "nope" }), TypeError);
  assertThrows(() => uploadUrl(origin, "x", { mount: D, from: "../y" }), TypeError);
  assertThrows(() => manifestUrl(origin, "x", ".."), TypeError);
  assertThrows(() => manifestUrl(origin, "x", "a/b"), TypeError);
  assertThrows(() => manifestUrl(origin, "x", ""), TypeError);
  assertThrows(() => tagsUrl(origin, "x/"), TypeError);
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
  for (const [path, expected] of cases) assertEquals(parseRegistryPath(path), expected, path);
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
    assertStrictEquals(parseRegistryPath(path), undefined, path);
  }
});

Deno.test("parseRegistryPath inverts the URL builders", () => {
  const origin = registryOrigin("r.example");
  assertEquals(parseRegistryPath(blobUrl(origin, "a/b", D).pathname), {
    repository: "a/b",
    kind: "blobs",
    reference: D,
  });
  assertEquals(parseRegistryPath(uploadUrl(origin, "a/b", { mount: D }).pathname), {
    repository: "a/b",
    kind: "uploads",
    reference: "",
  });
  assertEquals(parseRegistryPath(manifestUrl(origin, "a/b", "t").pathname), {
    repository: "a/b",
    kind: "manifests",
    reference: "t",
  });
  assertEquals(parseRegistryPath(tagsUrl(origin, "a/b").pathname), {
    repository: "a/b",
    kind: "tags",
  });
});
