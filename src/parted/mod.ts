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
 * @example Push a file, then pull it back by digest (embedded testing registry)
 * ```ts
 * import { fromFile, PartedClient, toFile } from "@ocipart/ocipart/parted";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 *
 * await using registry = await startMemoryRegistry();
 * const dir = await Deno.makeTempDir();
 * await Deno.writeFile(`${dir}/weights.bin`, new Uint8Array(3 * 1024 * 1024).fill(7));
 *
 * using client = new PartedClient({ plainHttp: true });
 * const source = fromFile(`${dir}/weights.bin`);
 * const pushed = await client.push(`${registry.host}/org/weights:v1`, source, {
 *   partSize: 1024 * 1024, // three parts
 *   onProgress: (s) => s.phase === "done" && console.log(s.completedBytes, s.totalBytes),
 * });
 * await client.pull(`${registry.host}/org/weights@${pushed.digest}`, toFile(`${dir}/copy.bin`));
 * console.log((await Deno.stat(`${dir}/copy.bin`)).size); // 3145728
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */
export {
  type CopyOptions,
  type InspectOptions,
  type ListTagsOptions,
  PartedClient,
  type PartedClientOptions,
  type PullOptions,
  type PushOptions,
  type VerifyOptions,
} from "./client.ts";
export type { CopyResult } from "./copy.ts";
export type { PullResult } from "./pull.ts";
export type { ArtifactDescription, PartInfo } from "./inspect.ts";
export type { PartCheck, VerifyReport } from "./verify.ts";
export * from "./format.ts";
export { fromFile, type PushSource } from "./fs_source.ts";
export {
  fromStream,
  type FromStreamOptions,
  type StreamDestination,
  type StreamSource,
  toStream,
  type ToStreamOptions,
} from "./stream_ends.ts";
export type { StreamPullResult } from "./stream_pull.ts";
export type { ArtifactReader, OpenOptions, ReadOptions } from "./artifact_reader.ts";
export {
  type DirectoryOptions,
  PARTIAL_SUFFIX,
  type PullDestination,
  toDirectory,
  toFile,
} from "./fs_partial.ts";
export { DestinationExistsError, type ExistingEntry } from "./destination_exists_error.ts";
export type { PartEvent, ProgressCallback, ProgressPhase, ProgressSnapshot } from "./progress.ts";
export { TooManyPartsError } from "./too_many_parts_error.ts";
export { NoFileNameError, type NoFileNameReason } from "./no_file_name_error.ts";
export { PartialInUseError } from "./fs_guard.ts";
export { errnoCode, errnoMeaning } from "./fs_reason.ts";
export { PartSizeError, type PartSizeFacts, type PartSizeLimit } from "./part_size_error.ts";
export type { ExplicitCredential } from "./options.ts";
export {
  isMirrorLocation,
  mirrorHost,
  type MirrorOptions,
  type MirrorTable,
  type PullFromMirror,
} from "../remote/mirror_table.ts";
export { parseReference, type Reference, REFERENCE_RULES } from "../registry/reference.ts";
export { registryOrigin, type RegistryOriginOptions } from "../registry/endpoints.ts";
export { wholeBinaryUnit } from "../registry/bytes.ts";
export {
  DISTRIBUTION_ERROR_CODES,
  type DistributionErrorCode,
  distributionErrorCodes,
} from "../registry/error_codes.ts";
export {
  hasUnsafeText,
  jsonText,
  replaceUnsafeText,
  terminalText,
} from "../registry/untrusted_text.ts";
export {
  parseRegistriesConf,
  readRegistriesConf,
  type RegistriesConfLocation,
  registriesConfLocation,
  type RegistriesConfLocationOptions,
} from "./registries_conf.ts";
export type { RegistrySettings } from "../remote/registry_settings.ts";
export type { Descriptor } from "../registry/media_types.ts";
export { OciError } from "../errors/oci_error.ts";
export type { Fetch } from "../transport/fetch.ts";
export type { Clock } from "../transport/clock.ts";
export type { RetryPolicy } from "../remote/retry.ts";
export type { Credential, CredentialSource } from "../auth/credential.ts";
