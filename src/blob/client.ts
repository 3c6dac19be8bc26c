/**
 * `BlobClient`: push, pull, ranged pull, existence check and cross-repository mount of single
 * blobs, with retries, resumable verified downloads, chunked upload and parallel pull.
 *
 * @module
 */
import { BodyLengthError } from "../errors/kinds.ts";
import { isSha256Digest } from "../registry/digest.ts";
import { AttemptBudget } from "../remote/retry.ts";
import { BLOB_SPEC_POLICY, withRedirects } from "../remote/policy.ts";
import { type ClientOptions, ClientSession, credentialSource } from "../remote/session.ts";
import type { BlobContext } from "./context.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import { mountBlob } from "../remote/uploads.ts";
import { checkMirrorTable, type MirrorTable, withMirrorHosts } from "../remote/mirror_table.ts";
import { parallelPullBlob } from "./parallel_pull.ts";
import {
  type BlobProgressCallback,
  ProgressReporter,
  type WireProgressCallback,
} from "./progress.ts";
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { pullBlob } from "./pull.ts";
import { pullRangeBlob } from "./pull_range.ts";
import { pushBlob } from "./push.ts";
import { type Repository, toRepository } from "./repository.ts";
import { type PushBody, toUploadSource } from "./upload_source.ts";

/**
 * Options of {@linkcode BlobClient}.
 *
 * @example Chunked uploads and parallel pulls with a custom retry policy
 * ```ts
 * import { BlobClient, type BlobClientOptions } from "@ocipart/ocipart";
 * const options: BlobClientOptions = {
 *   chunkedUpload: { chunkSize: 16 * 1024 * 1024 },
 *   parallelPull: { workers: 4, chunkSize: 64 * 1024 * 1024 },
 *   retryPolicy: { maxAttempts: 6 },
 *   hashThreads: 0,
 * };
 * using client = new BlobClient(options);
 * ```
 */
export interface BlobClientOptions extends ClientOptions {
  /**
   * Whether a 307/308 redirect that re-issues a write (POST, PUT, PATCH, DELETE) with a
   * replayable body may be followed. When false every redirect of a write is refused before
   * the target is contacted.
   *
   * @default true
   */
  writeRedirects?: boolean;
  /**
   * Upload in PATCH chunks of `chunkSize` bytes (raised to a registry's minimum).
   *
   * @default off: one monolithic PUT
   */
  chunkedUpload?: { chunkSize: number };
  /**
   * Download with `workers` concurrent ranged GETs of `chunkSize` bytes.
   *
   * @default off: one stream
   */
  parallelPull?: { workers: number; chunkSize: number };
  /**
   * Mirrors that `pull` and `pullRange` read from first: the reads of a repository try the
   * mirrors of its longest matching prefix in order (those whose `pullFromMirror` is not
   * `"tag-only"`: a blob is read by digest), then the registry, which takes over whenever a
   * mirror fails; a mirror that gave no answer rests, and a blob whose body broke from a mirror
   * is read from the registry for the rest of the client's life. A mirror never changes what a
   * digest names: `pull` verifies the bytes; `pullRange` does not (the caller hashes the whole
   * blob). A mirror host is reached with the client's transports and settings, its own
   * `plainHttp` or `insecure` as its host's; with a caller's `transport`, that transport carries
   * the mirror's requests too. `exists`, `push` and `mount` never use mirrors.
   *
   * @default none
   */
  mirrors?: MirrorTable;
}

/**
 * Options every call accepts.
 *
 * @example A time limit for one call
 * ```ts
 * import type { BlobCallOptions } from "@ocipart/ocipart";
 * const options: BlobCallOptions = { signal: AbortSignal.timeout(30_000) };
 * // await client.exists("ghcr.io/acme/data", digest, options);
 * console.log(options.signal?.aborted); // false
 * ```
 */
