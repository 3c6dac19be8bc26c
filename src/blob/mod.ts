/**
 * The blob transfer library: upload, download (whole or by range), existence check and
 * cross-repository mount of single blobs in an OCI registry, with retries, resumable
 * digest-verified downloads, optional chunked upload and optional parallel pull.
 *
 * {@linkcode BlobClient} performs no authentication: pass an authenticated `transport` for the
 * registry origin; off-origin storage requests use `storageTransport` without credentials.
 *
 * @example Round trip through the embedded testing registry
 * ```ts
 * import { BlobClient } from "@ocipart/ocipart/blob";
 * import { sha256Digest } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 *
 * await using registry = await startMemoryRegistry();
 * using client = new BlobClient({ plainHttp: true });
 * const repository = { host: registry.host, name: "demo/blob" };
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * await client.push(repository, digest, bytes.length, bytes);
 * const stream = await client.pull(repository, digest);
 * console.log(await new Response(stream).text()); // "hello"
 * ```
 *
 * @module
 */
export {
  type BlobCallOptions,
  BlobClient,
  type BlobClientOptions,
  type BlobPullOptions,
  type BlobPullRangeOptions,
  type BlobPushOptions,
} from "./client.ts";
export type { Repository } from "./repository.ts";
export type { MirrorOptions, MirrorTable, PullFromMirror } from "../remote/mirror_table.ts";
export type { BlobProgressCallback, WireProgressCallback } from "./progress.ts";
export type { ProgressPhase, ProgressSnapshot } from "../remote/progress_snapshot.ts";
export type { PushBody } from "./upload_source.ts";
export type { Fetch } from "../transport/fetch.ts";
export type { ClientOptions } from "../remote/session.ts";
export type { Credential, CredentialSource, ExplicitCredential } from "../auth/credential.ts";
export type { RetryPolicy } from "../remote/retry.ts";
export type { Clock } from "../transport/clock.ts";
