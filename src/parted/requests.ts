/**
 * The six registry requests of the parted library, one method each, with their expected
 * statuses and header rules. No retry policy here: callers decide what an attempt is.
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { InvalidManifestError, NetworkError, ProtocolError } from "../errors/kinds.ts";
import { OciError } from "../errors/oci_error.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { isSha256Digest } from "../registry/digest.ts";
import { blobUrl, manifestUrl, uploadUrl } from "../registry/endpoints.ts";
import { resolveLocation, withDigestQuery } from "../registry/location.ts";
import {
  DOCKER_MANIFEST_LIST_MEDIA_TYPE,
  DOCKER_MANIFEST_MEDIA_TYPE,
  OCI_INDEX_MEDIA_TYPE,
  OCI_MANIFEST_MEDIA_TYPE,
} from "../registry/media_types.ts";
import { formatRange } from "../registry/range.ts";
import { sha256Digest } from "../registry/sha256.ts";
import { expectStatus, requireIdentityEncoding } from "../registry/status.ts";
import type { Fetch } from "../transport/fetch.ts";
import { followRedirects } from "../transport/follow_redirects.ts";
import { concatBytes } from "../registry/bytes.ts";

/** Blob reads follow at most this many redirects. */
export const BLOB_REDIRECT_HOPS = 3;

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

/** Where the requests go and through which transports. */
export interface PartedRequestsOptions {
  /** The registry origin, e.g. `https://ghcr.io/`. */
  origin: URL;
  /** The repository inside the registry. */
  repository: string;
  /** Transport for the registry's own origin; may authenticate. */
  fetch: Fetch;
  /** Transport for every other origin (blob redirects, off-origin upload sessions). */
  externalFetch: Fetch;
}

/** An opened upload session. */
export interface UploadSession {
  /** Where the PUT goes (never rendered). */
  readonly location: URL;
  /** True when the session lives on another origin than the registry. */
  readonly offOrigin: boolean;
}

/** A fetched manifest. */
export interface FetchedManifest {
  /** The exact bytes. */
  readonly bytes: Uint8Array;
  /** Their sha256 digest, verified against the expected digest. */
  readonly digest: string;
}

/**
 * The registry requests of one repository. Every method classifies failures: statuses through
 * `expectStatus`, transport failures that no layer classified as retryable `NetworkError`s, and
 * an abort as the signal's reason.
 *
 * @example
 * ```ts ignore
 * import { PartedRequests } from "./requests.ts";
 * const requests = new PartedRequests({
 *   origin: new URL("http://127.0.0.1:5000/"),
 *   repository: "org/data",
 *   fetch: (r) => fetch(r, { redirect: "manual" }),
 *   externalFetch: (r) => fetch(r, { redirect: "manual" }),
 * });
 * console.log(await requests.blobExists("sha256:" + "0".repeat(64)));
 * ```
 */
export class PartedRequests {
  readonly #origin: URL;
  readonly #repository: string;
  readonly #fetch: Fetch;
  readonly #external: Fetch;

  /** Creates the request layer of one repository. */
  constructor(options: PartedRequestsOptions) {
    this.#origin = options.origin;
    this.#repository = options.repository;
    this.#fetch = options.fetch;
    this.#external = options.externalFetch;
  }

  /** HEAD blob: true when present (200), false when absent (404). Follows redirects. */
  async blobExists(digest: string, signal?: AbortSignal): Promise<boolean> {
    const operation = "HEAD blob";
    const { response, offOrigin } = await this.#read(operation, "HEAD", digest, {}, signal);
    if (response.status === 404 && !offOrigin) {
      await response.body?.cancel().catch(() => {});
      return false;
    }
    await expectStatus(response, [200], operation, { offOrigin });
    await response.body?.cancel().catch(() => {});
    return true;
  }

