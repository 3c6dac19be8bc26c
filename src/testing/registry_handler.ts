/**
 * A fetch-shaped OCI distribution handler over a {@linkcode MemoryStore}.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { MemoryStore, type UploadSession } from "./memory_store.ts";
import { matchRoute } from "./routes.ts";
import type { Route } from "./routes.ts";
import { concatBytes } from "../registry/bytes.ts";
import { parseRangeRequest } from "../registry/range.ts";

/**
 * Options of {@linkcode RegistryHandler}.
 *
 * @example A registry that asks for large PATCH chunks
 * ```ts
 * import { RegistryHandler, type RegistryHandlerOptions } from "@ocipart/ocipart/testing";
 * const options: RegistryHandlerOptions = { ociChunkMinLength: 5 * 1024 * 1024 };
 * const registry = new RegistryHandler(options);
 * const started = await registry.fetch(
 *   new Request("http://registry.test/v2/demo/blobs/uploads/", { method: "POST" }),
 * );
 * console.log(started.headers.get("oci-chunk-min-length")); // "5242880"
 * ```
 */
export interface RegistryHandlerOptions {
  /** The store to serve; a fresh one by default. */
  store?: MemoryStore;
  /** When set, `POST` upload answers carry `OCI-Chunk-Min-Length` with this value. */
  ociChunkMinLength?: number;
  /** Largest manifest accepted (Distribution: 4 MiB); larger answers 400. */
  maxManifestBytes?: number;
}

const MANIFEST_TYPES = new Set([
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
]);
const INDEX_TYPES = new Set([
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
]);
const DIGEST_PATTERN = /^sha256:[a-f0-9]{64}$/;

const MESSAGES: Record<string, string> = {
  BLOB_UNKNOWN: "blob unknown to registry",
  BLOB_UPLOAD_INVALID: "blob upload invalid",
  BLOB_UPLOAD_UNKNOWN: "blob upload unknown to registry",
  DIGEST_INVALID: "provided digest did not match uploaded content",
  MANIFEST_BLOB_UNKNOWN: "blob unknown to registry",
  MANIFEST_INVALID: "manifest invalid",
  MANIFEST_UNKNOWN: "manifest unknown",
  NAME_UNKNOWN: "repository name not known to registry",
  RANGE_INVALID: "invalid content range",
  UNSUPPORTED: "The operation is unsupported.",
};

interface ErrorEntry {
  code: string;
  detail?: unknown;
}

/** Reads a request body chunk by chunk; `limit` bytes at most (returns undefined beyond). */
async function readBody(request: Request, limit = Infinity): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel();
        return undefined;
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return concatBytes(chunks, size);
}

function mediaTypeOf(value: string | null): string {
  return (value ?? "").split(";")[0]!.trim().toLowerCase();
}

/**
 * An in-memory OCI registry as a fetch-shaped function: serve it with any HTTP server, or hand
 * `handler.fetch` straight to a client as its transport. Behaves like CNCF Distribution where
 * clients notice (absolute upload Locations built from the request URL, `Range: 0-<end>`
 * acknowledgements, manifest `Accept` negotiation, per-repository blob links, errors in the
 * distribution JSON format) and is stricter where the distribution spec is
 * (docs/protocol.md#blob-push): a PATCH `Content-Range` that does not continue the session
 * answers 416; a stale session Location answers 404.
 *
 * @example Pushing and reading a blob without any socket
 * ```ts
 * import { RegistryHandler } from "@ocipart/ocipart/testing";
 * const registry = new RegistryHandler();
 * const started = await registry.fetch(
 *   new Request("http://registry.test/v2/demo/blobs/uploads/", { method: "POST" }),
 * );
 * console.log(started.status); // 202
 * ```
 */
export class RegistryHandler {
  /** The served content. */
  readonly store: MemoryStore;
  readonly #chunkMin: number | undefined;
  readonly #maxManifest: number;

  /** Creates a handler over `options.store` (or a fresh store). */
  constructor(options: RegistryHandlerOptions = {}) {
    this.store = options.store ?? new MemoryStore();
    this.#chunkMin = options.ociChunkMinLength;
    this.#maxManifest = options.maxManifestBytes ?? 4 * 1024 * 1024;
  }

  /** Answers one request; the same as {@linkcode RegistryHandler.prototype.handle}. */
  readonly fetch = (request: Request): Promise<Response> => this.handle(request);

