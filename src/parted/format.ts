/**
 * The parted format's contract: media types, annotation keys and limits. Changing any of these
 * is a new format version.
 *
 * @module
 */

/**
 * The format version recorded in the {@linkcode ANNOTATION_FORMAT_VERSION} annotation and carried
 * in the media types below.
 *
 * @example
 * ```ts
 * import { FORMAT_VERSION } from "./format.ts";
 * console.log(FORMAT_VERSION); // "1"
 * ```
 */
export const FORMAT_VERSION = "1";

/**
 * The manifest's `artifactType`: identifies a parted file artifact, format version 1.
 *
 * @example
 * ```ts
 * import { PARTED_ARTIFACT_TYPE } from "./format.ts";
 * console.log(PARTED_ARTIFACT_TYPE); // "application/vnd.ocipart.parted.v1"
 * ```
 */
export const PARTED_ARTIFACT_TYPE = "application/vnd.ocipart.parted.v1";

/**
 * The media type of every layer (one per part) of a parted manifest, format version 1.
 *
 * @example
 * ```ts
 * import { PARTED_LAYER_MEDIA_TYPE } from "./format.ts";
 * console.log(PARTED_LAYER_MEDIA_TYPE); // "application/vnd.ocipart.parted.part.v1"
 * ```
 */
export const PARTED_LAYER_MEDIA_TYPE = "application/vnd.ocipart.parted.part.v1";

/**
 * Manifest annotation: the part size in bytes, a decimal integer.
 *
 * @example
 * ```ts
 * import { ANNOTATION_PART_SIZE } from "./format.ts";
 * console.log(ANNOTATION_PART_SIZE); // "dev.ocipart.parted.v1.part-size"
 * ```
 */
export const ANNOTATION_PART_SIZE = "dev.ocipart.parted.v1.part-size";

/**
 * Manifest annotation: the sha256 digest of the whole file, `sha256:<hex>`. Not verified by
 * pull (that would need a second sequential read); callers may compare it themselves.
 *
 * @example
 * ```ts
 * import { ANNOTATION_FILE_DIGEST } from "./format.ts";
 * console.log(ANNOTATION_FILE_DIGEST); // "dev.ocipart.parted.v1.file-digest"
 * ```
 */
export const ANNOTATION_FILE_DIGEST = "dev.ocipart.parted.v1.file-digest";

/**
 * Manifest annotation: the file size in bytes, a decimal integer.
 *
 * @example
 * ```ts
 * import { ANNOTATION_FILE_SIZE } from "./format.ts";
 * console.log(ANNOTATION_FILE_SIZE); // "dev.ocipart.parted.v1.file-size"
 * ```
 */
export const ANNOTATION_FILE_SIZE = "dev.ocipart.parted.v1.file-size";

/**
 * Manifest annotation: the format version, {@linkcode FORMAT_VERSION}.
 *
 * @example
 * ```ts
 * import { ANNOTATION_FORMAT_VERSION } from "./format.ts";
 * console.log(ANNOTATION_FORMAT_VERSION); // "dev.ocipart.parted.v1.format-version"
 * ```
 */
export const ANNOTATION_FORMAT_VERSION = "dev.ocipart.parted.v1.format-version";

/**
 * The default part size: 512 MiB.
 *
 * @example
 * ```ts
 * import { DEFAULT_PART_SIZE } from "./format.ts";
 * console.log(DEFAULT_PART_SIZE === 512 * 1024 * 1024); // true
 * ```
 */
export const DEFAULT_PART_SIZE: number = 512 * 1024 * 1024;

/**
 * The default number of concurrent workers of push and pull.
 *
 * @example
 * ```ts
 * import { DEFAULT_WORKERS } from "./format.ts";
 * console.log(DEFAULT_WORKERS); // 8
 * ```
 */
export const DEFAULT_WORKERS = 8;

/**
 * The most parts one artifact may have. A file that needs more is rejected by push.
 *
 * @example
 * ```ts
 * import { MAX_PARTS } from "./format.ts";
 * console.log(MAX_PARTS); // 4096
 * ```
 */
export const MAX_PARTS = 4096;
