/**
 * The parted manifest: encoding a pushed file's parts into an OCI image manifest (and what a
 * registry's refusal of it means for the part size), and decoding and validating one on pull.
 *
 * @module
 */
import { findError } from "../errors/find_error.ts";
import { HttpStatusError, InvalidManifestError } from "../errors/kinds.ts";
import { NotPartedArtifactError } from "../errors/sentinels.ts";
import { isSha256Digest } from "../registry/digest.ts";
import { registryErrorCodes } from "../registry/status.ts";
import { EMPTY_CONFIG_DESCRIPTOR, OCI_MANIFEST_MEDIA_TYPE } from "../registry/media_types.ts";
import {
  ANNOTATION_FILE_DIGEST,
  ANNOTATION_FILE_SIZE,
  ANNOTATION_FORMAT_VERSION,
  ANNOTATION_PART_SIZE,
  ANNOTATION_TITLE,
  FORMAT_VERSION,
  isReservedAnnotation,
  MAX_PARTS,
  PARTED_ARTIFACT_TYPE,
  PARTED_LAYER_MEDIA_TYPE,
} from "./format.ts";
import { partSizeForHalfTheParts } from "./part_size_advice.ts";
import { PartSizeError } from "./part_size_error.ts";
import { partCount, type PartRange, planParts } from "./plan.ts";

/** A part with its digest, as listed by a manifest. */
export interface PartDescriptor extends PartRange {
  /** The part's sha256 digest, `sha256:<hex>`. */
  readonly digest: string;
}

/** What a parted manifest says about the file. */
export interface PartedManifest {
  /** The part size the file was split with. */
  readonly partSize: number;
  /** The file size in bytes. */
  readonly fileSize: number;
  /** The whole-file sha256 digest (checked by pull only with `verifyFileDigest`). */
  readonly fileDigest: string;
  /** The parts in file order. */
  readonly parts: readonly PartDescriptor[];
  /** The title annotation (the pushed file's name), unchecked; undefined when absent. */
  readonly title: string | undefined;
  /** The other annotations (not the format's, not the title) with string values, unchecked. */
  readonly annotations: Readonly<Record<string, string>>;
}

/**
 * Encodes the manifest of a file: schema version 2, the OCI manifest media type, the parted
 * `artifactType`, the OCI empty config, one layer per part, the format annotations, the title
 * and the caller's annotations (in key order). The same input always gives the same bytes, so an unchanged file re-pushed at the same part size has
 * the same manifest digest.
 *
 * @example
 * ```ts
 * import { encodeManifest } from "./manifest.ts";
 * const empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
 * const bytes = encodeManifest({ partSize: 10, fileSize: 0, fileDigest: empty, partDigests: [empty] });
 * console.log(JSON.parse(new TextDecoder().decode(bytes)).layers.length); // 1
 * ```
 */
export function encodeManifest(info: {
  partSize: number;
  fileSize: number;
  fileDigest: string;
  partDigests: readonly string[];
  /** The source's base name, recorded as the title annotation. */
  title?: string;
  /** The caller's annotations; reserved keys throw a `RangeError`. */
  annotations?: Readonly<Record<string, string>>;
}): Uint8Array {
  const parts = planParts(info.fileSize, info.partSize);
  if (parts.length !== info.partDigests.length) {
    throw new RangeError(
      `manifest: one digest per part is required: ${parts.length} parts, ` +
        `not ${info.partDigests.length} digests`,
    );
  }
  const extra: Record<string, string> = { ...info.annotations };
  for (const key of Object.keys(extra)) {
    if (isReservedAnnotation(key)) {
      throw new RangeError(`manifest: annotation key ${JSON.stringify(key)} is reserved`);
    }
  }
  if (info.title !== undefined) extra[ANNOTATION_TITLE] = info.title;
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST_MEDIA_TYPE,
    artifactType: PARTED_ARTIFACT_TYPE,
    config: {
      mediaType: EMPTY_CONFIG_DESCRIPTOR.mediaType,
      digest: EMPTY_CONFIG_DESCRIPTOR.digest,
      size: EMPTY_CONFIG_DESCRIPTOR.size,
    },
    layers: parts.map((part) => ({
      mediaType: PARTED_LAYER_MEDIA_TYPE,
      digest: info.partDigests[part.index],
      size: part.size,
    })),
    annotations: sortedKeys({
      ...extra,
      [ANNOTATION_FILE_DIGEST]: info.fileDigest,
      [ANNOTATION_FILE_SIZE]: String(info.fileSize),
      [ANNOTATION_FORMAT_VERSION]: FORMAT_VERSION,
      [ANNOTATION_PART_SIZE]: String(info.partSize),
    }),
  };
  return new TextEncoder().encode(JSON.stringify(manifest));
}

