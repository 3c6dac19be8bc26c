/**
 * The parted client: push a file to a registry as ordered parts, pull it back.
 *
 * @module
 */
import { coreCount } from "../hashing/sha256_threads.ts";
import { isRegistryHost, isRepositoryName, parseReference } from "../registry/reference.ts";
import type { Descriptor } from "../registry/media_types.ts";
import type { ClientSession, HashWork } from "../remote/session.ts";
import { checkMirrorTable, withMirrorHosts } from "../remote/mirror_table.ts";
import { checkRegistrySettings } from "../remote/registry_settings.ts";
import { connect, type Connection, partedSession } from "./connection.ts";
import type { PartedClientOptions } from "./options.ts";
export type { ExplicitCredential, PartedClientOptions } from "./options.ts";
import type { TransferJob } from "./transfer_job.ts";
import { DEFAULT_PART_SIZE, DEFAULT_WORKERS, isReservedAnnotation } from "./format.ts";
import type { PullDestination } from "./fs_partial.ts";
import type { PushSource } from "./fs_source.ts";
import type { ProgressCallback } from "./progress.ts";
import { type PullResult, runPull } from "./pull.ts";
import { runPush } from "./push.ts";
import type { StreamDestination, StreamSource } from "./stream_ends.ts";
import {
  DEFAULT_MEMORY_WINDOW_BYTES,
  runStreamPull,
  type StreamPullResult,
} from "./stream_pull.ts";
import { runStreamPush } from "./stream_push.ts";
import {
  ArtifactReader,
  DEFAULT_CACHE_PARTS,
  type OpenOptions,
  rangeStream,
  type ReadOptions,
} from "./artifact_reader.ts";
import { type CopyResult, runCopy } from "./copy.ts";
import { type ArtifactDescription, runInspect } from "./inspect.ts";
import { runVerify, type VerifyReport } from "./verify.ts";

/**
 * Options of {@linkcode PartedClient.push}.
 *
 * @example Smaller parts, fewer workers, a time limit
 * ```ts
 * import type { PushOptions } from "@ocipart/ocipart";
 * const options: PushOptions = {
 *   partSize: 64 * 1024 * 1024,
 *   workers: 4,
 *   onProgress: (s) => console.log(s.phase, s.completedBytes, s.totalBytes),
 *   signal: AbortSignal.timeout(3_600_000),
 * };
 * // await client.push("ghcr.io/acme/weights:v1", fromFile("./weights.bin"), options);
 * console.log(options.partSize); // 67108864
 * ```
 */