export interface BlobCallOptions {
  /** Stops network work, retries and backoff; its reason is what the call rejects with. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode BlobClient.pull}.
 *
 * @example A pull with a known size and progress
 * ```ts
 * import type { BlobPullOptions } from "@ocipart/ocipart";
 * const options: BlobPullOptions = {
 *   size: 1024,
 *   onProgress: (done, total) => console.log(`${done}/${total}`),
 * };
 * // const stream = await client.pull("ghcr.io/acme/data", digest, options);
 * const snapshot = { completedBytes: 512, wireBytes: 512, totalBytes: 1024, phase: "downloading" } as const;
 * options.onProgress?.(512, 1024, snapshot); // "512/1024"
 * ```
 */
export interface BlobPullOptions extends BlobCallOptions {
  /**
   * Cumulative bytes delivered to the caller, the total (−1 while unknown), and the same as a
   * snapshot; at most about ten calls a second plus the one that reaches the total.
   */
  onProgress?: BlobProgressCallback;
  /** The blob size, when known: checked against the registry and used as the total. */
  size?: number;
}

/**
 * Options of {@linkcode BlobClient.pullRange}.
 *
 * @example Progress of a ranged pull
 * ```ts
 * import type { BlobPullRangeOptions } from "@ocipart/ocipart";
 * const options: BlobPullRangeOptions = { onProgress: (done, total) => console.log(done, total) };
 * // const stream = await client.pullRange("ghcr.io/acme/data", digest, 0, 512, options);
 * options.onProgress?.(512, 512, {
 *   completedBytes: 512,
 *   wireBytes: 512,
 *   totalBytes: 512,
 *   phase: "downloading",
 * });
 * ```
 */
export interface BlobPullRangeOptions extends BlobCallOptions {
  /** Cumulative bytes delivered to the caller, out of the requested length. */
  onProgress?: BlobProgressCallback;
}

/**
 * Options of {@linkcode BlobClient.push}.
 *
 * @example Committed progress and bytes on the wire
 * ```ts
 * import type { BlobPushOptions } from "@ocipart/ocipart";
 * let sent = 0;
 * const options: BlobPushOptions = {
 *   onProgress: (done, total) => console.log(`committed ${done} of ${total}`),
 *   onWireProgress: (delta) => (sent += delta),
 * };
 * // await client.push("ghcr.io/acme/data", digest, size, body, options);
 * options.onWireProgress?.(100);
 * console.log(sent); // 100
 * ```
 */
export interface BlobPushOptions extends BlobCallOptions {
  /**
   * Committed progress: once after the final 201 for a monolithic upload, after each PATCH
   * acknowledgement for a chunked one (only a resolved `push` proves the commit).
   */
  onProgress?: BlobProgressCallback;
  /**
   * Positive deltas of request-body bytes the transport consumed, counting failed attempts
   * and replays after redirects; source read-ahead does not count.
   */
  onWireProgress?: WireProgressCallback;
}

/**
 * The blob transfer client. It performs no authentication by default, as the blob
 * specification says (docs/protocol.md#blob-operations); for private registries pass
 * `credential` or `credentials` (as `PartedClient` takes them: the docker configuration and its
 * helpers, a static credential, a source of your own), or an authenticated `transport`.
 * Repositories are `{ host, name }` objects or `"<host>[:<port>]/<name>"` strings. Digests are
 * `sha256:<64 hex>`.
 *
 * Errors: registry-origin 404 → `NotFoundError`, 401/403 → `UnauthorizedError`, 413 →
 * `TooLargeError` (each in front of the `HttpStatusError`); off-origin failures never carry
 * those; a pull whose bytes do not hash to the digest errors its stream with
 * `DigestMismatchError`. Use `statusCode(err)` and `retryable(err)` for details. Messages never
 * contain a location, URL, query, path, userinfo or response body.
 *
 * @example Push, check and pull a blob (embedded testing registry)
 * ```ts
 * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry(); // or a real registry host
 * using client = new BlobClient({ plainHttp: true });
 * const repository = `${registry.host}/demo/blob`;
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * await client.push(repository, digest, bytes.length, bytes);
 * console.log(await client.exists(repository, digest)); // true
 * const stream = await client.pull(repository, digest);
 * console.log(await new Response(stream).text()); // "hello"
 * ```
 *
 * @example Credentials from the docker configuration and its helpers
 * ```ts
 * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
 * import { dockerConfigCredentials } from "@ocipart/ocipart/auth";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry(); // or a real registry host
 * // Read once the registry asks for a credential; this one never does.
 * using client = new BlobClient({ plainHttp: true, credentials: dockerConfigCredentials() });
 * const bytes = new TextEncoder().encode("hello");
 * await client.push(`${registry.host}/acme/data`, sha256Digest(bytes), bytes.length, bytes);
 * console.log(await client.exists(`${registry.host}/acme/data`, sha256Digest(bytes))); // true
 * ```
 *
 * @example An authenticated transport and a parallel pull
 * ```ts
 * import { BlobClient, createAuthFetch, sha256Digest } from "@ocipart/ocipart";
 * import { HttpTransport } from "@ocipart/ocipart/transport";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 *
 * await using registry = await startMemoryRegistry(); // or a real registry host
 * const transport = new HttpTransport();
 * using blobs = new BlobClient({
 *   plainHttp: true,
 *   transport: createAuthFetch({
 *     registry: registry.host,
 *     plainHttp: true,
 *     fetch: transport.fetch,
 *   }),
 *   parallelPull: { workers: 4, chunkSize: 64 * 1024 * 1024 },
 * });
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * await blobs.push(`${registry.host}/acme/data`, digest, bytes.length, bytes);
 * // The stream verifies the digest as it goes.
 * const stream = await blobs.pull(`${registry.host}/acme/data`, digest);
 * console.log(await new Response(stream).text()); // "hello"
 * transport.close();
 * ```
 */
export class BlobClient {
  readonly #context: BlobContext;
  readonly #session: ClientSession;
  readonly #owned: { close(): void }[] = [];
  readonly #reads = new Map<string, RemoteRepository>();

