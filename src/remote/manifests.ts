/**
 * Manifest requests: GET with a size limit and digest verification, PUT at a tag or digest.
 *
 * @module
 */
import { InvalidManifestError, ProtocolError } from "../errors/kinds.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { concatBytes } from "../registry/bytes.ts";
import { isSha256Digest } from "../registry/digest.ts";
import { discard } from "../registry/discard.ts";
import { manifestUrl } from "../registry/endpoints.ts";
import {
  DOCKER_MANIFEST_LIST_MEDIA_TYPE,
  DOCKER_MANIFEST_MEDIA_TYPE,
  OCI_INDEX_MEDIA_TYPE,
  OCI_MANIFEST_MEDIA_TYPE,
} from "../registry/media_types.ts";
import { sha256Digest } from "../hashing/sha256.ts";
import { expectStatus, requireIdentityEncoding } from "../registry/status.ts";
import { readSources, tagSources } from "./mirror_reads.ts";
import type { RemoteRepository } from "./repository.ts";

/** The largest manifest accepted (the registry's own cap); 4096 parts take about 635 KB. */
export const MANIFEST_SIZE_LIMIT: number = 4 * 1024 * 1024;

// The OCI manifest first; the others only so that an index or a Docker image is recognised as
// another kind instead of answering 404 (Distribution needs its type in Accept).
const MANIFEST_ACCEPT = [
  OCI_MANIFEST_MEDIA_TYPE,
  `${OCI_INDEX_MEDIA_TYPE};q=0.5`,
  `${DOCKER_MANIFEST_MEDIA_TYPE};q=0.5`,
  `${DOCKER_MANIFEST_LIST_MEDIA_TYPE};q=0.5`,
].join(", ");

/** A fetched manifest. */
export interface FetchedManifest {
  /** The exact bytes. */
  readonly bytes: Uint8Array;
  /** Their sha256 digest, verified against the expected digest. */
  readonly digest: string;
}

/**
 * GET manifest by tag or digest; the bytes are verified against `expectedDigest` (the caller's
 * digest) or else against the digest the registry states for the tag. A mismatch is
 * `DigestMismatchError`; more than {@linkcode MANIFEST_SIZE_LIMIT} bytes is
 * `InvalidManifestError`. A digest is read from the mirrors first; a tag is the registry's,
 * a mirror answering for it only when the registry cannot be reached (`mirror_reads.ts`).
 *
 * @example Writing a manifest at a tag and reading it back
 * ```ts
 * import {
 *   EMPTY_CONFIG_BYTES,
 *   EMPTY_CONFIG_DESCRIPTOR,
 *   OCI_MANIFEST_MEDIA_TYPE,
 * } from "../registry/media_types.ts";
 * import { getManifest, putManifest } from "./manifests.ts";
 * import { completeUpload, openUpload } from "./uploads.ts";
 * import { RegistryHandler } from "../testing/registry_handler.ts";
 * import { RemoteRepository } from "./repository.ts";
 * import { DEFAULT_POLICY } from "./policy.ts";
 * const registry = new RegistryHandler();
 * const repo = new RemoteRepository({
 *   origin: new URL("http://127.0.0.1:5000/"),
 *   name: "demo/blob",
 *   transport: (request) => registry.handle(request),
 *   storageTransport: (request) => registry.handle(request),
 *   redirects: DEFAULT_POLICY.redirects,
 * });
 * const config = EMPTY_CONFIG_DESCRIPTOR;
 * const session = await openUpload(repo, undefined);
 * await completeUpload(repo, session, config.digest, config.size, {
 *   make: () => EMPTY_CONFIG_BYTES.slice(),
 *   replayable: true,
 * }, undefined);
 * const bytes = new TextEncoder().encode(JSON.stringify({
 *   schemaVersion: 2,
 *   mediaType: OCI_MANIFEST_MEDIA_TYPE,
 *   config: { ...config },
 *   layers: [],
 * }));
 * await putManifest(repo, "v1", bytes, undefined);
 * const fetched = await getManifest(repo, "v1", undefined, undefined);
 * console.log(fetched.bytes.length === bytes.length); // true
 * ```
 */
export async function getManifest(
  repo: RemoteRepository,
  reference: string,
  expectedDigest: string | undefined,
  signal: AbortSignal | undefined,
): Promise<FetchedManifest> {
  const digest = expectedDigest ?? (isSha256Digest(reference) ? reference : undefined);
  if (digest === undefined) return await getTaggedManifest(repo, reference, signal);
  for (const source of readSources(repo, { digest })) {
    if (source === repo) break;
    try {
      return await getManifestFrom(source, reference, expectedDigest, signal);
    } catch (err) {
      repo.mirrors!.dropped(source, err, signal);
    }
  }
  return await getManifestFrom(repo, reference, expectedDigest, signal);
}