export interface PushOptions {
  /** Part size in bytes; default 512 MiB. Recorded in the manifest. */
  partSize?: number;
  /** Concurrent part uploads; default 8. */
  workers?: number;
  /**
   * Extra manifest annotations (string values). The format's keys (`dev.ocipart.parted.*`) and
   * `org.opencontainers.image.title`, which push sets to the source's base name, are reserved.
   */
  annotations?: Record<string, string>;
  /** Receives snapshots (at most ~10 a second plus each phase change), synchronously. */
  onProgress?: ProgressCallback;
  /** Cancels the push. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode PartedClient.pull}.
 *
 * @example Cancelling a pull on Ctrl-C
 * ```ts
 * import type { PullOptions } from "@ocipart/ocipart";
 * const stop = new AbortController();
 * const options: PullOptions = { workers: 4, signal: stop.signal };
 * // Deno.addSignalListener("SIGINT", () => stop.abort());
 * // await client.pull("ghcr.io/acme/weights:v1", toFile("./weights.bin"), options);
 * console.log(options.signal?.aborted); // false
 * ```
 */
export interface PullOptions {
  /** Concurrent part fetches and resume hashing; default 8. */
  workers?: number;
  /**
   * Also check the whole-file digest annotation over the bytes on disk: once every part is in
   * place, the partial file is read back and hashed in file order before the rename (one more
   * read and hash of the whole file, after the download); a mismatch rejects with
   * `DigestMismatchError` and nothing is renamed onto the destination. Default false: every part
   * is verified as it is received, and the commit checks that the partial is still the file this
   * pull locked and of the file's size, but not its bytes again.
   */
  verifyFileDigest?: boolean;
  /** Receives snapshots (at most ~10 a second plus each phase change), synchronously. */
  onProgress?: ProgressCallback;
  /** Cancels the pull. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode PartedClient.copy}.
 *
 * @example Four parts at a time, with a time limit
 * ```ts
 * import type { CopyOptions } from "@ocipart/ocipart";
 * const options: CopyOptions = { workers: 4, signal: AbortSignal.timeout(3_600_000) };
 * // await client.copy("ghcr.io/acme/weights:v1", "registry.example/mirror/weights:v1", options);
 * console.log(options.workers); // 4
 * ```
 */
export interface CopyOptions {
  /** Concurrent part copies; default 8. */
  workers?: number;
  /** Receives a snapshot on every change, synchronously (`wireBytes`: bytes streamed). */
  onProgress?: ProgressCallback;
  /** Cancels the copy. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode PartedClient.listTags}.
 *
 * @example At most ten tags, within five seconds
 * ```ts
 * import type { ListTagsOptions } from "@ocipart/ocipart";
 * const options: ListTagsOptions = { limit: 10, signal: AbortSignal.timeout(5_000) };
 * console.log(options.limit); // 10
 * ```
 */
export interface ListTagsOptions {
  /** The most tags asked for. Default: 100. */
  limit?: number;
  /** Stops the request. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode PartedClient.inspect}.
 *
 * @example A time limit
 * ```ts
 * import type { InspectOptions } from "@ocipart/ocipart";
 * const options: InspectOptions = { signal: AbortSignal.timeout(30_000) };
 * console.log(options.signal?.aborted); // false
 * ```
 */
export interface InspectOptions {
  /** Cancels the request. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode PartedClient.verify}.
 *
 * @example Two hashing threads
 * ```ts
 * import type { VerifyOptions } from "@ocipart/ocipart";
 * const options: VerifyOptions = { workers: 2 };
 * console.log(options.workers); // 2
 * ```
 *
 * @example Showing how far the hashing got
 * ```ts
 * import type { VerifyOptions } from "@ocipart/ocipart";
 * const options: VerifyOptions = {
 *   onProgress: (s) => console.log(`${s.phase} ${s.transferredBytes}/${s.totalBytes}`),
 * };
 * options.onProgress!({ phase: "verifying", completedBytes: 0, transferredBytes: 5, wireBytes: 0, totalBytes: 10 });
 * // "verifying 5/10"
 * ```
 */
export interface VerifyOptions {
  /** Parts hashed at once, each on a worker thread; default the number of cores. */
  workers?: number;
  /**
   * Progress of the hashing, in the snapshots push and pull report: phase `verifying`, then
   * `done`; `completedBytes` and `partsDone` count the parts checked whatever their verdict,
   * `transferredBytes` adds the bytes hashed of parts being checked, `partsActive` the parts
   * being hashed, `wireBytes` stays 0. No part events. A callback that throws fails the call.
   */
  onProgress?: ProgressCallback;
  /** Cancels the manifest request and the hashing. */
  signal?: AbortSignal;
}

/**
 * Pushes one large file to an OCI registry as fixed-size parts (one blob each, listed by an
 * OCI image manifest) and pulls it back with resume and verification.
 *
 * @example Push then pull (embedded testing registry)
 * ```ts
 * import { fromFile, PartedClient, toFile } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 *
 * await using registry = await startMemoryRegistry();
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/w.bin`, "weights");
 *
 * using client = new PartedClient({ plainHttp: true }); // HTTPS unless plainHttp
 * const repository = `${registry.host}/org/weights`;
 * const descriptor = await client.push(`${repository}:v1`, fromFile(`${dir}/w.bin`));
 * await client.pull(`${repository}@${descriptor.digest}`, toFile(`${dir}/copy.bin`));
 * console.log(await Deno.readTextFile(`${dir}/copy.bin`)); // "weights"
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class PartedClient {
  readonly #session: ClientSession;
  #closed = false;

  /**
   * Creates a client; nothing is opened until a transfer starts.
   *
   * @throws {TypeError} An option has the wrong type (`transport`, both `credential` and
   * `credentials`, a `registries` entry or setting, a `mirrors` entry or field).
   * @throws {RangeError} A number is out of range, a `registries` key is not a registry
   * `host[:port]`, a `mirrors` prefix, location or mode is invalid, or a mirror's `plainHttp` or
   * `insecure` contradicts its host's `registries` settings.
   */
  constructor(options: PartedClientOptions = {}) {
    const owner = "PartedClient: mirrors";
    if (options.onMirrorTag !== undefined && typeof options.onMirrorTag !== "function") {
      throw new TypeError("PartedClient: onMirrorTag must be a function");
    }
    const mirrors = options.mirrors === undefined
      ? undefined
      : checkMirrorTable(options.mirrors, owner);
    const registries = checkRegistrySettings(options.registries, "PartedClient");
    const registryTable = mirrors === undefined
      ? registries
      : withMirrorHosts(registries, mirrors, owner);
    // One session serves every transfer of this client: keep-alive connections and tokens are
    // reused; a caller's transport is the caller's to manage.
    this.#session = partedSession({ ...options, mirrors, registryTable });
  }

