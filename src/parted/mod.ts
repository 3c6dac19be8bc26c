/**
 * The parted library: push one large file to an OCI registry as ordered fixed-size parts (one
 * blob each, listed in an OCI image manifest) and pull it back with parallel parts, resume,
 * verification and progress.
 *
 * The format's contract: {@linkcode PARTED_ARTIFACT_TYPE}, {@linkcode PARTED_LAYER_MEDIA_TYPE},
 * the annotation keys {@linkcode ANNOTATION_PART_SIZE}, {@linkcode ANNOTATION_FILE_DIGEST},
 * {@linkcode ANNOTATION_FILE_SIZE} and {@linkcode ANNOTATION_FORMAT_VERSION}, at most
 * {@linkcode MAX_PARTS} parts.
 *
 * @example Push, then pull by digest
 * ```ts ignore
 * import { fromFile, PartedClient, toFile } from "./mod.ts";
 * const client = new PartedClient();
 * const pushed = await client.push("ghcr.io/org/weights:v1", fromFile("./weights.bin"), {
 *   onProgress: (s) => console.log(s.phase, s.completedBytes, s.totalBytes),
 * });
 * await client.pull(`ghcr.io/org/weights@${pushed.digest}`, toFile("./weights-copy.bin"));
 * ```
 *
 * @module
 */
export * from "./client.ts";
export * from "./format.ts";
export { fromFile, type PushSource } from "./fs_source.ts";
export { PARTIAL_SUFFIX, type PullDestination, toFile } from "./fs_partial.ts";
export type { ProgressCallback, ProgressPhase, ProgressSnapshot } from "./progress.ts";
export { TooManyPartsError } from "./too_many_parts_error.ts";
export type { ExplicitCredential } from "./connection.ts";
export {
  decodeManifest,
  encodeManifest,
  type PartDescriptor,
  type PartedManifest,
} from "./manifest.ts";
export type { PartRange } from "./plan.ts";
export type { Descriptor } from "../registry/media_types.ts";
export { OciError } from "../errors/oci_error.ts";
export type { Fetch } from "../transport/fetch.ts";
export type { Clock } from "../transport/clock.ts";
export type { RetryPolicy } from "../transport/retry.ts";
export type { Credential, CredentialSource } from "../auth/credential.ts";
