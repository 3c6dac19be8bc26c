/**
 * `BlobClient`: push, pull, ranged pull, existence check and cross-repository mount of single
 * blobs, with retries, resumable verified downloads, chunked upload and parallel pull.
 *
 * @module
 */
import { Sha256Threads } from "../registry/sha256_threads.ts";
import { BodyLengthError } from "../errors/kinds.ts";
import { isSha256Digest } from "../registry/digest.ts";
import { blobUrl, registryOrigin, uploadUrl } from "../registry/endpoints.ts";
import { resolveLocation } from "../registry/location.ts";
import { expectStatus } from "../registry/status.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import type { Fetch } from "../transport/fetch.ts";
import { HttpTransport } from "../transport/http_transport.ts";
import type { ExchangeObserver } from "../transport/exchange_observer.ts";
import { guardedExternalTransport } from "../transport/peer_guard.ts";
import { BLOB_RETRY_POLICY, type RetryPolicy, validateRetryPolicy } from "../transport/retry.ts";
import { validateStallTimeout, withStallGuard } from "../transport/stall_guard.ts";
import { AttemptBudget } from "./attempt_budget.ts";
import { type BlobContext, discard, send } from "./context.ts";
import { parallelPullBlob } from "./parallel_pull.ts";
import {
  type BlobProgressCallback,
  ProgressReporter,
  type WireProgressCallback,
} from "./progress.ts";
import { toPublicError } from "./public_error.ts";
import { pullBlob } from "./pull.ts";
import { pullRangeBlob } from "./pull_range.ts";
import { cleanup, pushBlob } from "./push.ts";
import { type Repository, toRepository } from "./repository.ts";
import { type PushBody, toUploadSource } from "./upload_source.ts";

/** Options of {@linkcode BlobClient}. */
export interface BlobClientOptions {
  /**
   * The already-authenticated transport for the registry origin. It must return redirects
   * unfollowed. It is used only for the registry origin. Default: a library-owned
   * `HttpTransport`.
   */
  transport?: Fetch;
  /**
   * The transport for off-origin storage and CDN requests (absolute upload locations,
   * cross-origin redirects); it owns the private-network and peer-address policy. Requests
   * reach it without Authorization, Proxy-Authorization, Cookie and Referer. Default: a
   * library-owned `HttpTransport` that refuses loopback, private, link-local and unspecified
   * peers; pass your own transport to reach storage on such addresses.
   */
  storageTransport?: Fetch;
  /**
   * Attempts and backoff of every operation. Omitted: 4 attempts, full jitter from 250 ms,
   * 30 s cap. A given policy takes `maxAttempts` 1 and the default delays for missing fields,
   * so `{}` means exactly one attempt. `maxAttempts` bounds the whole operation, including
   * resumed downloads and parallel chunk retries.
   */
  retryPolicy?: Partial<RetryPolicy>;
  /**
   * Whether a 307/308 redirect that re-issues a write (POST, PUT, PATCH, DELETE) with a
   * replayable body may be followed. When false every redirect of a write is refused before
   * the target is contacted. Default: true.
   */
  writeRedirects?: boolean;
  /** Talk plain HTTP to the registry. Default: false (HTTPS). */
  plainHttp?: boolean;
  /**
   * Called once per HTTP exchange of the library-owned transports (method, registry or
   * storage, status, bytes, duration; nothing that locates or authenticates).
   */
  onExchange?: ExchangeObserver;
  /** Upload in PATCH chunks of `chunkSize` bytes (raised to a registry's minimum). Off by default. */
  chunkedUpload?: { chunkSize: number };
  /** Download with `workers` concurrent ranged GETs of `chunkSize` bytes. Off by default. */
  parallelPull?: { workers: number; chunkSize: number };
  /** Time source of backoff waits; tests pass a fake one. */
  clock?: Clock;
  /**
   * Milliseconds an exchange may move no bytes (no request-body chunk taken, no answer, no
   * response-body chunk while one is awaited) before its attempt fails with a retryable
   * `StallError`, so the retry policy applies. Applies to both transports. `0` disables.
   * Default: 60 000.
   */
  stallTimeoutMs?: number;
  /**
   * Most threads that hash pulls of 16 MiB or more, so receiving and hashing overlap; each
   * concurrent large pull takes one, started on first use and stopped by `close()`. `0` hashes
   * every pull inline on the calling thread: about 15 MiB less memory per thread, slower where
   * hashing is the bound. Default: the number of cores.
   */
  hashThreads?: number;
}