  /**
   * Closes the pooled keep-alive connections of the default transports, which every push and
   * pull of this client shares. Call it once its transfers have settled (a transfer still
   * running loses its connections). The client is usable until closed; afterwards `push` and
   * `pull` reject with a `TypeError`. Idle connections never keep a process alive, but a
   * long-lived program should close the clients it no longer needs.
   *
   * @example Closing a client
   * ```ts
   * import { PartedClient } from "@ocipart/ocipart";
   * const client = new PartedClient({ plainHttp: true });
   * client.close();
   * ```
   */
  close(): void {
    this.#closed = true;
    this.#session.close();
  }

  /**
   * {@linkcode PartedClient.close}, for `using client = new PartedClient(…)`.
   *
   * @example Closing a client at the end of its scope
   * ```ts
   * import { PartedClient } from "@ocipart/ocipart";
   * using client = new PartedClient({ plainHttp: true });
   * ```
   */
  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Pushes the file of `source` to `ref` (`registry/repository:tag`, or `@digest` to write the
   * manifest untagged by its own digest) and returns the manifest's descriptor.
   *
   * @throws {RangeError} A part size or worker count that is not a positive integer, before
   * anything is opened.
   *
   * @example Pushing a file under a tag
   * ```ts
   * import { fromFile, PartedClient, toFile } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * const dir = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${dir}/model.bin`, "weights");
   * using client = new PartedClient({ plainHttp: true });
   * const source = fromFile(`${dir}/model.bin`);
   * const pushed = await client.push(`${registry.host}/org/model:v1`, source);
   * console.log(pushed.artifactType); // "application/vnd.ocipart.parted.v1"
   * console.log(registry.store.tags("org/model")); // ["v1"]
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  async push(
    ref: string,
    source: PushSource | StreamSource,
    options: PushOptions = {},
  ): Promise<Descriptor> {
    const partSize = positive(options.partSize, DEFAULT_PART_SIZE, "part size");
    const workers = positive(options.workers, DEFAULT_WORKERS, "worker count");
    if (source?.kind !== "file" && source?.kind !== "stream") {
      throw new TypeError("push: source must come from fromFile() or fromStream()");
    }
    const annotations = checkAnnotations(options.annotations);
    this.#checkOpen();
    const { job, connection } = this.#transfer(ref, workers, options, false);
    if (source.kind === "stream") {
      return await runStreamPush({
        ...job,
        readable: source.readable,
        partSize,
        annotations,
        ...(source.name === undefined ? {} : { name: source.name }),
        ...(source.spillDirectory === undefined ? {} : { spillDirectory: source.spillDirectory }),
      }, connection);
    }
    return await runPush({ ...job, path: source.path, partSize, annotations }, connection);
  }