/**
 * A manifest by tag: the registry defines the tag; a mirror answers only when the registry gave
 * no answer at all (see `tagSources`), and is then named. Every mirror failing leaves the
 * registry's failure as the one reported.
 */
async function getTaggedManifest(
  repo: RemoteRepository,
  tag: string,
  signal: AbortSignal | undefined,
): Promise<FetchedManifest> {
  try {
    return await getManifestFrom(repo, tag, undefined, signal);
  } catch (err) {
    for (const source of tagSources(repo, tag, err, signal)) {
      try {
        const fetched = await getManifestFrom(source, tag, undefined, signal);
        repo.mirrors!.resolvedTag(source, tag);
        return fetched;
      } catch (mirrorErr) {
        repo.mirrors!.dropped(source, mirrorErr, signal);
      }
    }
    throw err;
  }
}

/** {@linkcode getManifest} from one host: the registry or one of its mirrors. */
async function getManifestFrom(
  repo: RemoteRepository,
  reference: string,
  expectedDigest: string | undefined,
  signal: AbortSignal | undefined,
): Promise<FetchedManifest> {
  const operation = "GET manifest";
  const { response } = await repo.send({
    method: "GET",
    url: manifestUrl(repo.origin, repo.name, reference),
    headers: { accept: MANIFEST_ACCEPT, "accept-encoding": "identity" },
    signal,
  }, operation);
  await expectStatus(response, [200], operation);
  requireIdentityEncoding(response, operation);
  const bytes = await readLimited(response, MANIFEST_SIZE_LIMIT, operation);
  const digest = sha256Digest(bytes);
  const stated = response.headers.get("docker-content-digest")?.trim();
  const expected = expectedDigest ??
    (stated !== undefined && isSha256Digest(stated) ? stated : undefined);
  if (expected !== undefined && expected !== digest) {
    throw new DigestMismatchError("manifest");
  }
  return { bytes, digest };
}

/**
 * PUT manifest at a tag or at its own digest.
 *
 * @example Writing a manifest at a tag
 * ```ts
 * import {
 *   EMPTY_CONFIG_BYTES,
 *   EMPTY_CONFIG_DESCRIPTOR,
 *   OCI_MANIFEST_MEDIA_TYPE,
 * } from "../registry/media_types.ts";
 * import { putManifest } from "./manifests.ts";
 * import { completeUpload, openUpload } from "./uploads.ts";
 * import { RegistryHandler } from "../testing/registry_handler.ts";
 * import { RemoteRepository } from "./repository.ts";
 * import { DEFAULT_POLICY } from "./policy.ts";
 * const registry = new RegistryHandler();
 * const repo = new RemoteRepository({
 *   origin: new URL("http://127.0.0.1:5000/"),
 *   name: "demo/blob",
 *   transport: (request) => registry.handle(request),
 *   storageTransport: (request) => registry.handle(request),
 *   redirects: DEFAULT_POLICY.redirects,
 * });
 * const config = EMPTY_CONFIG_DESCRIPTOR;
 * const session = await openUpload(repo, undefined);
 * await completeUpload(repo, session, config.digest, config.size, {
 *   make: () => EMPTY_CONFIG_BYTES.slice(),
 *   replayable: true,
 * }, undefined);
 * const bytes = new TextEncoder().encode(JSON.stringify({
 *   schemaVersion: 2,
 *   mediaType: OCI_MANIFEST_MEDIA_TYPE,
 *   config: { ...config },
 *   layers: [],
 * }));
 * await putManifest(repo, "v1", bytes, undefined);
 * ```
 */
export async function putManifest(
  repo: RemoteRepository,
  reference: string,
  bytes: Uint8Array,
  signal: AbortSignal | undefined,
  mediaType: string = OCI_MANIFEST_MEDIA_TYPE,
): Promise<void> {
  const operation = "PUT manifest";
  const { response } = await repo.send({
    method: "PUT",
    url: manifestUrl(repo.origin, repo.name, reference),
    headers: { "content-type": mediaType, "content-length": String(bytes.byteLength) },
    body: () => bytes as BodyInit,
    signal,
  }, operation);
  await expectStatus(response, [201, 200, 204], operation);
  await discard(response);
}

async function readLimited(
  response: Response,
  limit: number,
  operation: string,
): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? "NaN");
  if (Number.isSafeInteger(declared) && declared > limit) {
    await discard(response);
    throw new InvalidManifestError("larger than the manifest size limit");
  }
  if (response.body === null) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let length = 0;
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      length += value.byteLength;
      if (length > limit) {
        await reader.cancel().catch(() => {});
        throw new InvalidManifestError("larger than the manifest size limit");
      }
      chunks.push(value);
    }
  } catch (err) {
    throw asNetworkFailure(operation, err, undefined, "body read failed");
  }
  if (Number.isSafeInteger(declared) && declared !== length) {
    throw new ProtocolError(`${operation}: body length differs from Content-Length`, {
      retryable: true,
    });
  }
  return concatBytes(chunks, length);
}
