import { assert, assertEquals, assertInstanceOf, assertThrows } from "../fixtures/assert.ts";
import { findError, InvalidManifestError, NotPartedArtifactError } from "../../src/errors/mod.ts";
import {
  ANNOTATION_FILE_DIGEST,
  ANNOTATION_FILE_SIZE,
  ANNOTATION_FORMAT_VERSION,
  ANNOTATION_PART_SIZE,
  PARTED_ARTIFACT_TYPE,
  PARTED_LAYER_MEDIA_TYPE,
} from "../../src/parted/format.ts";
import { decodeManifest, encodeManifest } from "../../src/parted/manifest.ts";
import { BROKEN_MANIFESTS, encode, sha, validManifest } from "./_manifests.ts";

Deno.test("manifest: encoding is deterministic and carries the format contract", () => {
  const m = validManifest();
  assertEquals(m.schemaVersion, 2);
  assertEquals(m.mediaType, "application/vnd.oci.image.manifest.v1+json");
  assertEquals(m.artifactType, PARTED_ARTIFACT_TYPE);
  assertEquals(m.config, {
    mediaType: "application/vnd.oci.empty.v1+json",
    digest: "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    size: 2,
  });
  assertEquals(m.layers.map((l) => [l.mediaType, l.size]), [
    [PARTED_LAYER_MEDIA_TYPE, 10],
    [PARTED_LAYER_MEDIA_TYPE, 10],
    [PARTED_LAYER_MEDIA_TYPE, 5],
  ]);
  assertEquals(m.annotations[ANNOTATION_PART_SIZE], "10");
  assertEquals(m.annotations[ANNOTATION_FILE_SIZE], "25");
  assertEquals(m.annotations[ANNOTATION_FORMAT_VERSION], "1");
  const again = validManifest();
  assertEquals(encode(again), encode(m));
  const decoded = decodeManifest(encode(m));
  assertEquals(decoded.parts.map((p) => [p.index, p.offset, p.size]), [[0, 0, 10], [1, 10, 10], [
    2,
    20,
    5,
  ]]);
  assertEquals(decoded.fileDigest, m.annotations[ANNOTATION_FILE_DIGEST]);
});

Deno.test("manifest: every broken field gives the right class, naming no value", () => {
  assert(BROKEN_MANIFESTS.length >= 15);
  for (const [name, mutate, expected] of BROKEN_MANIFESTS) {
    const bytes = encode(mutate(validManifest()));
    const err = assertThrows(() => decodeManifest(bytes));
    if (expected === "kind") {
      assertInstanceOf(err, NotPartedArtifactError);
      assertEquals(findError(err, InvalidManifestError), undefined, name);
    } else {
      assertInstanceOf(err, InvalidManifestError);
      assertEquals(findError(err, NotPartedArtifactError), undefined, name);
    }
    const message = (err as Error).message;
    assert(
      !/sha256:|application\/|md5/.test(message),
      `${name}: message leaks a value: ${message}`,
    );
  }
});

Deno.test("manifest: not JSON, not an object, and a single part whose digest is not the file's", () => {
  assertInstanceOf(
    assertThrows(() => decodeManifest(new TextEncoder().encode("{"))),
    InvalidManifestError,
  );
  assertInstanceOf(assertThrows(() => decodeManifest(encode([1]))), InvalidManifestError);
  const one = new Uint8Array([1, 2, 3]);
  const bytes = encodeManifest({
    partSize: 10,
    fileSize: 3,
    fileDigest: sha(new Uint8Array([9])),
    partDigests: [sha(one)],
  });
  assertInstanceOf(assertThrows(() => decodeManifest(bytes)), InvalidManifestError);
});