  /**
   * Pulls the artifact `ref` into `destination` and resolves to what was written
   * ({@linkcode PullResult}: the file's path, bytes fetched, what was resumed). Each part is
   * verified; the data lands in `<file>.parted-partial`, renamed onto the file only when
   * complete. A rerun after an interruption resumes from the bytes that partial holds: parts
   * that match their digest are kept, and a part written in part continues from where its
   * written bytes end (with a ranged GET, verified as a whole like any other part). The partial
   * is locked for the whole pull (a second pull of the same destination rejects at once with a
   * `LocalFileError`; Deno's `flock`, absent on runtimes without file locks), never opened
   * through a link, and sized only when the file system has room (measured with `statfs`; Deno
   * asks for `--allow-sys=statfs`, and without it the check is skipped). Into a directory
   * (`toDirectory`), a file of the artifact's name is replaced only when allowed; otherwise, as
   * for anything else of that name, the pull rejects with `DestinationExistsError` before any
   * part is fetched.
   *
   * @throws {RangeError} A worker count that is not a positive integer, before anything is
   * opened.
   *
   * @example Pulling by tag, and matching a missing artifact
   * ```ts
   * import { findError, fromFile, NotFoundError, PartedClient, toFile } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * const dir = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${dir}/model.bin`, "weights");
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/org/model:v1`, fromFile(`${dir}/model.bin`));
   * const pulled = await client.pull(`${registry.host}/org/model:v1`, toFile(`${dir}/copy.bin`));
   * console.log(pulled.path === `${dir}/copy.bin`, pulled.bytesFetched); // true 7
   * console.log(await Deno.readTextFile(`${dir}/copy.bin`)); // "weights"
   * const missing = await client.pull(`${registry.host}/org/model:v2`, toFile(`${dir}/v2.bin`))
   *   .catch((err) => err);
   * console.log(findError(missing, NotFoundError) !== undefined); // true
   * await Deno.remove(dir, { recursive: true });
   * ```
   *
   * @example Pulling into a directory without replacing what is there
   * ```ts
   * import { DestinationExistsError, findError, fromFile, PartedClient, toDirectory } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * const dir = await Deno.makeTempDir();
   * await Deno.mkdir(`${dir}/models`);
   * await Deno.writeTextFile(`${dir}/model.bin`, "weights");
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/org/model:v1`, fromFile(`${dir}/model.bin`));
   * const ref = `${registry.host}/org/model:v1`;
   * const first = await client.pull(ref, toDirectory(`${dir}/models`));
   * console.log(first.path === `${dir}/models/model.bin`); // true
   * const again = await client.pull(ref, toDirectory(`${dir}/models`)).catch((err) => err);
   * console.log(findError(again, DestinationExistsError)?.path === first.path); // true
   * await client.pull(ref, toDirectory(`${dir}/models`, { overwrite: true }));
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  async pull(ref: string, destination: PullDestination, options?: PullOptions): Promise<PullResult>;
  /**
   * Pulls `ref` into the writable stream of `toStream()`: the file in order, each part written
   * once the whole part has verified. Parts download in parallel, at most `workers` ahead of
   * the part being written; as many as the destination's memory window holds (default 256 MiB)
   * wait in memory, the others in a temporary directory, removed when the pull ends. A failure
   * aborts the stream after the last verified part written.
   *
   * @example Pulling into a stream
   * ```ts
   * import { fromStream, PartedClient, toStream } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/org/w:v1`, fromStream(new Blob(["weights"]).stream()));
   * const chunks: Uint8Array[] = [];
   * const result = await client.pull(
   *   `${registry.host}/org/w:v1`,
   *   toStream(new WritableStream({ write: (chunk) => void chunks.push(chunk) })),
   * );
   * console.log(result.size, chunks.length); // 7 1
   * ```
   */
  async pull(
    ref: string,
    destination: StreamDestination,
    options?: PullOptions,
  ): Promise<StreamPullResult>;
  async pull(
    ref: string,
    destination: PullDestination | StreamDestination,
    options: PullOptions = {},
  ): Promise<PullResult | StreamPullResult> {
    const workers = positive(options.workers, DEFAULT_WORKERS, "worker count");
    const kind = destination?.kind;
    if (kind !== "file" && kind !== "directory" && kind !== "stream") {
      throw new TypeError("pull: destination must come from toFile(), toDirectory() or toStream()");
    }
    this.#checkOpen();
    const { job, connection } = this.#transfer(ref, workers, options, true);
    if (destination.kind === "stream") {
      return await runStreamPull({
        ...job,
        writable: destination.writable,
        memoryWindowBytes: destination.memoryWindowBytes ?? DEFAULT_MEMORY_WINDOW_BYTES,
        ...(destination.spillDirectory === undefined
          ? {}
          : { spillDirectory: destination.spillDirectory }),
        reuseChunks: destination.reuseChunks === true,
      }, connection);
    }
    return await runPull({
      ...job,
      destination: destination.path,
      intoDirectory: destination.kind === "directory",
      overwrite: destination.overwrite === true,
      verifyFileDigest: options.verifyFileDigest === true,
    }, connection);
  }

