/**
 * Media types of manifests and the OCI empty config, and the descriptor shape.
 *
 * @module
 */

/**
 * The OCI image manifest media type.
 *
 * @example Accepting an OCI manifest
 * ```ts
 * import { OCI_MANIFEST_MEDIA_TYPE } from "./media_types.ts";
 * const headers = new Headers({ accept: OCI_MANIFEST_MEDIA_TYPE });
 * ```
 */
export const OCI_MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json";

/**
 * The OCI image index media type.
 *
 * @example Recognising an index
 * ```ts
 * import { OCI_INDEX_MEDIA_TYPE } from "./media_types.ts";
 * console.log(OCI_INDEX_MEDIA_TYPE === "application/vnd.oci.image.index.v1+json"); // true
 * ```
 */
export const OCI_INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json";

/**
 * The Docker image manifest (schema 2) media type.
 *
 * @example Recognising a Docker manifest
 * ```ts
 * import { DOCKER_MANIFEST_MEDIA_TYPE } from "./media_types.ts";
 * console.log(DOCKER_MANIFEST_MEDIA_TYPE.endsWith("v2+json")); // true
 * ```
 */
export const DOCKER_MANIFEST_MEDIA_TYPE = "application/vnd.docker.distribution.manifest.v2+json";

/**
 * The Docker manifest list media type.
 *
 * @example Recognising a Docker manifest list
 * ```ts
 * import { DOCKER_MANIFEST_LIST_MEDIA_TYPE } from "./media_types.ts";
 * console.log(DOCKER_MANIFEST_LIST_MEDIA_TYPE.includes("list")); // true
 * ```
 */
export const DOCKER_MANIFEST_LIST_MEDIA_TYPE =
  "application/vnd.docker.distribution.manifest.list.v2+json";

/**
 * The OCI empty media type, used for the 2-byte `{}` config of artifacts.
 *
 * @example
 * ```ts
 * import { OCI_EMPTY_MEDIA_TYPE } from "./media_types.ts";
 * console.log(OCI_EMPTY_MEDIA_TYPE); // "application/vnd.oci.empty.v1+json"
 * ```
 */
export const OCI_EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json";

/**
 * The bytes of the OCI empty config blob: `{}`. Shared: copy before handing it to code that
 * may modify a buffer it is given.
 *
 * @example Uploading the empty config
 * ```ts
 * import { EMPTY_CONFIG_BYTES } from "./media_types.ts";
 * console.log(new TextDecoder().decode(EMPTY_CONFIG_BYTES)); // "{}"
 * ```
 */
export const EMPTY_CONFIG_BYTES: Uint8Array = new Uint8Array([0x7b, 0x7d]);

/**
 * A content descriptor: what a manifest says about a blob or another manifest.
 *
 * @example What a parted push returns
 * ```ts
 * import type { Descriptor } from "@ocipart/ocipart";
 * const pushed: Descriptor = {
 *   mediaType: "application/vnd.oci.image.manifest.v1+json",
 *   digest: "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
 *   size: 2,
 * };
 * console.log(`registry.example/org/weights@${pushed.digest}`); // a pullable reference
 * ```
 */
export interface Descriptor {
  /** The media type of the referenced content. */
  mediaType: string;
  /** The digest of the referenced content, `sha256:<hex>`. */
  digest: string;
  /** The size of the referenced content in bytes. */
  size: number;
  /** The artifact type, for manifests of artifacts. */
  artifactType?: string;
  /** Arbitrary string metadata. */
  annotations?: Record<string, string>;
}

/**
 * The descriptor of the OCI empty config blob ({@linkcode EMPTY_CONFIG_BYTES}). Frozen.
 *
 * @example Using it as a manifest config
 * ```ts
 * import { EMPTY_CONFIG_DESCRIPTOR } from "./media_types.ts";
 * const manifest = { schemaVersion: 2, config: EMPTY_CONFIG_DESCRIPTOR, layers: [] };
 * console.log(manifest.config.size); // 2
 * ```
 */
export const EMPTY_CONFIG_DESCRIPTOR: Readonly<Descriptor> = Object.freeze({
  mediaType: OCI_EMPTY_MEDIA_TYPE,
  digest: "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
  size: 2,
});
