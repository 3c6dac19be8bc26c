/**
 * URL builders for the distribution API endpoints, and the inverse for servers.
 *
 * @module
 */
import { parseDigest } from "./digest.ts";
import { isRegistryHost, isRepositoryName, isTag } from "./reference.ts";

/**
 * Options of {@linkcode registryOrigin}.
 *
 * @example A local registry over plain HTTP
 * ```ts
 * import { registryOrigin, type RegistryOriginOptions } from "@ocipart/ocipart/parted";
 * const options: RegistryOriginOptions = { plainHttp: true };
 * console.log(registryOrigin("localhost:5000", options).href); // "http://localhost:5000/"
 * ```
 */
export interface RegistryOriginOptions {
  /** Use `http://` instead of `https://` (test and local registries). */
  plainHttp?: boolean;
}

/** Query parameters of {@linkcode uploadUrl}: a cross-repository mount. */
export interface UploadQuery {
  /** The digest of the blob to mount. */
  mount?: string;
  /** The repository to mount the blob from. */
  from?: string;
}

/** What {@linkcode parseRegistryPath} recognises in a request path. */
export interface RegistryPath {
  /** The repository the path names. */
  repository: string;
  /** The endpoint family. */
  kind: "blobs" | "uploads" | "manifests" | "tags";
  /**
   * The last path component: the digest for `blobs`, the tag or digest for `manifests`, the
   * session identifier for `uploads` (`""` when opening a session); absent for `tags`.
   */
  reference?: string;
}

function checkRepository(repository: string): void {
  if (!isRepositoryName(repository)) throw new TypeError("invalid repository name");
}

function checkDigest(digest: string): void {
  parseDigest(digest);
}

function v2(origin: URL, path: string): URL {
  return new URL(`/v2/${path}`, origin.origin);
}

/**
 * Returns the origin URL of a registry: `https://<registry>/`, or `http://` with `plainHttp`.
 *
 * @throws {TypeError} `registry` is not a host with an optional port.
 *
 * @example Building an origin
 * ```ts
 * import { registryOrigin } from "@ocipart/ocipart/parted";
 * console.log(registryOrigin("ghcr.io").href); // "https://ghcr.io/"
 * console.log(registryOrigin("localhost:5000", { plainHttp: true }).href);
 * // "http://localhost:5000/"
 * ```
 */
export function registryOrigin(registry: string, options: RegistryOriginOptions = {}): URL {
  if (!isRegistryHost(registry)) throw new TypeError("invalid registry host");
  return new URL(`${options.plainHttp ? "http" : "https"}://${registry}/`);
}

/**
 * Returns `/v2/<repository>/blobs/<digest>` on `origin` (HEAD, GET).
 *
 * @throws {TypeError} The repository or digest is invalid.
 *
 * @example Building a blob URL
 * ```ts
 * import { blobUrl, registryOrigin } from "./endpoints.ts";
 * const url = blobUrl(registryOrigin("ghcr.io"), "org/data", "sha256:" + "0".repeat(64));
 * console.log(url.pathname.startsWith("/v2/org/data/blobs/sha256:")); // true
 * ```
 */
export function blobUrl(origin: URL, repository: string, digest: string): URL {
  checkRepository(repository);
  checkDigest(digest);
  return v2(origin, `${repository}/blobs/${digest}`);
}

/**
 * Returns `/v2/<repository>/blobs/uploads/` on `origin` (POST opens a session), with the
 * `mount` and `from` parameters of a cross-repository mount when given.
 *
 * @throws {TypeError} The repository, mount digest or source repository is invalid.
 *
 * @example Opening an upload, then a mount
 * ```ts
 * import { registryOrigin, uploadUrl } from "./endpoints.ts";
 * const origin = registryOrigin("ghcr.io");
 * console.log(uploadUrl(origin, "org/data").pathname); // "/v2/org/data/blobs/uploads/"
 * const mount = uploadUrl(origin, "org/data", { mount: "sha256:" + "0".repeat(64), from: "org/a" });
 * console.log(mount.searchParams.get("from")); // "org/a"
 * ```
 */