  /** POST blob upload: opens a session and returns its validated location. */
  async openUpload(signal?: AbortSignal): Promise<UploadSession> {
    const operation = "POST blob upload";
    const url = uploadUrl(this.#origin, this.#repository);
    const response = await send(
      operation,
      this.#fetch,
      new Request(url, { method: "POST", headers: { "content-length": "0" }, signal }),
    );
    await expectStatus(response, [202], operation);
    await response.body?.cancel().catch(() => {});
    const location = resolveLocation(response.headers.get("location"), url, operation);
    return { location, offOrigin: location.origin !== this.#origin.origin };
  }

  /**
   * PUT blob upload: completes `session` with the whole blob in one request with an exact
   * Content-Length. An off-origin session goes through the external transport, and its error
   * bodies are dropped unread (they may echo the signed location).
   */
  async completeUpload(
    session: UploadSession,
    digest: string,
    size: number,
    body: ReadableStream<Uint8Array> | Uint8Array,
    signal?: AbortSignal,
  ): Promise<void> {
    const operation = "PUT blob upload";
    const init: RequestInit & { duplex?: "half" } = {
      method: "PUT",
      headers: { "content-type": "application/octet-stream", "content-length": String(size) },
      body: body as BodyInit,
      signal,
    };
    if (body instanceof ReadableStream) init.duplex = "half";
    const request = new Request(withDigestQuery(session.location, digest), init);
    const transport = session.offOrigin ? this.#external : this.#fetch;
    const response = await send(operation, transport, request);
    await expectStatus(response, [201, 204], operation, { offOrigin: session.offOrigin });
    await response.body?.cancel().catch(() => {});
  }

  /**
   * GET blob from byte `start` (a Range request when `start > 0`). Resolves with a 200 or 206
   * answer whose body is unread and identity-encoded; follows up to three redirects.
   */
  async getBlob(
    digest: string,
    start: number,
    signal?: AbortSignal,
  ): Promise<{ response: Response; offOrigin: boolean }> {
    const operation = "GET blob";
    const headers: Record<string, string> = {};
    if (start > 0) headers.range = formatRange(start);
    const followed = await this.#read(operation, "GET", digest, headers, signal);
    await expectStatus(followed.response, start > 0 ? [200, 206] : [200], operation, {
      offOrigin: followed.offOrigin,
    });
    requireIdentityEncoding(followed.response, operation);
    return { response: followed.response, offOrigin: followed.offOrigin };
  }

  /**
   * GET manifest by tag or digest; the bytes are verified against `expectedDigest` (the
   * caller's digest) or else against the digest the registry states for the tag. A mismatch is
   * `DigestMismatchError`.
   */
  async getManifest(
    reference: string,
    expectedDigest: string | undefined,
    signal?: AbortSignal,
  ): Promise<FetchedManifest> {
    const operation = "GET manifest";
    const response = await send(
      operation,
      this.#fetch,
      new Request(manifestUrl(this.#origin, this.#repository, reference), {
        headers: { accept: MANIFEST_ACCEPT, "accept-encoding": "identity" },
        signal,
      }),
    );
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

  /** PUT manifest at a tag or at its own digest. */
  async putManifest(reference: string, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
    const operation = "PUT manifest";
    const response = await send(
      operation,
      this.#fetch,
      new Request(manifestUrl(this.#origin, this.#repository, reference), {
        method: "PUT",
        headers: {
          "content-type": OCI_MANIFEST_MEDIA_TYPE,
          "content-length": String(bytes.byteLength),
        },
        body: bytes as BodyInit,
        signal,
      }),
    );
    await expectStatus(response, [201, 200, 204], operation);
    await response.body?.cancel().catch(() => {});
  }

  async #read(
    operation: string,
    method: "GET" | "HEAD",
    digest: string,
    headers: Record<string, string>,
    signal: AbortSignal | undefined,
  ): Promise<{ response: Response; offOrigin: boolean }> {
    try {
      const followed = await followRedirects({
        method,
        url: blobUrl(this.#origin, this.#repository, digest),
        headers: { ...headers, "accept-encoding": "identity" },
        signal,
      }, {
        origin: this.#origin,
        transport: this.#fetch,
        storageTransport: this.#external,
        operation,
        maxRedirects: BLOB_REDIRECT_HOPS,
      });
      // Any redirect target, even on the registry's origin, is classified like storage: its
      // 401/403/404/410 (an expired signature) is retryable and matches no sentinel.
      const offOrigin = followed.offOrigin || followed.redirects > 0;
      return { response: followed.response, offOrigin };
    } catch (err) {
      throw classifyTransportError(operation, err, signal);
    }
  }
}

async function send(operation: string, transport: Fetch, request: Request): Promise<Response> {
  try {
    return await transport(request);
  } catch (err) {
    throw classifyTransportError(operation, err, request.signal);
  }
}

/**
 * Keeps errors that are already classified; an abort becomes the signal's reason; anything
 * else a transport threw (a caller's fetch throws `TypeError`) is a retryable network failure
 * whose raw text stays in `cause`.
 */
export function classifyTransportError(
  operation: string,
  err: unknown,
  signal?: AbortSignal,
): unknown {
  if (signal?.aborted) return signal.reason;
  if (err instanceof OciError || isAbortError(err)) return err;
  return new NetworkError(`${operation}: request failed`, { cause: err });
}

async function readLimited(
  response: Response,
  limit: number,
  operation: string,
): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? "NaN");
  if (Number.isSafeInteger(declared) && declared > limit) {
    await response.body?.cancel().catch(() => {});
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
    if (err instanceof InvalidManifestError) throw err;
    throw err instanceof OciError || isAbortError(err)
      ? err
      : new NetworkError(`${operation}: body read failed`, { cause: err });
  }
  if (Number.isSafeInteger(declared) && declared !== length) {
    throw new ProtocolError(`${operation}: body length differs from Content-Length`, {
      retryable: true,
    });
  }
  return concatBytes(chunks, length);
}