/** Options every call accepts. */
export interface BlobCallOptions {
  /** Stops network work, retries and backoff; its reason is what the call rejects with. */
  signal?: AbortSignal;
}

/** Options of {@linkcode BlobClient.pull}. */
export interface BlobPullOptions extends BlobCallOptions {
  /** Cumulative bytes delivered to the caller, and the total (−1 while unknown). */
  onProgress?: BlobProgressCallback;
  /** The blob size, when known: checked against the registry and used as the total. */
  size?: number;
}

/** Options of {@linkcode BlobClient.pullRange}. */
export interface BlobPullRangeOptions extends BlobCallOptions {
  /** Cumulative bytes delivered to the caller, out of the requested length. */
  onProgress?: BlobProgressCallback;
}

/** Options of {@linkcode BlobClient.push}. */
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
 * The blob transfer client. It performs no authentication: pass an authenticated
 * `transport` for private registries. Repositories are `{ host, name }` objects or
 * `"<host>[:<port>]/<name>"` strings. Digests are `sha256:<64 hex>`.
 *
 * Errors: registry-origin 404 → `NotFoundError`, 401/403 → `UnauthorizedError`, 413 →
 * `TooLargeError` (each in front of the `HttpStatusError`); off-origin failures never carry
 * those; a pull whose bytes do not hash to the digest errors its stream with
 * `DigestMismatchError`. Use `statusCode(err)` and `retryable(err)` for details. Messages never
 * contain a location, URL, query, path, userinfo or response body.
 *
 * @example Push, check and pull a blob
 * ```ts ignore
 * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
 * const client = new BlobClient({ plainHttp: true });
 * const bytes = new TextEncoder().encode("hello");
 * const digest = sha256Digest(bytes);
 * await client.push("127.0.0.1:5000/demo/blob", digest, bytes.length, bytes);
 * console.log(await client.exists("127.0.0.1:5000/demo/blob", digest)); // true
 * const stream = await client.pull("127.0.0.1:5000/demo/blob", digest);
 * console.log(await new Response(stream).text()); // "hello"
 * client.close();
 * ```
 */