  /**
   * Copies the artifact `srcRef` to `dstRef` (another repository, or another registry) without
   * a local file. On one registry each part is mounted from the source repository (uploaded when
   * the registry declines); across registries each part streams from a GET into a PUT, a few
   * chunks in memory at a time, verified by digest as it passes. Parts the target already holds
   * are skipped. The manifest is written byte for byte, so the copy has the source's digest;
   * `dstRef` names a tag, or the source manifest's digest to write it untagged. Each registry
   * is reached with its own credentials.
   *
   * @throws {RangeError} A worker count that is not a positive integer, before anything is
   * opened.
   *
   * @example Copying to another repository
   * ```ts
   * import { fromFile, PartedClient } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry(); // or a real registry host
   * const dir = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${dir}/model.bin`, "weights");
   * using client = new PartedClient({ plainHttp: true });
   * const pushed = await client.push(`${registry.host}/org/model:v1`, fromFile(`${dir}/model.bin`));
   * const copied = await client.copy(`${registry.host}/org/model:v1`, `${registry.host}/mirror/model:v1`);
   * console.log(copied.descriptor.digest === pushed.digest); // true
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  async copy(srcRef: string, dstRef: string, options: CopyOptions = {}): Promise<CopyResult> {
    const workers = positive(options.workers, DEFAULT_WORKERS, "worker count");
    this.#checkOpen();
    const target = parseReference(dstRef);
    const { job } = this.#transfer(srcRef, workers, options, true);
    // Only the source is read through mirrors; the target is written, never mirrored.
    return await runCopy(
      { ...job, target },
      (reference) => connect(this.#session, reference, reference === job.reference),
    );
  }

  /**
   * Opens a random-access reader on the artifact `ref` (one manifest request): its `readAt`
   * returns any byte range. Every part a range touches is fetched whole and verified before
   * any of its bytes is returned (a part's digest is all that vouches for its bytes, so the
   * part size is the granularity); verified parts stay in a bounded cache (`cacheParts`, in
   * memory within `memoryWindowBytes`, else in temporary files, or in `cacheDirectory`), so
   * nearby reads fetch nothing again. Close the reader.
   *
   * @throws {RangeError} `cacheParts` is not a positive integer, or `memoryWindowBytes` is
   * negative.
   *
   * @example Reading bytes 2 to 4
   * ```ts
   * import { fromStream, PartedClient } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/org/w:v1`, fromStream(new Blob(["weights"]).stream()));
   * await using reader = await client.open(`${registry.host}/org/w:v1`);
   * console.log(new TextDecoder().decode(await reader.readAt(2, 3))); // "igh"
   * ```
   */
  async open(ref: string, options: OpenOptions = {}): Promise<ArtifactReader> {
    const cacheParts = positive(options.cacheParts, DEFAULT_CACHE_PARTS, "cacheParts");
    const window = options.memoryWindowBytes ?? DEFAULT_MEMORY_WINDOW_BYTES;
    if (!Number.isSafeInteger(window) || window < 0) {
      throw new RangeError(`memory window must be a non-negative integer, not ${window}`);
    }
    this.#checkOpen();
    const { job, connection } = this.#transfer(ref, 1, options, true);
    return await ArtifactReader.open({
      ...job,
      cacheParts,
      memoryWindowBytes: window,
      ...(options.cacheDirectory === undefined ? {} : { cacheDirectory: options.cacheDirectory }),
      ...(options.spillDirectory === undefined ? {} : { spillDirectory: options.spillDirectory }),
    }, connection());
  }

