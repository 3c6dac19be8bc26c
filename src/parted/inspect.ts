/**
 * Describing a parted artifact from its manifest alone, without downloading a part.
 *
 * @module
 */
import type { Connection } from "./connection.ts";
import type { TransferJob } from "./transfer_job.ts";
import { resolveManifest } from "./resolve_manifest.ts";

/**
 * One part of an artifact, as its manifest lists it.
 *
 * @example A part
 * ```ts
 * import type { PartInfo } from "@ocipart/ocipart";
 * const part: PartInfo = { index: 0, offset: 0, size: 5, digest: "sha256:…" };
 * console.log(part.index); // 0
 * ```
 */
export interface PartInfo {
  /** Position in the file, from 0. */
  readonly index: number;
  /** Byte offset of the part in the file. */
  readonly offset: number;
  /** Size in bytes. */
  readonly size: number;
  /** The part's sha256 digest, `sha256:<hex>`. */
  readonly digest: string;
}

/**
 * What {@linkcode PartedClient.inspect} tells about an artifact.
 *
 * @example Summarising a description
 * ```ts
 * import type { ArtifactDescription } from "@ocipart/ocipart";
 * const describe = (a: ArtifactDescription) => `${a.title ?? "(untitled)"}: ${a.parts.length} parts`;
 * console.log(typeof describe); // "function"
 * ```
 */
export interface ArtifactDescription {
  /** The manifest's digest. */
  readonly manifestDigest: string;
  /**
   * The file name recorded in the `org.opencontainers.image.title` annotation, if any. Chosen
   * by whoever pushed: it may hold control or bidirectional characters, so escape it before
   * printing it (a pull into a directory refuses such a name, see `isPlainFileName`).
   */
  readonly title: string | undefined;
  /**
   * The manifest's other annotations (those a pusher added; not the format's own keys or the
   * title), in key order. Keys and values are as untrusted as the title.
   */
  readonly annotations: Readonly<Record<string, string>>;
  /** The file size in bytes. */
  readonly fileSize: number;
  /** The whole file's sha256 digest. */
  readonly fileDigest: string;
  /** The part size the file was split with. */
  readonly partSize: number;
  /** The parts in file order. */
  readonly parts: readonly PartInfo[];
}

/**
 * Resolves the manifest of `job.reference` and describes the artifact.
 *
 * @example Inspecting (internal)
 * ```ts ignore
 * import { runInspect } from "./inspect.ts";
 * const description = await runInspect(job, () => connect(stack, reference));
 * ```
 */
export async function runInspect(
  job: TransferJob,
  connect: () => Connection,
): Promise<ArtifactDescription> {
  job.signal?.throwIfAborted();
  const { manifest, digest } = await resolveManifest(connect(), job.reference, job);
  return {
    manifestDigest: digest,
    // An empty title names no file.
    title: manifest.title === "" ? undefined : manifest.title,
    fileSize: manifest.fileSize,
    fileDigest: manifest.fileDigest,
    partSize: manifest.partSize,
    annotations: manifest.annotations,
    parts: manifest.parts.map(({ index, offset, size, digest }) => ({
      index,
      offset,
      size,
      digest,
    })),
  };
}