/** Statuses a registry refuses a manifest with for its size or number of layers. */
const LAYER_LIMIT_STATUSES: ReadonlySet<number> = new Set([400, 405, 413]);

/**
 * Registry error codes of such a refusal: Distribution's own for a manifest it will not take
 * (`MANIFEST_INVALID`, `SIZE_INVALID`) and `UNSUPPORTED`, which a registry that caps the
 * layers of an image answers with a 405.
 */
const LAYER_LIMIT_CODES: ReadonlySet<string> = new Set([
  "MANIFEST_INVALID",
  "SIZE_INVALID",
  "UNSUPPORTED",
]);

/**
 * What a refused manifest PUT of a push means: when the registry answered a manifest of
 * `partCount` (at least 2) parts with a 413, or with a 400 or 405 whose error codes are all
 * among those a size or layer limit gives, a {@linkcode PartSizeError} naming the part size
 * that halves the count; otherwise `undefined` (the refusal is something else, e.g. a missing
 * blob).
 *
 * @example A registry that caps the layers of a manifest
 * ```ts
 * import { HttpStatusError } from "../errors/kinds.ts";
 * import { layerLimitFailure } from "./manifest.ts";
 * const body = new TextEncoder().encode('{"errors":[{"code":"UNSUPPORTED"}]}');
 * const refused = new HttpStatusError("PUT manifest", { status: 405, body });
 * console.log(layerLimitFailure(refused, 2 ** 29, 600)?.suggestedPartSize); // 1073741824
 * ```
 */
export function layerLimitFailure(
  err: unknown,
  partSize: number,
  partCount: number,
): PartSizeError | undefined {
  const http = findError(err, HttpStatusError);
  if (http === undefined || http.offOrigin || partCount < 2) return undefined;
  if (!LAYER_LIMIT_STATUSES.has(http.status)) return undefined;
  const codes = registryErrorCodes(http);
  const limitCodes = codes.length > 0 && codes.every((code) => LAYER_LIMIT_CODES.has(code));
  if (http.status !== 413 && !limitCodes) return undefined;
  return new PartSizeError(http.message, {
    limit: "layer-count",
    partSize,
    partCount,
    suggestedPartSize: partSizeForHalfTheParts(partSize),
  }, { cause: err, status: http.status });
}

/**
 * Decodes and validates a manifest. A manifest that is not this artifact kind (media type other
 * than the OCI image manifest, or another `artifactType`) throws `NotPartedArtifactError`; one
 * that claims to be this kind but is broken (schema version, config, layer media type, digest or
 * size, missing or unparseable annotation, layers disagreeing with the split rule) throws
 * `InvalidManifestError`. Messages name only fixed fields, rules and bounded part indexes.
 *
 * @example Round trip
 * ```ts
 * import { decodeManifest, encodeManifest } from "./manifest.ts";
 * const empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
 * const bytes = encodeManifest({ partSize: 10, fileSize: 0, fileDigest: empty, partDigests: [empty] });
 * console.log(decodeManifest(bytes).parts.length); // 1
 * ```
 */
