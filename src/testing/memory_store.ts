/**
 * The in-memory content store behind the embedded test registry.
 *
 * @module
 */
import { createHash, randomUUID } from "node:crypto";
import type { Hash } from "node:crypto";

/**
 * A manifest as stored: the exact bytes, the media type it was pushed with, its digest.
 *
 * @example Inspecting a pushed manifest
 * ```ts
 * import { MemoryStore, type StoredManifest } from "@ocipart/ocipart/testing";
 * const store = new MemoryStore();
 * const bytes = new TextEncoder().encode('{"schemaVersion":2}');
 * store.putManifest("demo/app", "v1", bytes, "application/vnd.oci.image.manifest.v1+json");
 * const stored: StoredManifest | undefined = store.getManifest("demo/app", "v1");
 * console.log(stored?.mediaType); // "application/vnd.oci.image.manifest.v1+json"
 * ```
 */
export interface StoredManifest {
  /** The exact bytes that were pushed. */
  bytes: Uint8Array;
  /** The `Content-Type` it was pushed with. */
  mediaType: string;
  /** `sha256:<hex>` of `bytes`. */
  digest: string;
}

/**
 * An open blob upload session.
 *
 * @example Checking that no upload session was left open
 * ```ts
 * import { MemoryStore, type UploadSession } from "@ocipart/ocipart/testing";
 * const store = new MemoryStore();
 * const session: UploadSession = store.openUpload("demo/app");
 * console.log(store.openUploads); // 1
 * store.closeUpload(session.id);
 * console.log(store.openUploads); // 0
 * ```
 */
export interface UploadSession {
  /** Session id (the `Docker-Upload-UUID`). */
  readonly id: string;
  /** Repository the session belongs to. */
  readonly repository: string;
  /** Bytes received so far. */
  size: number;
  /** Incremented on every accepted step; part of the session's Location. */
  state: number;
  /** Received chunks, in order. */
  chunks: Uint8Array[];
  /** Running sha256 of the received bytes. */
  hash: Hash;
}

/** `sha256:<hex>` of `bytes`. */
function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/**
 * Blobs, manifests, tags and upload sessions of an in-memory registry. Blob bytes are stored
 * once per digest and linked per repository, like Distribution: a blob is visible in a
 * repository only after it was pushed or mounted there.
 *
 * @example Seeding a blob and a manifest
 * ```ts
 * import { MemoryStore } from "@ocipart/ocipart/testing";
 * const store = new MemoryStore();
 * const config = store.putBlob("demo/app", new TextEncoder().encode("{}"));
 * console.log(store.hasBlob("demo/app", config)); // true
 * ```
 */
export class MemoryStore {
  #blobs = new Map<string, Uint8Array>();
  #links = new Map<string, Set<string>>();
  #manifests = new Map<string, Map<string, StoredManifest>>();
  #tags = new Map<string, Map<string, string>>();
  #uploads = new Map<string, UploadSession>();