  /**
   * The bytes `[offset, offset + length)` of the artifact `ref` as a stream (default: the whole
   * file), read as {@linkcode PartedClient.open} reads: each part the range touches fetched
   * whole and verified before its first byte is enqueued. A range past the end of the file
   * errors the stream with a `RangeError`.
   *
   * @example The first three bytes
   * ```ts
   * import { fromStream, PartedClient } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/org/w:v1`, fromStream(new Blob(["weights"]).stream()));
   * const stream = client.read(`${registry.host}/org/w:v1`, { offset: 0, length: 3 });
   * console.log(await new Response(stream).text()); // "wei"
   * ```
   */
  read(ref: string, options: ReadOptions = {}): ReadableStream<Uint8Array> {
    return rangeStream(this.open(ref, options), options.offset ?? 0, options.length);
  }

  /**
   * Describes the artifact `ref` from its manifest alone (nothing else is downloaded): the
   * manifest digest, the file's title annotation, size and digest, the part size and each
   * part's index, offset, size and digest.
   *
   * @example Describing a pushed file
   * ```ts
   * import { fromFile, PartedClient } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * const dir = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${dir}/model.bin`, "weights");
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/org/model:v1`, fromFile(`${dir}/model.bin`));
   * const description = await client.inspect(`${registry.host}/org/model:v1`);
   * console.log(description.fileSize, description.parts.length); // 7 1
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  async inspect(ref: string, options: InspectOptions = {}): Promise<ArtifactDescription> {
    this.#checkOpen();
    const { job, connection } = this.#transfer(ref, 1, options, true);
    return await runInspect(job, connection);
  }

  /**
   * Compares the local file at `path` with the artifact `ref` part by part: each part's range
   * of the file is hashed on a worker thread, several at once, and compared with the part's
   * digest. Only the manifest is downloaded.
   *
   * @throws {LocalFileError} The file is missing, not a regular file, or unreadable.
   *
   * @example Checking a copy
   * ```ts
   * import { fromFile, PartedClient } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * const dir = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${dir}/model.bin`, "weights");
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/org/model:v1`, fromFile(`${dir}/model.bin`));
   * await Deno.writeTextFile(`${dir}/model.bin`, "weighty");
   * const report = await client.verify(`${registry.host}/org/model:v1`, `${dir}/model.bin`);
   * console.log(report.identical, report.differing); // false [ 0 ]
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  async verify(ref: string, path: string, options: VerifyOptions = {}): Promise<VerifyReport> {
    const workers = positive(options.workers, coreCount(), "worker count");
    if (typeof path !== "string" || path === "") {
      throw new TypeError("verify: path must be a non-empty string");
    }
    this.#checkOpen();
    const { job, connection } = this.#transfer(ref, workers, options, true);
    return await runVerify({ ...job, path }, connection);
  }

  /**
   * Checks that the registry `registry` (`host[:port]`) accepts this client's credential, as
   * `docker login` does before it saves one: resolves when it does, rejects with
   * `UnauthorizedError` when it is refused.
   *
   * @throws {TypeError} `registry` is not a registry host.
   *
   * @example Checking a credential
   * ```ts
   * import { PartedClient } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * using client = new PartedClient({
   *   plainHttp: true,
   *   credential: { username: "ci", password: "secret" },
   * });
   * await client.checkLogin(registry.host);
   * console.log("accepted"); // "accepted"
   * ```
   */
  async checkLogin(registry: string, options: InspectOptions = {}): Promise<void> {
    this.#checkOpen();
    options.signal?.throwIfAborted();
    await this.#session.registry(registry).checkLogin(options.signal);
  }