export function decodeManifest(bytes: Uint8Array): PartedManifest {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    throw new InvalidManifestError("not valid JSON", { cause: err });
  }
  if (!isObject(value)) throw new InvalidManifestError("not a JSON object");
  // Kind first: an image, an index or another artifact is not broken, it is something else.
  if (value.mediaType !== OCI_MANIFEST_MEDIA_TYPE) {
    throw new NotPartedArtifactError("manifest mediaType is not an OCI image manifest");
  }
  if (value.artifactType !== PARTED_ARTIFACT_TYPE) {
    throw new NotPartedArtifactError("manifest artifactType differs");
  }
  if (value.schemaVersion !== 2) throw new InvalidManifestError("schemaVersion must be 2");
  checkConfig(value.config);
  const annotations = value.annotations;
  if (!isObject(annotations)) throw new InvalidManifestError("annotations: missing");
  const version = annotations[ANNOTATION_FORMAT_VERSION];
  if (version !== FORMAT_VERSION) {
    throw new InvalidManifestError("annotations: format version missing or unsupported");
  }
  const partSize = parseSize(annotations[ANNOTATION_PART_SIZE], "part size");
  if (partSize === 0) throw new InvalidManifestError("annotations: part size must be positive");
  const fileSize = parseSize(annotations[ANNOTATION_FILE_SIZE], "file size");
  const fileDigest = annotations[ANNOTATION_FILE_DIGEST];
  if (typeof fileDigest !== "string" || !isSha256Digest(fileDigest)) {
    throw new InvalidManifestError("annotations: file digest missing or not a sha256 digest");
  }
  const layers = value.layers;
  if (!Array.isArray(layers)) throw new InvalidManifestError("layers: not a list");
  const expected = partCount(fileSize, partSize);
  if (expected > MAX_PARTS) {
    throw new InvalidManifestError(`layers: more than ${MAX_PARTS} parts`);
  }
  if (layers.length !== expected) {
    throw new InvalidManifestError("layers: count disagrees with the split rule");
  }
  const parts = planParts(fileSize, partSize).map((range): PartDescriptor => {
    const layer: unknown = layers[range.index];
    const where = `layers[${range.index}]`;
    if (!isObject(layer)) throw new InvalidManifestError(`${where}: not an object`);
    if (layer.mediaType !== PARTED_LAYER_MEDIA_TYPE) {
      throw new InvalidManifestError(`${where}: mediaType is not the parted layer type`);
    }
    if (typeof layer.digest !== "string" || !isSha256Digest(layer.digest)) {
      throw new InvalidManifestError(`${where}: digest is not a sha256 digest`);
    }
    if (layer.size !== range.size) {
      throw new InvalidManifestError(`${where}: size disagrees with the split rule`);
    }
    return { ...range, digest: layer.digest };
  });
  if (parts.length === 1 && parts[0].digest !== fileDigest) {
    throw new InvalidManifestError("layers[0]: a single part must have the file digest");
  }
  const title = annotations[ANNOTATION_TITLE];
  if (title !== undefined && typeof title !== "string") {
    throw new InvalidManifestError("annotations: title is not a string");
  }
  return {
    partSize,
    fileSize,
    fileDigest,
    parts,
    title,
    annotations: otherAnnotations(annotations),
  };
}

/** The annotations a pusher added, in key order; a value that is not a string is left out. */
function otherAnnotations(annotations: Record<string, unknown>): Record<string, string> {
  const entries = Object.entries(annotations).filter((entry): entry is [string, string] =>
    typeof entry[1] === "string" && !isReservedAnnotation(entry[0])
  );
  return sortedKeys(Object.fromEntries(entries));
}

/** The same entries in key order, so equal input always encodes to equal bytes. */
function sortedKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function checkConfig(config: unknown): void {
  if (
    !isObject(config) || config.mediaType !== EMPTY_CONFIG_DESCRIPTOR.mediaType ||
    config.digest !== EMPTY_CONFIG_DESCRIPTOR.digest || config.size !== EMPTY_CONFIG_DESCRIPTOR.size
  ) {
    throw new InvalidManifestError("config: not the OCI empty descriptor");
  }
}

function parseSize(text: unknown, field: string): number {
  // Canonical decimal only: "010", "1e3", " 1" and signs are broken annotations.
  if (typeof text !== "string" || !/^(0|[1-9][0-9]*)$/.test(text)) {
    throw new InvalidManifestError(`annotations: ${field} missing or not a decimal integer`);
  }
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new InvalidManifestError(`annotations: ${field} out of range`);
  }
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
