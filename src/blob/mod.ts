/**
 * The blob transfer library: upload, download (whole or by range), existence check and
 * cross-repository mount of single blobs in an OCI registry, with retries, resumable
 * digest-verified downloads, optional chunked upload and optional parallel pull.
 *
 * {@linkcode BlobClient} performs no authentication: pass an authenticated `transport` for the
 * registry origin; off-origin storage requests use `storageTransport` without credentials.
 *
 * @example Round trip
 * ```ts ignore
 * import { BlobClient } from "@ocipart/ocipart/blob";
 * import { sha256Digest } from "@ocipart/ocipart";
 * const client = new BlobClient({ plainHttp: true });
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * await client.push({ host: "127.0.0.1:5000", name: "demo/blob" }, digest, bytes.length, bytes);
 * const stream = await client.pull({ host: "127.0.0.1:5000", name: "demo/blob" }, digest);
 * console.log(await new Response(stream).text()); // "hello"
 * client.close();
 * ```
 *
 * @module
 */
export * from "./client.ts";
export type * from "./repository.ts";
export type { BlobProgressCallback, WireProgressCallback } from "./progress.ts";
export type { PushBody } from "./upload_source.ts";
export { statusCode } from "../errors/status_code.ts";
export { retryable, type RetryClassification } from "../errors/retryable.ts";
export type { Fetch } from "../transport/fetch.ts";
export type { RetryPolicy } from "../transport/retry.ts";
export type { Clock } from "../transport/clock.ts";