  /**
   * The first `limit` tags (default 100) of the repository of `ref` (`registry/repository`; a
   * tag or digest in it is ignored), in the registry's order. A repository the registry does
   * not know rejects with `NotFoundError`, its `HttpStatusError` carrying `NAME_UNKNOWN`.
   *
   * @throws {RangeError} `limit` is not a positive integer.
   *
   * @example Listing a repository's tags
   * ```ts
   * import { fromFile, PartedClient } from "@ocipart/ocipart";
   * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
   * await using registry = await startMemoryRegistry();
   * const path = await Deno.makeTempFile();
   * await Deno.writeTextFile(path, "hello");
   * using client = new PartedClient({ plainHttp: true });
   * await client.push(`${registry.host}/demo/tags:v1`, fromFile(path));
   * console.log(await client.listTags(`${registry.host}/demo/tags`)); // ["v1"]
   * await Deno.remove(path);
   * ```
   */
  async listTags(ref: string, options: ListTagsOptions = {}): Promise<string[]> {
    const limit = positive(options.limit, 100, "tag limit");
    this.#checkOpen();
    options.signal?.throwIfAborted();
    const { registry, repository } = repositoryOf(ref);
    return await this.#session.registry(registry).tags(repository, limit, options.signal);
  }

  /**
   * The job fields both directions share, and the connection to the reference's registry
   * (through its mirrors when the transfer only `reads`).
   */
  #transfer(
    ref: string,
    workers: number,
    options: PushOptions | PullOptions | CopyOptions | VerifyOptions,
    reads: boolean,
  ): { job: TransferJob; connection: () => Connection } {
    const reference = parseReference(ref);
    const job = {
      reference,
      workers,
      onProgress: "onProgress" in options ? options.onProgress : undefined,
      signal: options.signal,
      policy: this.#session.policy.retry,
      clock: this.#session.clock,
      hashThreads: this.#session.hashThreads,
      hashing: (count: number, work?: HashWork) => this.#session.hashing(count, work),
    };
    return { job, connection: () => connect(this.#session, reference, reads) };
  }

  #checkOpen(): void {
    if (this.#closed) throw new TypeError("PartedClient: the client is closed");
  }
}

function checkAnnotations(
  annotations: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (annotations === undefined) return undefined;
  for (const [key, value] of Object.entries(annotations)) {
    if (key === "" || typeof value !== "string") {
      throw new RangeError(
        `annotations: keys must be non-empty and values strings, not ${JSON.stringify(key)}`,
      );
    }
    if (isReservedAnnotation(key)) {
      throw new RangeError(
        `annotations: ${JSON.stringify(key)} is reserved (dev.ocipart.parted.*, the title)`,
      );
    }
  }
  return { ...annotations };
}

/** The registry and repository of `ref`, with or without a tag or digest. */
function repositoryOf(ref: string): { registry: string; repository: string } {
  const slash = typeof ref === "string" ? ref.indexOf("/") : -1;
  const registry = ref.slice(0, slash);
  const repository = ref.slice(slash + 1);
  if (slash > 0 && isRegistryHost(registry) && isRepositoryName(repository)) {
    return { registry, repository };
  }
  return parseReference(ref);
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer, not ${value}`);
  }
  return value;
}