  /**
   * Names of repositories that hold at least one blob, manifest or tag, sorted.
   *
   * @example Listing repositories
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * store.putBlob("b/two", new Uint8Array([2]));
   * store.putBlob("a/one", new Uint8Array([1]));
   * console.log(store.repositories()); // ["a/one", "b/two"]
   * ```
   */
  repositories(): string[] {
    const names = new Set([...this.#links.keys(), ...this.#manifests.keys()]);
    return [...names].sort();
  }

  /**
   * Stores `bytes` as a blob of `repository`; returns its digest.
   *
   * @example Seeding a blob
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * console.log(store.putBlob("demo/app", new TextEncoder().encode("{}")));
   * // "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
   * ```
   */
  putBlob(repository: string, bytes: Uint8Array): string {
    const digest = sha256(bytes);
    this.linkBlob(repository, digest, bytes);
    return digest;
  }

  /**
   * Links an existing (or given) blob into `repository`. Returns false when it is unknown.
   *
   * @example Making a blob visible in a second repository
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const digest = store.putBlob("demo/a", new Uint8Array([1]));
   * console.log(store.linkBlob("demo/b", digest), store.hasBlob("demo/b", digest)); // true true
   * ```
   */
  linkBlob(repository: string, digest: string, bytes?: Uint8Array): boolean {
    if (bytes !== undefined) this.#blobs.set(digest, bytes);
    if (!this.#blobs.has(digest)) return false;
    let links = this.#links.get(repository);
    if (links === undefined) this.#links.set(repository, links = new Set());
    links.add(digest);
    return true;
  }

  /**
   * Whether `repository` holds the blob `digest`.
   *
   * @example Blobs are linked per repository
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const digest = store.putBlob("demo/a", new Uint8Array([1]));
   * console.log(store.hasBlob("demo/a", digest), store.hasBlob("demo/b", digest)); // true false
   * ```
   */
  hasBlob(repository: string, digest: string): boolean {
    return this.#links.get(repository)?.has(digest) === true;
  }

  /**
   * The bytes of blob `digest` in `repository`, or undefined.
   *
   * @example Reading what a client pushed
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const digest = store.putBlob("demo/a", new TextEncoder().encode("hi"));
   * console.log(new TextDecoder().decode(store.getBlob("demo/a", digest))); // "hi"
   * ```
   */
  getBlob(repository: string, digest: string): Uint8Array | undefined {
    return this.hasBlob(repository, digest) ? this.#blobs.get(digest) : undefined;
  }

  /**
   * Digests linked in `repository`, sorted.
   *
   * @example Counting the blobs of a repository
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * store.putBlob("demo/a", new Uint8Array([1]));
   * store.putBlob("demo/a", new Uint8Array([2]));
   * console.log(store.blobs("demo/a").length); // 2
   * ```
   */
  blobs(repository: string): string[] {
    return [...(this.#links.get(repository) ?? [])].sort();
  }

  /**
   * Unlinks blob `digest` from `repository`; returns whether it was linked.
   *
   * @example Removing a blob so the next push must upload it
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const digest = store.putBlob("demo/a", new Uint8Array([1]));
   * console.log(store.deleteBlob("demo/a", digest), store.hasBlob("demo/a", digest)); // true false
   * ```
   */
  deleteBlob(repository: string, digest: string): boolean {
    return this.#links.get(repository)?.delete(digest) === true;
  }

  /**
   * Replaces the stored bytes of a blob (for corruption tests); returns false when unknown.
   *
   * @example Corrupting a blob to test digest verification
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const digest = store.putBlob("demo/a", new TextEncoder().encode("good"));
   * store.tamperBlob(digest, new TextEncoder().encode("evil"));
   * console.log(new TextDecoder().decode(store.getBlob("demo/a", digest))); // "evil"
   * ```
   */
  tamperBlob(digest: string, bytes: Uint8Array): boolean {
    if (!this.#blobs.has(digest)) return false;
    this.#blobs.set(digest, bytes);
    return true;
  }

  /**
   * Stores a manifest's exact bytes under its digest and, when `reference` is a tag, points the
   * tag at it. Does no validation (the HTTP handler validates). Returns the digest.
   *
   * @example Tagging a manifest
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const bytes = new TextEncoder().encode('{"schemaVersion":2}');
   * const mediaType = "application/vnd.oci.image.manifest.v1+json";
   * const digest = store.putManifest("demo/app", "v1", bytes, mediaType);
   * console.log(store.getManifest("demo/app", digest)?.digest === digest); // true
   * ```
   */
  putManifest(repository: string, reference: string, bytes: Uint8Array, mediaType: string): string {
    const digest = sha256(bytes);
    let manifests = this.#manifests.get(repository);
    if (manifests === undefined) this.#manifests.set(repository, manifests = new Map());
    manifests.set(digest, { bytes, mediaType, digest });
    if (!reference.includes(":")) {
      let tags = this.#tags.get(repository);
      if (tags === undefined) this.#tags.set(repository, tags = new Map());
      tags.set(reference, digest);
    }
    return digest;
  }

  /**
   * The manifest a tag or digest refers to in `repository`, or undefined.
   *
   * @example By tag or by digest
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const bytes = new TextEncoder().encode("{}");
   * const mediaType = "application/vnd.oci.image.manifest.v1+json";
   * const digest = store.putManifest("demo/app", "v1", bytes, mediaType);
   * console.log(store.getManifest("demo/app", "v1")?.digest === digest); // true
   * ```
   */
  getManifest(repository: string, reference: string): StoredManifest | undefined {
    const digest = reference.includes(":") ? reference : this.#tags.get(repository)?.get(reference);
    return digest === undefined ? undefined : this.#manifests.get(repository)?.get(digest);
  }

  /**
   * Deletes a tag, or a manifest by digest together with the tags pointing at it.
   *
   * @example Deleting a tag
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const mediaType = "application/vnd.oci.image.manifest.v1+json";
   * store.putManifest("demo/app", "v1", new TextEncoder().encode("{}"), mediaType);
   * console.log(store.deleteManifest("demo/app", "v1"), store.tags("demo/app")); // true []
   * ```
   */
  deleteManifest(repository: string, reference: string): boolean {
    const tags = this.#tags.get(repository);
    if (!reference.includes(":")) return tags?.delete(reference) === true;
    const deleted = this.#manifests.get(repository)?.delete(reference) === true;
    if (deleted && tags !== undefined) {
      for (const [tag, digest] of tags) if (digest === reference) tags.delete(tag);
    }
    return deleted;
  }

  /**
   * Tags of `repository`, sorted; undefined when the repository is unknown.
   *
   * @example The tags a push created
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const mediaType = "application/vnd.oci.image.manifest.v1+json";
   * store.putManifest("demo/app", "v1", new TextEncoder().encode("{}"), mediaType);
   * console.log(store.tags("demo/app"), store.tags("demo/other")); // ["v1"] undefined
   * ```
   */
  tags(repository: string): string[] | undefined {
    if (!this.#manifests.has(repository) && !this.#links.has(repository)) return undefined;
    return [...(this.#tags.get(repository)?.keys() ?? [])].sort();
  }

  /**
   * Opens an upload session in `repository`.
   *
   * @example Opening a session
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const session = store.openUpload("demo/app");
   * console.log(session.repository, session.size); // "demo/app" 0
   * ```
   */
  openUpload(repository: string): UploadSession {
    const session: UploadSession = {
      id: randomUUID(),
      repository,
      size: 0,
      state: 0,
      chunks: [],
      hash: createHash("sha256"),
    };
    this.#uploads.set(session.id, session);
    return session;
  }

  /**
   * The open session `id` of `repository`, or undefined.
   *
   * @example Sessions belong to their repository
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const { id } = store.openUpload("demo/app");
   * console.log(store.getUpload("demo/app", id)?.id === id); // true
   * console.log(store.getUpload("demo/other", id)); // undefined
   * ```
   */
  getUpload(repository: string, id: string): UploadSession | undefined {
    const session = this.#uploads.get(id);
    return session?.repository === repository ? session : undefined;
  }

  /**
   * Closes a session, dropping its bytes; returns whether it was open.
   *
   * @example Abandoning a session
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * const { id } = store.openUpload("demo/app");
   * console.log(store.closeUpload(id), store.closeUpload(id)); // true false
   * ```
   */
  closeUpload(id: string): boolean {
    return this.#uploads.delete(id);
  }

  /**
   * Number of open upload sessions (a client that leaks sessions shows here).
   *
   * @example Checking a client cleaned up its sessions
   * ```ts
   * import { MemoryStore } from "@ocipart/ocipart/testing";
   * const store = new MemoryStore();
   * console.log(store.openUploads); // 0
   * ```
   */
  get openUploads(): number {
    return this.#uploads.size;
  }
}
