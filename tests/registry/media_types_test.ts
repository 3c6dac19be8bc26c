import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import {
  DOCKER_MANIFEST_LIST_MEDIA_TYPE,
  DOCKER_MANIFEST_MEDIA_TYPE,
  EMPTY_CONFIG_BYTES,
  EMPTY_CONFIG_DESCRIPTOR,
  OCI_EMPTY_MEDIA_TYPE,
  OCI_INDEX_MEDIA_TYPE,
  OCI_MANIFEST_MEDIA_TYPE,
} from "../../src/registry/media_types.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";

Deno.test("the empty config is the 2 bytes {} and its descriptor matches them", () => {
  assertStrictEquals(new TextDecoder().decode(EMPTY_CONFIG_BYTES), "{}");
  assertStrictEquals(EMPTY_CONFIG_BYTES.byteLength, 2);
  assertEquals(EMPTY_CONFIG_DESCRIPTOR, {
    mediaType: "application/vnd.oci.empty.v1+json",
    digest: "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    size: 2,
  });
  assertStrictEquals(sha256Digest(EMPTY_CONFIG_BYTES), EMPTY_CONFIG_DESCRIPTOR.digest);
  assertStrictEquals(EMPTY_CONFIG_BYTES.byteLength, EMPTY_CONFIG_DESCRIPTOR.size);
  assert(Object.isFrozen(EMPTY_CONFIG_DESCRIPTOR));
});

Deno.test("media type strings are the registered ones", () => {
  assertStrictEquals(OCI_MANIFEST_MEDIA_TYPE, "application/vnd.oci.image.manifest.v1+json");
  assertStrictEquals(OCI_INDEX_MEDIA_TYPE, "application/vnd.oci.image.index.v1+json");
  assertStrictEquals(OCI_EMPTY_MEDIA_TYPE, "application/vnd.oci.empty.v1+json");
  assertStrictEquals(
    DOCKER_MANIFEST_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.v2+json",
  );
  assertStrictEquals(
    DOCKER_MANIFEST_LIST_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.list.v2+json",
  );
});
