/**
 * Artifacts that other tools write, one file per layer: the layers that name a file, by the
 * annotation ORAS writes (`org.opencontainers.image.title`), the one ModelPack writes
 * (`org.cncf.model.filepath`), or, for a Docker model artifact, the media type of its GGUF
 * weights. Such a layer is a blob delivered as stored: it is never unpacked.
 *
 * @module
 */
import { isPlainFileName } from "../../parted/mod.ts";

/** The annotation ORAS (and the OCI image specification) gives a layer's file name. */
export const TITLE_ANNOTATION = "org.opencontainers.image.title";
/** The annotation a ModelPack artifact gives a layer's path in the model. */
export const MODELPACK_PATH_ANNOTATION = "org.cncf.model.filepath";
/** The media type of a Docker model artifact's GGUF weights. */
export const DOCKER_GGUF_MEDIA_TYPE = "application/vnd.docker.ai.gguf.v3";
/** The name a Docker model's GGUF layer without a title is written under. */
export const DOCKER_GGUF_NAME = "model.gguf";

/** One layer that names a file. */
export interface FileLayer {
  /** The file name the layer gives (untrusted text: escape before showing it). */
  readonly name: string;
  /** Whether `name` is a plain file name, which a pull into a directory may write. */
  readonly plain: boolean;
  /** The layer's digest. */
  readonly digest: string;
  /** The layer's size as the manifest states it. */
  readonly size: number;
  /** The layer's media type. */
  readonly mediaType: string;
}

/**
 * The layers of the image manifest `bytes` that name a file, in manifest order; empty for a
 * manifest without any (or for bytes that are not an image manifest). Layers with a digest
 * that is not sha256 or a size that is not a non-negative safe integer are left out.
 *
 * @example
 * ```ts
 * import { fileLayers } from "./file_artifact.ts";
 * const manifest = {
 *   schemaVersion: 2,
 *   layers: [{
 *     mediaType: "application/octet-stream",
 *     digest: `sha256:${"a".repeat(64)}`,
 *     size: 5,
 *     annotations: { "org.opencontainers.image.title": "hello.txt" },
 *   }],
 * };
 * const layers = fileLayers(new TextEncoder().encode(JSON.stringify(manifest)));
 * console.log(layers.map((l) => l.name)); // ["hello.txt"]
 * ```
 */
export function fileLayers(bytes: Uint8Array): FileLayer[] {
  let manifest: unknown;
  try {
    manifest = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return [];
  }
  const layers = (manifest as { layers?: unknown } | null)?.layers;
  if (!Array.isArray(layers)) return [];
  const found: FileLayer[] = [];
  for (const layer of layers) {
    if (typeof layer !== "object" || layer === null) continue;
    const { digest, size, mediaType, annotations } = layer as Record<string, unknown>;
    if (typeof digest !== "string" || !/^sha256:[0-9a-f]{64}$/.test(digest)) continue;
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) continue;
    const type = typeof mediaType === "string" ? mediaType : "";
    const name = nameOf(annotations, type);
    if (name === undefined) continue;
    found.push({ name, plain: isPlainFileName(name), digest, size, mediaType: type });
  }
  return found;
}

function nameOf(annotations: unknown, mediaType: string): string | undefined {
  const values = typeof annotations === "object" && annotations !== null
    ? annotations as Record<string, unknown>
    : {};
  for (const key of [TITLE_ANNOTATION, MODELPACK_PATH_ANNOTATION]) {
    const value = values[key];
    if (typeof value === "string" && value !== "") return value;
  }
  return mediaType === DOCKER_GGUF_MEDIA_TYPE ? DOCKER_GGUF_NAME : undefined;
}