export function uploadUrl(origin: URL, repository: string, query: UploadQuery = {}): URL {
  checkRepository(repository);
  const url = v2(origin, `${repository}/blobs/uploads/`);
  if (query.mount !== undefined) {
    checkDigest(query.mount);
    url.searchParams.set("mount", query.mount);
  }
  if (query.from !== undefined) {
    checkRepository(query.from);
    url.searchParams.set("from", query.from);
  }
  return url;
}

/**
 * Returns `/v2/<repository>/manifests/<tagOrDigest>` on `origin` (HEAD, GET, PUT).
 *
 * @throws {TypeError} The repository is invalid, or `tagOrDigest` is neither a tag nor a digest.
 *
 * @example Building a manifest URL
 * ```ts
 * import { manifestUrl, registryOrigin } from "./endpoints.ts";
 * console.log(manifestUrl(registryOrigin("ghcr.io"), "org/data", "v1").pathname);
 * // "/v2/org/data/manifests/v1"
 * ```
 */
export function manifestUrl(origin: URL, repository: string, tagOrDigest: string): URL {
  checkRepository(repository);
  if (!isTag(tagOrDigest)) {
    try {
      parseDigest(tagOrDigest);
    } catch {
      throw new TypeError("invalid tag or digest");
    }
  }
  return v2(origin, `${repository}/manifests/${tagOrDigest}`);
}

/**
 * Returns `/v2/<repository>/tags/list` on `origin`.
 *
 * @throws {TypeError} The repository is invalid.
 *
 * @example Building a tag list URL
 * ```ts
 * import { registryOrigin, tagsUrl } from "./endpoints.ts";
 * console.log(tagsUrl(registryOrigin("ghcr.io"), "org/data").pathname); // "/v2/org/data/tags/list"
 * ```
 */
export function tagsUrl(origin: URL, repository: string): URL {
  checkRepository(repository);
  return v2(origin, `${repository}/tags/list`);
}

const NAME = "([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)";
const BLOB_PATH = new RegExp(`^/v2/${NAME}/blobs/([a-z0-9+._-]+:[a-zA-Z0-9=_-]+)$`);
const UPLOAD_PATH = new RegExp(`^/v2/${NAME}/blobs/uploads/([^/]*)$`);
const MANIFEST_PATH = new RegExp(`^/v2/${NAME}/manifests/([^/]+)$`);
const TAGS_PATH = new RegExp(`^/v2/${NAME}/tags/list$`);

/**
 * Recognises a distribution API path, for servers and request routing: blobs
 * (`/v2/<name>/blobs/<digest>`), uploads (`/v2/<name>/blobs/uploads/` and session paths
 * `/v2/<name>/blobs/uploads/<id>`), manifests (`/v2/<name>/manifests/<ref>`) and tags
 * (`/v2/<name>/tags/list`). Returns `undefined` for any other path.
 *
 * @example Routing a request
 * ```ts
 * import { parseRegistryPath } from "./endpoints.ts";
 * console.log(parseRegistryPath("/v2/org/data/blobs/uploads/abc"));
 * // { repository: "org/data", kind: "uploads", reference: "abc" }
 * console.log(parseRegistryPath("/v2/")); // undefined
 * ```
 */
export function parseRegistryPath(pathname: string): RegistryPath | undefined {
  let match = UPLOAD_PATH.exec(pathname);
  if (match !== null) return { repository: match[1]!, kind: "uploads", reference: match[2]! };
  match = BLOB_PATH.exec(pathname);
  if (match !== null) return { repository: match[1]!, kind: "blobs", reference: match[2]! };
  match = MANIFEST_PATH.exec(pathname);
  if (match !== null) return { repository: match[1]!, kind: "manifests", reference: match[2]! };
  match = TAGS_PATH.exec(pathname);
  if (match !== null) return { repository: match[1]!, kind: "tags" };
  return undefined;
}
