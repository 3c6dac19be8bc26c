/**
 * Distribution-specification facts shared by both libraries, with no I/O policy: reference
 * parsing ({@linkcode parseReference}), digests and an incremental {@linkcode Sha256}, media
 * types and the OCI empty config descriptor, endpoint URL builders, expected-status checks with
 * bounded error bodies ({@linkcode expectStatus}) and the listed error codes
 * (docs/protocol.md#errors-and-exit-codes), Range and Content-Range parsing, and upload Location
 * validation ({@linkcode resolveLocation}, {@linkcode withDigestQuery}).
 *
 * @example Building the URL of a referenced manifest
 * ```ts
 * import { manifestUrl, parseReference, registryOrigin } from "./mod.ts";
 * const ref = parseReference("localhost:5000/models/llama:v1");
 * const url = manifestUrl(registryOrigin(ref.registry, { plainHttp: true }), ref.repository, ref.tag!);
 * console.log(url.href); // "http://localhost:5000/v2/models/llama/manifests/v1"
 * ```
 *
 * @module
 */
export * from "./reference.ts";
export * from "./digest.ts";
export * from "./sha256.ts";
export * from "./media_types.ts";
export * from "./endpoints.ts";
export * from "./status.ts";
export * from "./error_codes.ts";
export * from "./range.ts";
export * from "./location.ts";
export * from "./retry_after.ts";
export * from "./bytes.ts";