  /**
   * Creates a client; nothing is opened until the first call.
   *
   * @throws {TypeError} An option has the wrong type.
   * @throws {RangeError} A number is out of range.
   */
  constructor(options: BlobClientOptions = {}) {
    if (typeof options !== "object" || options === null) {
      throw new TypeError("BlobClient: options must be an object");
    }
    if (options.writeRedirects !== undefined && typeof options.writeRedirects !== "boolean") {
      throw new TypeError("BlobClient: writeRedirects must be a boolean");
    }
    const chunkSize = checkChunkedUpload(options.chunkedUpload);
    const parallelPull = checkParallelPull(options.parallelPull);
    // Every origin but the registry's goes to the storage transport
    // (docs/protocol.md#credentials-stay-on-their-origin).
    const policy = options.writeRedirects === false
      ? withRedirects(BLOB_SPEC_POLICY, { writes: "refuse" })
      : BLOB_SPEC_POLICY;
    const credentials = credentialSource(options, "BlobClient");
    const mirrors = options.mirrors === undefined
      ? undefined
      : checkMirrorTable(options.mirrors, "BlobClient: mirrors");
    const session = new ClientSession(options, {
      owner: "BlobClient",
      policy,
      // None by default: the blob specification's client authenticates nothing
      // (docs/protocol.md#blob-operations).
      ...(credentials === undefined ? {} : { credentials: { registry: credentials } }),
      ...(parallelPull === undefined ? {} : { maxIdleSocketsPerOrigin: parallelPull.workers }),
      ...(mirrors === undefined ? {} : {
        mirrors,
        registries: withMirrorHosts(new Map(), mirrors, "BlobClient: mirrors"),
      }),
    });
    this.#session = session;
    this.#owned.push(session);
    // Started on the first large pull; one per concurrent pull up to the limit.
    const hashThreads = session.hashThreads === 0
      ? undefined
      : session.hashing(undefined, "download");
    if (hashThreads !== undefined) this.#owned.push(hashThreads);
    this.#context = {
      policy: session.policy.retry,
      plainHttp: session.plainHttp,
      clock: session.clock,
      chunkSize,
      parallelPull,
      hashThreads,
    };
  }

