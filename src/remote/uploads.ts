/**
 * Blob upload requests: open a session (POST, optionally as a mount), complete it with one PUT
 * streamed with an exact Content-Length, send PATCH chunks, and cancel it (DELETE).
 *
 * @module
 */
import { ProtocolError } from "../errors/kinds.ts";
import { discard } from "../registry/discard.ts";
import { type UploadQuery, uploadUrl } from "../registry/endpoints.ts";
import { resolveLocation, withDigestQuery } from "../registry/location.ts";
import { parseUploadRange } from "../registry/range.ts";
import { expectStatus } from "../registry/status.ts";
import type { RemoteRepository, RoutedResponse } from "./repository.ts";

/** Upper bound of the best-effort DELETE of an abandoned session. */
export const CLEANUP_TIMEOUT_MS = 5_000;

const OCTET_STREAM = "application/octet-stream";

/** An opened upload session. */
export interface UploadSession {
  /** Where the next request of the session goes (never rendered). */
  readonly location: URL;
  /** The `OCI-Chunk-Min-Length` the registry asked for, or 0. */
  readonly minimumChunk: number;
}

/** A request body made once per hop (again for a followed write redirect). */
export interface UploadBody {
  /** Makes the body of one hop. */
  make: () => BodyInit | null;
  /** False when the body can be made only once. */
  replayable: boolean;
}

/**
 * POST blob upload: opens a session and returns its validated location.
 *
 * @example Opening a session and completing it with the bytes
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
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
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * const session = await openUpload(repo, undefined);
 * await completeUpload(repo, session, digest, bytes.length, {
 *   make: () => bytes,
 *   replayable: true,
 * }, undefined);
 * console.log(await repo.exists(digest)); // true
 * ```
 */
export async function openUpload(
  repo: RemoteRepository,
  signal: AbortSignal | undefined,
): Promise<UploadSession> {
  const operation = "POST blob upload";
  const { response, url, offOrigin } = await post(repo, operation, {}, signal);
  await expectStatus(response, [202], operation, { offOrigin });
  await discard(response);
  const location = resolveLocation(response.headers.get("location"), url, operation);
  return { location, minimumChunk: chunkMinimum(response) };
}

/**
 * POST blob mount: asks the registry to mount `digest` from repository `from`. True when it
 * did (201); false when it declined (202 with a session, which is cancelled).
 *
 * @example Mounting a blob from another repository
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
 * import { mountBlob } from "./uploads.ts";
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
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * console.log(await mountBlob(repo, digest, "demo/absent", undefined)); // false
 * ```
 */
export async function mountBlob(
  repo: RemoteRepository,
  digest: string,
  from: string,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const operation = "POST blob mount";
  const { response, url, offOrigin } = await post(repo, operation, { mount: digest, from }, signal);
  if (response.status === 201) {
    await discard(response);
    return true;
  }
  await expectStatus(response, [202], operation, { offOrigin });
  await discard(response);
  // Declined: the registry opened a session instead; it is not continued.
  let session: URL | undefined;
  try {
    session = resolveLocation(response.headers.get("location"), url, operation);
  } catch {
    // A session that cannot be addressed cannot be cleaned up either.
  }
  if (session !== undefined) await cancelUpload(repo, session, signal);
  return false;
}

/**
 * PUT blob upload: completes `session` with the digest; `size` bytes of `body` (none when
 * omitted: the chunks were PATCHed) with an exact Content-Length.
 *
 * @example Completing a session with the whole blob
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
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
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * const session = await openUpload(repo, undefined);
 * await completeUpload(repo, session, digest, bytes.length, {
 *   make: () => bytes,
 *   replayable: true,
 * }, undefined);
 * ```
 */
export async function completeUpload(
  repo: RemoteRepository,
  session: UploadSession,
  digest: string,
  size: number,
  body: UploadBody | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  const operation = "PUT blob upload";
  const { response, offOrigin } = await repo.send({
    method: "PUT",
    url: withDigestQuery(session.location, digest),
    headers: { "content-type": OCTET_STREAM, "content-length": String(body ? size : 0) },
    ...(body === undefined ? {} : { body: body.make, replayable: body.replayable }),
    signal,
  }, operation);
  await expectStatus(response, [201, 204], operation, { offOrigin });
  await discard(response);
}

/**
 * PATCH one chunk of `length` bytes at `start` into `session`; checks the acknowledged range
 * and returns the session to continue (a new Location when the registry gave one).
 *
 * @example Sending the blob as one chunk, then committing
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
 * import { completeUpload, openUpload, patchUpload } from "./uploads.ts";
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
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * let session = await openUpload(repo, undefined);
 * session = await patchUpload(repo, session, 0, bytes.length, {
 *   make: () => bytes,
 *   replayable: true,
 * }, undefined);
 * await completeUpload(repo, session, digest, bytes.length, undefined, undefined);
 * console.log(await repo.exists(digest)); // true
 * ```
 */
export async function patchUpload(
  repo: RemoteRepository,
  session: UploadSession,
  start: number,
  length: number,
  body: UploadBody,
  signal: AbortSignal | undefined,
): Promise<UploadSession> {
  const operation = "PATCH blob upload";
  const end = start + length - 1;
  const { response, url, offOrigin } = await repo.send({
    method: "PATCH",
    url: session.location,
    headers: {
      "content-type": OCTET_STREAM,
      "content-length": String(length),
      "content-range": `${start}-${end}`,
    },
    body: body.make,
    replayable: body.replayable,
    signal,
  }, operation);
  await expectStatus(response, [202], operation, { offOrigin });
  await discard(response);
  const acknowledged = parseUploadRange(response.headers.get("range"));
  if (acknowledged.start !== 0 || acknowledged.end !== end) {
    throw new ProtocolError(`${operation}: acknowledged range did not advance by the chunk`);
  }
  const location = response.headers.has("location")
    ? resolveLocation(response.headers.get("location"), url, operation)
    : session.location;
  return { location, minimumChunk: Math.max(session.minimumChunk, chunkMinimum(response)) };
}

/**
 * DELETEs an abandoned session: best effort, bounded by 5 s, skipped when the caller's signal
 * ended, and never throwing.
 *
 * @example Abandoning a session
 * ```ts
 * import { cancelUpload, openUpload } from "./uploads.ts";
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
 * const session = await openUpload(repo, undefined);
 * await cancelUpload(repo, session.location, undefined);
 * ```
 */
export async function cancelUpload(
  repo: RemoteRepository,
  location: URL,
  callerSignal: AbortSignal | undefined,
): Promise<void> {
  if (callerSignal?.aborted) return;
  const timeout = AbortSignal.timeout(CLEANUP_TIMEOUT_MS);
  const signal = callerSignal === undefined ? timeout : AbortSignal.any([callerSignal, timeout]);
  try {
    const { response } = await repo.send(
      { method: "DELETE", url: location, signal },
      "DELETE blob upload",
    );
    await discard(response);
  } catch {
    // Best effort: the original outcome stays what the caller sees.
  }
}

/** The bodyless POST to the repository's upload endpoint. */
function post(
  repo: RemoteRepository,
  operation: string,
  query: UploadQuery,
  signal: AbortSignal | undefined,
): Promise<RoutedResponse> {
  return repo.send({
    method: "POST",
    url: uploadUrl(repo.origin, repo.name, query),
    headers: { "content-length": "0" },
    signal,
  }, operation);
}

/** The `OCI-Chunk-Min-Length` a registry asks for, or 0. */
function chunkMinimum(response: Response): number {
  const value = Number(response.headers.get("oci-chunk-min-length") ?? "0");
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}