export class BlobClient {
  readonly #context: BlobContext;
  readonly #owned: { close(): void }[] = [];

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
    for (const key of ["transport", "storageTransport"] as const) {
      if (options[key] !== undefined && typeof options[key] !== "function") {
        throw new TypeError(`BlobClient: ${key} must be a fetch-shaped function`);
      }
    }
    for (const key of ["writeRedirects", "plainHttp"] as const) {
      if (options[key] !== undefined && typeof options[key] !== "boolean") {
        throw new TypeError(`BlobClient: ${key} must be a boolean`);
      }
    }
    const policy = resolvePolicy(options.retryPolicy);
    let chunkSize: number | undefined;
    if (options.chunkedUpload !== undefined) {
      chunkSize = options.chunkedUpload?.chunkSize;
      if (!Number.isSafeInteger(chunkSize) || chunkSize! < 1) {
        throw new RangeError("BlobClient: chunkedUpload.chunkSize must be a positive integer");
      }
    }
    let parallelPull: BlobContext["parallelPull"];
    if (options.parallelPull !== undefined) {
      const { workers, chunkSize: size } = options.parallelPull ?? {};
      if (!Number.isSafeInteger(workers) || workers < 1 || workers > 256) {
        throw new RangeError("BlobClient: parallelPull.workers must be an integer in 1..256");
      }
      if (!Number.isSafeInteger(size) || size < 1) {
        throw new RangeError("BlobClient: parallelPull.chunkSize must be a positive integer");
      }
      parallelPull = { workers, chunkSize: size };
    }
    const stallTimeoutMs = validateStallTimeout(options.stallTimeoutMs);
    const clock = options.clock ?? systemClock;
    let transport = options.transport;
    let storageTransport = options.storageTransport;
    if (transport === undefined || storageTransport === undefined) {
      const idle = parallelPull?.workers;
      const base = new HttpTransport({
        ...(idle === undefined ? {} : { maxIdleSocketsPerOrigin: idle }),
        ...(options.onExchange ? { onExchange: options.onExchange } : {}),
      });
      this.#owned.push(base);
      if (transport === undefined) transport = base.fetch;
      if (storageTransport === undefined) {
        // Created on first use: a client whose blobs never leave the registry has no second pool.
        const guarded = guardedExternalTransport(base);
        this.#owned.push(guarded);
        storageTransport = guarded.fetch;
      }
    }
    // A silent peer costs one attempt of the retry policy instead of hanging the call.
    transport = withStallGuard(transport, { stallTimeoutMs });
    storageTransport = withStallGuard(storageTransport, { stallTimeoutMs });
    // Started on the first large pull; one per concurrent pull up to the limit.
    const threadLimit = options.hashThreads ?? globalThis.navigator?.hardwareConcurrency ?? 2;
    if (!Number.isSafeInteger(threadLimit) || threadLimit < 0 || threadLimit > 256) {
      throw new RangeError("BlobClient: hashThreads must be an integer in 0..256");
    }
    const hashThreads = threadLimit === 0 ? undefined : new Sha256Threads(threadLimit);
    if (hashThreads !== undefined) this.#owned.push(hashThreads);
    this.#context = {
      transport,
      storageTransport,
      policy,
      writeRedirects: options.writeRedirects ?? true,
      plainHttp: options.plainHttp ?? false,
      clock,
      chunkSize,
      parallelPull,
      hashThreads,
    };
  }

  /**
   * Reports whether the repository has the blob: HEAD answered 200 (true) or, on the registry
   * origin, 404 (false). Redirects are followed.
   *
   * @example
   * ```ts ignore
   * const present = await client.exists("127.0.0.1:5000/demo/blob", digest);
   * ```
   */
  async exists(
    repository: Repository | string,
    digest: string,
    options: BlobCallOptions = {},
  ): Promise<boolean> {
    const { origin, name } = this.#target(repository);
    checkDigest(digest);
    const operation = "HEAD blob";
    try {
      const budget = new AttemptBudget(this.#context.policy, this.#context.clock, options.signal);
      return await budget.run(operation, async () => {
        const { response, offOrigin } = await send(this.#context, origin, {
          method: "HEAD",
          url: blobUrl(origin, name, digest),
          signal: options.signal,
        }, operation);
        if (response.status === 404 && !offOrigin) {
          await discard(response);
          return false;
        }
        await expectStatus(response, [200], operation, { offOrigin });
        await discard(response);
        return true;
      });
    } catch (err) {
      throw toPublicError(err);
    }
  }

  /**
   * Downloads a blob as a stream that verifies the digest: it closes only when the bytes hash
   * to `digest` and otherwise errors with `DigestMismatchError` instead of closing. Resolves
   * once the registry answered; a broken body is resumed from the last delivered byte when the
   * registry serves ranges. With the `parallelPull` option, chunks are fetched concurrently and
   * emitted in order (single stream when the registry does not serve ranges).
   *
   * @example
   * ```ts ignore
   * const stream = await client.pull("127.0.0.1:5000/demo/blob", digest, {
   *   onProgress: (done, total) => console.log(done, total),
   * });
   * await stream.pipeTo(destination);
   * ```
   */
  async pull(
    repository: Repository | string,
    digest: string,
    options: BlobPullOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const { origin, name } = this.#target(repository);
    checkDigest(digest);
    if (options.size !== undefined) checkSize(options.size, "size");
    const progress = new ProgressReporter(options.onProgress);
    const request = {
      origin,
      name,
      digest,
      size: options.size,
      signal: options.signal,
      progress,
    };
    try {
      const parallel = this.#context.parallelPull;
      return parallel === undefined
        ? await pullBlob(this.#context, request)
        : await parallelPullBlob(this.#context, request, parallel);
    } catch (err) {
      progress.close();
      throw toPublicError(err);
    }
  }

  /**
   * Downloads `length` bytes from `offset`. Every Content-Range is validated before its bytes
   * are exposed; a shorter valid answer is continued, through at most 16 successful 206
   * responses. The digest is not verified (it covers the whole blob).
   *
   * @example
   * ```ts ignore
   * const head = await client.pullRange("127.0.0.1:5000/demo/blob", digest, 0, 512);
   * ```
   */
  async pullRange(
    repository: Repository | string,
    digest: string,
    offset: number,
    length: number,
    options: BlobPullRangeOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const { origin, name } = this.#target(repository);
    checkDigest(digest);
    checkSize(offset, "offset");
    checkSize(length, "length");
    const progress = new ProgressReporter(options.onProgress);
    try {
      return await pullRangeBlob(this.#context, {
        origin,
        name,
        digest,
        offset,
        length,
        signal: options.signal,
        progress,
      });
    } catch (err) {
      progress.close();
      throw toPublicError(err);
    }
  }

  /**
   * Uploads a blob of exactly `size` bytes that hashes to `digest`: monolithic (POST, then one
   * PUT with Content-Length `size`), or in PATCH chunks with the `chunkedUpload` option. The
   * body must end exactly after `size` bytes; short or trailing input is rejected before the
   * commit. A `Uint8Array`, `Blob` or stream factory is re-read from byte zero on a retry; a
   * bare `ReadableStream` allows one attempt. Abandoned sessions are DELETEd (best effort,
   * within 5 s). Callbacks stop before this resolves or rejects.
   *
   * @example
   * ```ts ignore
   * await client.push("127.0.0.1:5000/demo/blob", digest, bytes.length, bytes);
   * ```
   */
  async push(
    repository: Repository | string,
    digest: string,
    size: number,
    body: PushBody,
    options: BlobPushOptions = {},
  ): Promise<void> {
    const { origin, name } = this.#target(repository);
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
        origin,
        name,
        digest,
        size,
        source,
        signal: options.signal,
        progress,
      });
    } catch (err) {
      throw toPublicError(err);
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
   * @example
   * ```ts ignore
   * if (!await client.mount("127.0.0.1:5000/b", "127.0.0.1:5000/a", digest)) {
   *   await client.push("127.0.0.1:5000/b", digest, bytes.length, bytes);
   * }
   * ```
   */
  async mount(
    destination: Repository | string,
    source: Repository | string,
    digest: string,
    options: BlobCallOptions = {},
  ): Promise<boolean> {
    const { origin, name, host } = this.#target(destination);
    const from = toRepository(source);
    if (from.host !== host) {
      throw new TypeError("mount: source and destination must be on the same registry");
    }
    checkDigest(digest);
    const operation = "POST blob mount";
    const context = this.#context;
    try {
      const budget = new AttemptBudget(context.policy, context.clock, options.signal);
      return await budget.run(operation, async () => {
        const { response, url, offOrigin } = await send(context, origin, {
          method: "POST",
          url: uploadUrl(origin, name, { mount: digest, from: from.name }),
          headers: { "content-length": "0" },
          signal: options.signal,
        }, operation);
        if (response.status === 201) {
          await discard(response);
          return true;
        }
        await expectStatus(response, [202], operation, { offOrigin });
        await discard(response);
        // Declined: the registry opened a session instead; it is not continued.
        const location = response.headers.get("location");
        if (location !== null) {
          let session: URL | undefined;
          try {
            session = resolveLocation(location, url, operation);
          } catch {
            // A session that cannot be addressed cannot be cleaned up either.
          }
          if (session !== undefined) {
            await cleanup(context, { origin, signal: options.signal }, session);
          }
        }
        return false;
      });
    } catch (err) {
      throw toPublicError(err);
    }
  }

  /**
   * Closes the connections of the library-owned default transports (not those passed in) and
   * stops the hashing threads of large pulls.
   *
   * @example
   * ```ts
   * import { BlobClient } from "./client.ts";
   * new BlobClient().close();
   * ```
   */
  close(): void {
    for (const transport of this.#owned) transport.close();
  }

  /** Same as {@linkcode BlobClient.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  #target(repository: Repository | string): Repository & { origin: URL } {
    const { host, name } = toRepository(repository);
    return { host, name, origin: registryOrigin(host, { plainHttp: this.#context.plainHttp }) };
  }
}

function resolvePolicy(policy: Partial<RetryPolicy> | undefined): RetryPolicy {
  if (policy === undefined) return { ...BLOB_RETRY_POLICY };
  if (typeof policy !== "object" || policy === null) {
    throw new TypeError("BlobClient: retryPolicy must be an object");
  }
  const resolved = {
    maxAttempts: policy.maxAttempts ?? 1,
    baseDelayMs: policy.baseDelayMs ?? BLOB_RETRY_POLICY.baseDelayMs,
    maxDelayMs: policy.maxDelayMs ?? BLOB_RETRY_POLICY.maxDelayMs,
  };
  validateRetryPolicy(resolved);
  return resolved;
}

function checkDigest(digest: string): void {
  if (typeof digest !== "string" || !isSha256Digest(digest)) {
    throw new TypeError("digest must be sha256:<64 lowercase hex>");
  }
}

function checkSize(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${field} must be a non-negative safe integer`);
  }
}