  /**
   * Reports whether the repository has the blob: HEAD answered 200 (true) or, on the registry
   * origin, 404 (false). Redirects are followed.
   *
   * @example Checking before pushing
   * ```ts
   * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * using client = new BlobClient({ plainHttp: true });
   * const repository = `${registry.host}/demo/blob`;
   * const bytes = new TextEncoder().encode("hello");
   * const digest = sha256Digest(bytes);
   * if (!await client.exists(repository, digest)) {
   *   await client.push(repository, digest, bytes.length, bytes);
   * }
   * console.log(await client.exists(repository, digest)); // true
   * ```
   */
  async exists(
    repository: Repository | string,
    digest: string,
    options: BlobCallOptions = {},
  ): Promise<boolean> {
    const repo = this.#target(repository);
    checkDigest(digest);
    try {
      const budget = new AttemptBudget(this.#context.policy, this.#context.clock, options.signal);
      return await budget.run("HEAD blob", () => repo.exists(digest, options.signal));
    } catch (err) {
      throw attachSentinel(err);
    }
  }

  /**
   * Downloads a blob as a stream that verifies the digest: it closes only when the bytes hash
   * to `digest` and otherwise errors with `DigestMismatchError` instead of closing. Resolves
   * once the registry answered; a broken body is resumed from the last delivered byte when the
   * registry serves ranges. With the `parallelPull` option, chunks are fetched concurrently and
   * emitted in order (single stream when the registry does not serve ranges).
   *
   * @example Pulling into a file, with progress
   * ```ts
   * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * using client = new BlobClient({ plainHttp: true });
   * const repository = `${registry.host}/demo/blob`;
   * const bytes = new TextEncoder().encode("hello");
   * const digest = sha256Digest(bytes);
   * await client.push(repository, digest, bytes.length, bytes);
   * const path = await Deno.makeTempFile();
   * const stream = await client.pull(repository, digest, {
   *   onProgress: (done, total) => console.log(done, total), // 5 5
   * });
   * await stream.pipeTo((await Deno.create(path)).writable); // errors on a digest mismatch
   * console.log(await Deno.readTextFile(path)); // "hello"
   * await Deno.remove(path);
   * ```
   */
  async pull(
    repository: Repository | string,
    digest: string,
    options: BlobPullOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const repo = this.#reading(repository);
    checkDigest(digest);
    if (options.size !== undefined) checkSize(options.size, "size");
    const progress = new ProgressReporter(options.onProgress, undefined, "downloading", true);
    const request = {
      repo,
      digest,
      size: options.size,
      signal: options.signal,
      progress,
    };
    const parallel = this.#context.parallelPull;
    return await opened(
      progress,
      () =>
        parallel === undefined
          ? pullBlob(this.#context, request)
          : parallelPullBlob(this.#context, request, parallel),
    );
  }

  /**
   * Downloads `length` bytes from `offset`. Every Content-Range is validated before its bytes
   * are exposed; a shorter valid answer is continued, through at most 16 successful 206
   * responses. The digest is not verified (it covers the whole blob).
   *
   * @example Reading the first bytes of a blob
   * ```ts
   * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * using client = new BlobClient({ plainHttp: true });
   * const repository = `${registry.host}/demo/blob`;
   * const bytes = new TextEncoder().encode("hello");
   * const digest = sha256Digest(bytes);
   * await client.push(repository, digest, bytes.length, bytes);
   * const head = await client.pullRange(repository, digest, 0, 4);
   * console.log(await new Response(head).text()); // "hell"
   * ```
   */
  async pullRange(
    repository: Repository | string,
    digest: string,
    offset: number,
    length: number,
    options: BlobPullRangeOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const repo = this.#reading(repository);
    checkDigest(digest);
    checkSize(offset, "offset");
    checkSize(length, "length");
    const progress = new ProgressReporter(options.onProgress, undefined, "downloading", true);
    const request = { repo, digest, offset, length, signal: options.signal, progress };
    return await opened(progress, () => pullRangeBlob(this.#context, request));
  }

  /**
   * Uploads a blob of exactly `size` bytes that hashes to `digest`: monolithic (POST, then one
   * PUT with Content-Length `size`), or in PATCH chunks with the `chunkedUpload` option. The
   * body must end exactly after `size` bytes; short or trailing input is rejected before the
   * commit. A `Uint8Array`, `Blob` or stream factory is re-read from byte zero on a retry; a
   * bare `ReadableStream` allows one attempt. Abandoned sessions are DELETEd (best effort,
   * within 5 s). Callbacks stop before this resolves or rejects.
   *
   * @example Pushing bytes, a Blob, or a stream factory
   * ```ts
   * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * using client = new BlobClient({ plainHttp: true });
   * const repository = `${registry.host}/demo/blob`;
   * const bytes = new TextEncoder().encode("hello");
   * const digest = sha256Digest(bytes);
   * await client.push(repository, digest, bytes.length, bytes);
   * await client.push(repository, digest, bytes.length, new Blob([bytes]));
   * await client.push(repository, digest, bytes.length, () => new Blob([bytes]).stream());
   * console.log(registry.store.hasBlob("demo/blob", digest)); // true
   * ```
   */
  async push(
    repository: Repository | string,
    digest: string,
    size: number,
    body: PushBody,
    options: BlobPushOptions = {},
  ): Promise<void> {
    const repo = this.#target(repository);
    checkDigest(digest);
    checkSize(size, "size");
    const source = toUploadSource(body);
    const progress = new ProgressReporter(options.onProgress, options.onWireProgress);
    try {
      if (source.knownSize !== undefined && source.knownSize !== size) {
        throw new BodyLengthError(
          `PUT blob upload: body ${
            source.knownSize < size ? "shorter" : "longer"
          } than declared size`,
        );
      }
      await pushBlob(this.#context, {
        repo,
        digest,
        size,
        source,
        signal: options.signal,
        progress,
      });
    } catch (err) {
      throw attachSentinel(err);
    } finally {
      progress.close();
    }
  }

  /**
   * Mounts a blob from `source` into `destination` on the same registry without uploading.
   * Returns true when the registry mounted it (201) and false when it declined (202 with an
   * upload session, which is DELETEd); the caller then decides whether to push.
   *
   * @throws {TypeError} The repositories are on different registries.
   *
   * @example Mounting from another repository, pushing when declined
   * ```ts
   * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * using client = new BlobClient({ plainHttp: true });
   * const repository = `${registry.host}/demo/blob`;
   * const bytes = new TextEncoder().encode("hello");
   * const digest = sha256Digest(bytes);
   * await client.push(repository, digest, bytes.length, bytes);
   * const copy = `${registry.host}/demo/copy`;
   * if (!await client.mount(copy, repository, digest)) {
   *   await client.push(copy, digest, bytes.length, bytes);
   * }
   * console.log(await client.exists(copy, digest)); // true
   * ```
   */
  async mount(
    destination: Repository | string,
    source: Repository | string,
    digest: string,
    options: BlobCallOptions = {},
  ): Promise<boolean> {
    const repo = this.#target(destination);
    const from = toRepository(source);
    if (from.host !== toRepository(destination).host) {
      throw new TypeError("mount: source and destination must be on the same registry");
    }
    checkDigest(digest);
    const context = this.#context;
    try {
      const budget = new AttemptBudget(context.policy, context.clock, options.signal);
      return await budget.run(
        "POST blob mount",
        () => mountBlob(repo, digest, from.name, options.signal),
      );
    } catch (err) {
      throw attachSentinel(err);
    }
  }

  /**
   * Closes the connections of the library-owned default transports (not those passed in) and
   * stops the hashing threads of large pulls.
   *
   * @example Closing a client
   * ```ts
   * import { BlobClient } from "@ocipart/ocipart";
   * new BlobClient().close();
   * ```
   */
  close(): void {
    for (const transport of this.#owned) transport.close();
  }

  /**
   * Same as {@linkcode BlobClient.close}, for `using`.
   *
   * @example Closing a client at the end of its scope
   * ```ts
   * import { BlobClient } from "@ocipart/ocipart";
   * using client = new BlobClient();
   * ```
   */
  [Symbol.dispose](): void {
    this.close();
  }

  #target(repository: Repository | string): RemoteRepository {
    const { host, name } = toRepository(repository);
    return this.#session.repository({ registry: host, repository: name }).repo;
  }

  /**
   * The repository whose reads try its mirrors first: one per repository for the client's
   * life, so what its reads learnt of a mirror (resting, a blob it spoilt) holds for the next.
   */
  #reading(repository: Repository | string): RemoteRepository {
    const { host, name } = toRepository(repository);
    const key = `${host}/${name}`;
    let repo = this.#reads.get(key);
    if (repo === undefined) {
      // A blob is read by digest: the mirrors that serve digests (any digest says so).
      const reference = { registry: host, repository: name, digest: BY_DIGEST };
      repo = this.#session.repository(reference, true).repo;
      this.#reads.set(key, repo);
    }
    return repo;
  }
}

/** A digest that marks a reference as read by digest (its value is never sent). */
const BY_DIGEST = `sha256:${"0".repeat(64)}`;

/** Opens a download stream; a failure before the first byte closes its progress. */
async function opened(
  progress: ProgressReporter,
  open: () => Promise<ReadableStream<Uint8Array>>,
): Promise<ReadableStream<Uint8Array>> {
  try {
    return await open();
  } catch (err) {
    progress.close();
    throw attachSentinel(err);
  }
}

function checkDigest(digest: string): void {
  if (typeof digest !== "string" || !isSha256Digest(digest)) {
    throw new TypeError("digest must be sha256:<64 lowercase hex>");
  }
}

function checkSize(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${field} must be a non-negative safe integer, not ${value}`);
  }
}

/** The chunk size of `chunkedUpload`, checked. */
function checkChunkedUpload(option: BlobClientOptions["chunkedUpload"]): number | undefined {
  if (option === undefined) return undefined;
  const chunkSize = option?.chunkSize;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
    throw new RangeError(
      `BlobClient: chunkedUpload.chunkSize must be a positive integer, not ${chunkSize}`,
    );
  }
  return chunkSize;
}

/** The `parallelPull` settings, checked. */
function checkParallelPull(option: BlobClientOptions["parallelPull"]): BlobContext["parallelPull"] {
  if (option === undefined) return undefined;
  const { workers, chunkSize } = option ?? {};
  if (!Number.isSafeInteger(workers) || workers < 1 || workers > 256) {
    throw new RangeError(
      `BlobClient: parallelPull.workers must be an integer in 1..256, not ${workers}`,
    );
  }
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
    throw new RangeError(
      `BlobClient: parallelPull.chunkSize must be a positive integer, not ${chunkSize}`,
    );
  }
  return { workers, chunkSize };
}