  /**
   * Answers one request. Unknown endpoints answer 404 `UNSUPPORTED`.
   *
   * @example Serving the registry from `Deno.serve`
   * ```ts
   * import { RegistryHandler } from "@ocipart/ocipart/testing";
   * const registry = new RegistryHandler();
   * const options = { port: 0, onListen: () => {} };
   * await using server = Deno.serve(options, (request) => registry.handle(request));
   * const response = await fetch(`http://127.0.0.1:${server.addr.port}/v2/`);
   * console.log(response.status); // 200
   * await response.body?.cancel();
   * ```
   */
  async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const method = request.method.toUpperCase();
    const route = matchRoute(method, url.pathname);
    if (route === undefined) {
      await request.body?.cancel();
      return this.#error(404, [{ code: "UNSUPPORTED" }]);
    }
    switch (route.name) {
      case "base":
        return this.#json(200, {});
      case "blob":
        return await this.#blob(request, method, route);
      case "upload":
        return await this.#startUpload(request, url, route);
      case "session":
        return await this.#session(request, method, url, route);
      case "manifest":
        return await this.#manifest(request, method, url, route);
      case "tags": {
        const tags = this.store.tags(route.repository);
        if (tags === undefined) return this.#error(404, [{ code: "NAME_UNKNOWN" }]);
        return this.#json(200, { name: route.repository, tags });
      }
    }
  }

  #headers(extra: Record<string, string> = {}): Headers {
    const headers = new Headers(extra);
    headers.set("docker-distribution-api-version", "registry/2.0");
    return headers;
  }

  #json(status: number, value: unknown, extra: Record<string, string> = {}): Response {
    const bytes = new TextEncoder().encode(JSON.stringify(value));
    return new Response(bytes, {
      status,
      headers: this.#headers({
        ...extra,
        "content-type": "application/json; charset=utf-8",
        "content-length": String(bytes.byteLength),
      }),
    });
  }

  #error(status: number, errors: ErrorEntry[], extra: Record<string, string> = {}): Response {
    return this.#json(status, {
      errors: errors.map((e) => ({
        code: e.code,
        message: MESSAGES[e.code] ?? e.code,
        detail: e.detail ?? {},
      })),
    }, extra);
  }

  #empty(status: number, extra: Record<string, string>): Response {
    return new Response(null, {
      status,
      headers: this.#headers({ ...extra, "content-length": "0" }),
    });
  }

  async #blob(request: Request, method: string, route: Route): Promise<Response> {
    await request.body?.cancel();
    const digest = route.parameter;
    if (method === "DELETE") {
      return this.store.deleteBlob(route.repository, digest)
        ? this.#empty(202, { "docker-content-digest": digest })
        : this.#error(404, [{ code: "BLOB_UNKNOWN", detail: { digest } }]);
    }
    const bytes = this.store.getBlob(route.repository, digest);
    if (bytes === undefined) {
      if (method === "HEAD") {
        return new Response(null, { status: 404, headers: this.#headers() });
      }
      return this.#error(404, [{ code: "BLOB_UNKNOWN", detail: { digest } }]);
    }
    const common = {
      "accept-ranges": "bytes",
      "cache-control": "max-age=31536000",
      "content-type": "application/octet-stream",
      "docker-content-digest": digest,
      "etag": `"${digest}"`,
    };
    const size = bytes.byteLength;
    const range = method === "GET"
      ? parseRangeRequest(request.headers.get("range"), size)
      : undefined;
    if (range !== undefined) {
      if ("unsatisfied" in range) {
        return new Response(null, {
          status: 416,
          headers: this.#headers({ "content-range": `bytes */${size}`, "content-length": "0" }),
        });
      }
      const end = range.end;
      const slice = bytes.subarray(range.start, end + 1);
      return new Response(slice as Uint8Array<ArrayBuffer>, {
        status: 206,
        headers: this.#headers({
          ...common,
          "content-range": `bytes ${range.start}-${end}/${size}`,
          "content-length": String(slice.byteLength),
        }),
      });
    }
    const headers = this.#headers({ ...common, "content-length": String(size) });
    if (method === "HEAD") return new Response(null, { status: 200, headers });
    return new Response(bytes as Uint8Array<ArrayBuffer>, { status: 200, headers });
  }

  #sessionHeaders(url: URL, repository: string, id: string, state: number, size: number) {
    const location = new URL(`/v2/${repository}/blobs/uploads/${id}`, url);
    location.searchParams.set("_state", String(state));
    return {
      "location": location.href,
      "range": `0-${Math.max(size - 1, 0)}`,
      "docker-upload-uuid": id,
    };
  }

  async #startUpload(request: Request, url: URL, route: Route): Promise<Response> {
    const repository = route.repository;
    const mount = url.searchParams.get("mount");
    const from = url.searchParams.get("from");
    const digest = url.searchParams.get("digest");
    if (mount !== null && from !== null && this.store.hasBlob(from, mount)) {
      await request.body?.cancel();
      this.store.linkBlob(repository, mount);
      return this.#empty(201, {
        "location": new URL(`/v2/${repository}/blobs/${mount}`, url).href,
        "docker-content-digest": mount,
      });
    }
    if (digest !== null && mount === null) {
      // Monolithic upload: the POST body is the whole blob.
      const body = await readBody(request);
      return this.#commit(url, repository, digest, body!);
    }
    await request.body?.cancel();
    const session = this.store.openUpload(repository);
    const extra: Record<string, string> = this.#sessionHeaders(
      url,
      repository,
      session.id,
      session.state,
      0,
    );
    if (this.#chunkMin !== undefined) extra["oci-chunk-min-length"] = String(this.#chunkMin);
    return this.#empty(202, extra);
  }

  #commit(url: URL, repository: string, digest: string, bytes: Uint8Array): Response {
    if (!DIGEST_PATTERN.test(digest)) {
      return this.#error(400, [{ code: "DIGEST_INVALID", detail: { digest } }]);
    }
    const actual = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    if (actual !== digest) return this.#error(400, [{ code: "DIGEST_INVALID" }]);
    this.store.linkBlob(repository, digest, bytes);
    return this.#empty(201, {
      "location": new URL(`/v2/${repository}/blobs/${digest}`, url).href,
      "docker-content-digest": digest,
    });
  }

  async #session(request: Request, method: string, url: URL, route: Route): Promise<Response> {
    const session = this.store.getUpload(route.repository, route.parameter);
    const state = url.searchParams.get("_state");
    const refused = session === undefined
      ? "BLOB_UPLOAD_UNKNOWN"
      : state !== null && state !== String(session.state)
      ? "BLOB_UPLOAD_INVALID"
      : undefined;
    if (refused !== undefined || method === "DELETE") await request.body?.cancel();
    if (refused !== undefined) return this.#error(404, [{ code: refused }]);
    const headers = () =>
      this.#sessionHeaders(url, route.repository, session!.id, session!.state, session!.size);
    if (method === "DELETE") {
      this.store.closeUpload(session!.id);
      return this.#empty(204, {});
    }
    if (method === "GET") return this.#empty(204, headers());
    if (method === "PATCH" && !continuesAt(request, session!.size)) {
      await request.body?.cancel();
      return new Response(null, {
        status: 416,
        headers: this.#headers({ ...headers(), "content-length": "0" }),
      });
    }
    // PATCH and PUT append their body chunk by chunk.
    await this.#append(request, session!);
    session!.state++;
    if (method === "PATCH") return this.#empty(202, headers());
    return this.#completeSession(url, route.repository, session!);
  }

  /** Appends `request`'s body to `session`; a broken body invalidates the session. */
  async #append(request: Request, session: UploadSession): Promise<void> {
    if (request.body === null) return;
    const reader = request.body.getReader();
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) break;
        session.chunks.push(value);
        session.hash.update(value);
        session.size += value.byteLength;
      }
    } catch (err) {
      // A broken upload body invalidates the session, like a dropped connection.
      this.store.closeUpload(session.id);
      throw err;
    } finally {
      reader.releaseLock();
    }
  }

  /** The PUT that closes `session`: the blob is linked when it hashes to the digest named. */
  #completeSession(url: URL, repository: string, session: UploadSession): Response {
    this.store.closeUpload(session.id);
    const digest = url.searchParams.get("digest");
    if (digest === null || !DIGEST_PATTERN.test(digest)) {
      return this.#error(400, [{ code: "DIGEST_INVALID" }]);
    }
    const actual = `sha256:${session.hash.digest("hex")}`;
    if (actual !== digest) return this.#error(400, [{ code: "DIGEST_INVALID" }]);
    this.store.linkBlob(repository, digest, concatBytes(session.chunks, session.size));
    session.chunks = [];
    return this.#empty(201, {
      "location": new URL(`/v2/${repository}/blobs/${digest}`, url).href,
      "docker-content-digest": digest,
    });
  }

  async #manifest(request: Request, method: string, url: URL, route: Route): Promise<Response> {
    const { repository, parameter: reference } = route;
    if (method === "PUT") return await this.#putManifest(request, url, repository, reference);
    await request.body?.cancel();
    if (method === "DELETE") {
      return this.store.deleteManifest(repository, reference)
        ? this.#empty(202, {})
        : this.#error(404, [{ code: "MANIFEST_UNKNOWN" }]);
    }
    const stored = this.store.getManifest(repository, reference);
    const accepted = (request.headers.get("accept") ?? "").split(",").map(mediaTypeOf);
    if (stored === undefined || !accepted.includes(stored.mediaType)) {
      if (method === "HEAD") {
        return new Response(null, { status: 404, headers: this.#headers() });
      }
      return this.#error(404, [{ code: "MANIFEST_UNKNOWN", detail: { reference } }]);
    }
    const headers = this.#headers({
      "content-type": stored.mediaType,
      "content-length": String(stored.bytes.byteLength),
      "docker-content-digest": stored.digest,
      "etag": `"${stored.digest}"`,
    });
    if (method === "HEAD") return new Response(null, { status: 200, headers });
    return new Response(stored.bytes as Uint8Array<ArrayBuffer>, { status: 200, headers });
  }

  async #putManifest(
    request: Request,
    url: URL,
    repository: string,
    reference: string,
  ): Promise<Response> {
    const mediaType = mediaTypeOf(request.headers.get("content-type"));
    if (!MANIFEST_TYPES.has(mediaType) && !INDEX_TYPES.has(mediaType)) {
      await request.body?.cancel();
      return this.#error(400, [{ code: "MANIFEST_INVALID", detail: { mediaType } }]);
    }
    const bytes = await readBody(request, this.#maxManifest);
    if (bytes === undefined) {
      return this.#error(400, [{ code: "MANIFEST_INVALID", detail: "payload too large" }]);
    }
    let parsed: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw new TypeError("not an object");
      }
      parsed = value as Record<string, unknown>;
    } catch {
      return this.#error(400, [{ code: "MANIFEST_INVALID", detail: "invalid JSON" }]);
    }
    if (parsed.mediaType !== undefined && parsed.mediaType !== mediaType) {
      return this.#error(400, [{ code: "MANIFEST_INVALID", detail: "mediaType mismatch" }]);
    }
    const missing: ErrorEntry[] = [];
    const digestOf = (descriptor: unknown): string | undefined => {
      if (typeof descriptor !== "object" || descriptor === null) return undefined;
      const digest = (descriptor as Record<string, unknown>).digest;
      return typeof digest === "string" ? digest : undefined;
    };
    if (MANIFEST_TYPES.has(mediaType)) {
      const config = digestOf(parsed.config);
      const layers = Array.isArray(parsed.layers) ? parsed.layers : undefined;
      if (config === undefined || layers === undefined) {
        return this.#error(400, [{ code: "MANIFEST_INVALID", detail: "config and layers" }]);
      }
      for (const descriptor of [parsed.config, ...layers]) {
        const digest = digestOf(descriptor);
        if (digest === undefined) {
          return this.#error(400, [{ code: "MANIFEST_INVALID", detail: "descriptor digest" }]);
        }
        if (!this.store.hasBlob(repository, digest)) {
          missing.push({ code: "MANIFEST_BLOB_UNKNOWN", detail: digest });
        }
      }
    } else {
      const manifests = Array.isArray(parsed.manifests) ? parsed.manifests : [];
      for (const descriptor of manifests) {
        const digest = digestOf(descriptor);
        if (digest === undefined || this.store.getManifest(repository, digest) === undefined) {
          missing.push({ code: "MANIFEST_BLOB_UNKNOWN", detail: digest ?? "" });
        }
      }
    }
    if (missing.length > 0) return this.#error(400, missing);
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    if (reference.includes(":") && reference !== digest) {
      return this.#error(400, [{ code: "DIGEST_INVALID" }]);
    }
    this.store.putManifest(repository, reference, bytes, mediaType);
    return this.#empty(201, {
      "location": new URL(`/v2/${repository}/manifests/${digest}`, url).href,
      "docker-content-digest": digest,
    });
  }
}

/** Whether a PATCH's Content-Range, when it has one, starts where `size` bytes end. */
function continuesAt(request: Request, size: number): boolean {
  const contentRange = request.headers.get("content-range");
  if (contentRange === null) return true;
  const match = /^(?:bytes )?(\d+)-(\d+)$/.exec(contentRange.trim());
  return match !== null && Number(match[1]) === size;
}
