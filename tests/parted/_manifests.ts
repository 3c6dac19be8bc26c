/**
 * A valid parted manifest and its broken variants, shared by the manifest tests.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  ANNOTATION_FILE_DIGEST,
  ANNOTATION_FILE_SIZE,
  ANNOTATION_FORMAT_VERSION,
  ANNOTATION_PART_SIZE,
} from "../../src/parted/format.ts";
import { encodeManifest } from "../../src/parted/manifest.ts";

export const sha = (bytes: Uint8Array) =>
  `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

/** A valid manifest of a 25-byte file in 10-byte parts, as a mutable object. */
export function validManifest(): Record<string, unknown> & {
  layers: Record<string, unknown>[];
  annotations: Record<string, unknown>;
  config: Record<string, unknown>;
} {
  const file = new Uint8Array(25).map((_, i) => i);
  const digests = [0, 10, 20].map((o) => sha(file.subarray(o, Math.min(o + 10, 25))));
  const bytes = encodeManifest({
    partSize: 10,
    fileSize: 25,
    fileDigest: sha(file),
    partDigests: digests,
  });
  return JSON.parse(new TextDecoder().decode(bytes));
}

export const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

export type Mutation = [
  string,
  (m: ReturnType<typeof validManifest>) => unknown,
  "kind" | "broken",
];

/** Each field broken in turn, with the class a pull must report. */
export const BROKEN_MANIFESTS: Mutation[] = [
  [
    "media type of an index",
    (m) => ({ ...m, mediaType: "application/vnd.oci.image.index.v1+json" }),
    "kind",
  ],
  ["media type missing", (m) => ({ ...m, mediaType: undefined }), "kind"],
  [
    "docker media type",
    (m) => ({ ...m, mediaType: "application/vnd.docker.distribution.manifest.v2+json" }),
    "kind",
  ],
  [
    "another artifactType",
    (m) => ({ ...m, artifactType: "application/vnd.example.other" }),
    "kind",
  ],
  ["artifactType missing (an image)", (m) => ({ ...m, artifactType: undefined }), "kind"],
  ["schemaVersion 1", (m) => ({ ...m, schemaVersion: 1 }), "broken"],
  ["schemaVersion as a string", (m) => ({ ...m, schemaVersion: "2" }), "broken"],
  [
    "config not the empty descriptor",
    (m) => ({ ...m, config: { ...m.config, size: 3 } }),
    "broken",
  ],
  ["config missing", (m) => ({ ...m, config: undefined }), "broken"],
  ["annotations missing", (m) => ({ ...m, annotations: undefined }), "broken"],
  [
    "part size missing",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_PART_SIZE]: undefined } }),
    "broken",
  ],
  [
    "part size not a number",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_PART_SIZE]: "ten" } }),
    "broken",
  ],
  [
    "part size zero",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_PART_SIZE]: "0" } }),
    "broken",
  ],
  [
    "part size with leading zero",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_PART_SIZE]: "010" } }),
    "broken",
  ],
  [
    "file size negative",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_FILE_SIZE]: "-25" } }),
    "broken",
  ],
  [
    "file digest not a digest",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_FILE_DIGEST]: "md5:abc" } }),
    "broken",
  ],
  [
    "format version unknown",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_FORMAT_VERSION]: "2" } }),
    "broken",
  ],
  ["layers missing", (m) => ({ ...m, layers: undefined }), "broken"],
  ["one layer too few", (m) => ({ ...m, layers: m.layers.slice(0, 2) }), "broken"],
  ["one layer too many", (m) => ({ ...m, layers: [...m.layers, m.layers[2]] }), "broken"],
  [
    "layer sizes swapped (order)",
    (m) => ({ ...m, layers: [m.layers[2], m.layers[1], m.layers[0]] }),
    "broken",
  ],
  [
    "file size disagrees with the layers",
    (m) => ({ ...m, annotations: { ...m.annotations, [ANNOTATION_FILE_SIZE]: "26" } }),
    "broken",
  ],
  [
    "layer media type",
    (m) => ({
      ...m,
      layers: m.layers.map((l, i) => i === 1 ? { ...l, mediaType: "application/octet-stream" } : l),
    }),
    "broken",
  ],
  [
    "layer digest malformed",
    (m) => ({ ...m, layers: m.layers.map((l, i) => i === 0 ? { ...l, digest: "sha256:xyz" } : l) }),
    "broken",
  ],
  [
    "layer size as a string",
    (m) => ({ ...m, layers: m.layers.map((l, i) => i === 2 ? { ...l, size: "5" } : l) }),
    "broken",
  ],
];
