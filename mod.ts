/**
 * Move very large files and blobs through OCI registries.
 *
 * The root export holds what a program calls: {@linkcode PartedClient} (one large file as
 * ordered parts, with {@linkcode fromFile} and {@linkcode toFile}), {@linkcode BlobClient}
 * (single blobs), {@linkcode createAuthFetch} (an authenticated {@linkcode Fetch} for the blob
 * client), {@linkcode sha256Digest}, and the error classes with {@linkcode findError},
 * {@linkcode statusCode} and {@linkcode retryable}. Building blocks live behind the subpath
 * exports `./parted`, `./blob`, `./auth`, `./errors`, `./transport` and `./testing`.
 *
 * @example Round trip of a blob through the embedded testing registry
 * ```ts
 * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 *
 * await using registry = await startMemoryRegistry();
 * using client = new BlobClient({ plainHttp: true });
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * await client.push(`${registry.host}/demo/blob`, digest, bytes.length, bytes);
 * const stream = await client.pull(`${registry.host}/demo/blob`, digest);
 * console.log(await new Response(stream).text()); // "hello"
 * ```
 *
 * @example Classifying an error
 * ```ts
 * import { findError, NotFoundError } from "@ocipart/ocipart";
 * const err: unknown = new Error("pull", { cause: new NotFoundError("GET manifest: status 404") });
 * console.log(findError(err, NotFoundError) !== undefined); // true
 * ```
 *
 * @module
 */

// The parted client and what its calls take and return.
export {
  type CopyOptions,
  type InspectOptions,
  type ListTagsOptions,
  PartedClient,
  type PartedClientOptions,
  type PullOptions,
  type PushOptions,
  type VerifyOptions,
} from "./src/parted/client.ts";
export type { CopyResult } from "./src/parted/copy.ts";
export type { PullResult } from "./src/parted/pull.ts";
export type { ArtifactDescription, PartInfo } from "./src/parted/inspect.ts";
export type { PartCheck, VerifyReport } from "./src/parted/verify.ts";
export { fromFile, type PushSource } from "./src/parted/fs_source.ts";
export {
  fromStream,
  type FromStreamOptions,
  type StreamDestination,
  type StreamSource,
  toStream,
  type ToStreamOptions,
} from "./src/parted/stream_ends.ts";
export type { StreamPullResult } from "./src/parted/stream_pull.ts";
export type { ArtifactReader, OpenOptions, ReadOptions } from "./src/parted/artifact_reader.ts";
export {
  type DirectoryOptions,
  type PullDestination,
  toDirectory,
  toFile,
} from "./src/parted/fs_partial.ts";
export type {
  PartEvent,
  ProgressCallback,
  ProgressPhase,
  ProgressSnapshot,
} from "./src/parted/progress.ts";
export type { RegistrySettings } from "./src/remote/registry_settings.ts";
export type { Descriptor } from "./src/registry/media_types.ts";
export type { RateLimit } from "./src/transport/layers/rate_limit.ts";

// The blob client and what its calls take.
export {
  type BlobCallOptions,
  BlobClient,
  type BlobClientOptions,
  type BlobPullOptions,
  type BlobPullRangeOptions,
  type BlobPushOptions,
} from "./src/blob/client.ts";
export type { Repository } from "./src/blob/repository.ts";
export type { BlobProgressCallback, WireProgressCallback } from "./src/blob/progress.ts";
export type { PushBody } from "./src/blob/upload_source.ts";

// Shared by both clients' options.
export type { ClientOptions } from "./src/remote/session.ts";
export type { Fetch } from "./src/transport/fetch.ts";
export type { RetryPolicy } from "./src/remote/retry.ts";
export type { Clock } from "./src/transport/clock.ts";
export type { Credential, CredentialSource, ExplicitCredential } from "./src/auth/credential.ts";
export { type AuthFetchOptions, createAuthFetch } from "./src/auth/create_auth_fetch.ts";
export type { RegistryAuthenticatorOptions } from "./src/auth/authenticator.ts";
export { sha256Digest } from "./src/hashing/sha256.ts";
export { VERSION } from "./src/transport/layers/user_agent.ts";

// Errors: the sentinels a caller matches, and the helpers that inspect any error.
export { OciError } from "./src/errors/oci_error.ts";
export {
  DigestMismatchError,
  NotFoundError,
  NotPartedArtifactError,
  PartTooLargeError,
  SentinelError,
  TooLargeError,
  UnauthorizedError,
} from "./src/errors/sentinels.ts";
export {
  DestinationExistsError,
  type ExistingEntry,
} from "./src/parted/destination_exists_error.ts";
export { type ErrorClass, findError } from "./src/errors/find_error.ts";
export { statusCode } from "./src/errors/status_code.ts";
export { retryable, type RetryClassification } from "./src/errors/retryable.ts";
