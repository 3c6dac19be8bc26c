/**
 * The one resumable blob reader: every blob download of both clients reads through it (a
 * verifying pull, a ranged pull, each chunk of a parallel pull, each part of a parted pull).
 * It asks for the blob (or a byte range of it), validates every answer before its bytes are
 * handed on, and when a body breaks it continues from the byte reached with a ranged GET,
 * within the operation's attempt budget (docs/protocol.md#ranged-pull).
 *
 * Two kinds of read:
 * - whole (no `end`): the blob from `offset` to its end, by `getBlob` (mirrors first when the
 *   repository has them). A registry that answers a continuation with the whole blob (200) is
 *   either skipped past (`wholeAgain: "skip"`, for a stream that cannot take bytes back) or
 *   read again from byte zero (`"restart"`: the next chunk says so by its offset).
 * - ranged (`end` set): `[offset, end]` through as many 206 portions as the server splits it
 *   into ({@linkcode MAX_RANGE_PORTIONS} at most); a 200 is never a range.
 *
 * Every read ends with the body checked: a body longer than it said is a `ProtocolError` (not
 * retried; `LengthMismatchError` for a whole blob: another blob than the one asked for), a
 * shorter one a break.
 *
 * The requests themselves are here too (`getBlob`, `probeBlob`, `getRange`: the GET, its
 * `Range`, and the status and `Content-Range` checks), so a read goes from the reader straight
 * to `RemoteRepository.send`.
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { LengthMismatchError, NetworkError, ProtocolError } from "../errors/kinds.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import { concatBytes } from "../registry/bytes.ts";
import { discard } from "../registry/discard.ts";
import { blobUrl } from "../registry/endpoints.ts";
import { formatRange, parseContentRange, validateContentRange } from "../registry/range.ts";
import { expectStatus, requireIdentityEncoding } from "../registry/status.ts";
import { openByob } from "../transport/byob_body.ts";
import { blobMirrorsFirst } from "./mirror_reads.ts";
import type { RemoteRepository } from "./repository.ts";
import type { AttemptBudget } from "./retry.ts";

/** At most this many successful 206 answers complete one ranged read. */
export const MAX_RANGE_PORTIONS = 16;

/**
 * Reads that arrive within `GATHER_MS` of each other are joined up to `EMIT_BYTES` by
 * {@linkcode BlobReader.readJoined}: a fast link delivers 64 KiB reads, and each one costs a
 * hash update and a consumer write; a slow link is never held back for longer than a read plus
 * `GATHER_MS`.
 */
export const EMIT_BYTES: number = 1 << 20;
const GATHER_MS = 10;

/** What a read asks for and how it may continue. */
export interface BlobReadOptions {
  /** Names the read in the exhausted budget's error, e.g. `part 3: download`. Default: the GET. */
  label?: string;
  /** The first byte wanted. Default: 0. */
  offset?: number;
  /** The last byte wanted (inclusive): a ranged read. Default: the blob's end (a whole read). */
  end?: number;
  /** The blob's size, when known (checked against every answer). */
  total?: number;
  /** The operation's attempt budget: every failed request and every broken body spends one. */
  budget: AttemptBudget;
  /** Stops the read; its reason is what a stopped read throws. */
  signal: AbortSignal;
  /** A whole read's answer to a continuation that is the whole blob again. Default: `"skip"`. */
  wholeAgain?: "skip" | "restart";
  /** The first answer, already received (a parallel pull's probe). */
  first?: BlobBody | RangePortion;
}

/** Bytes of the blob and where they belong. */
export interface BlobChunk {
  /** The bytes. */
  bytes: Uint8Array;
  /**
   * The blob offset of `bytes[0]`: the position before the read, or 0 when a `"restart"` read
   * begins the blob again.
   */
  offset: number;
}

/** The answer being read. */
interface Answer {
  reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  byob: ReturnType<typeof openByob>;
  body: ReadableStream<Uint8Array>;
  /** The last byte the answer carries (inclusive), when known. */
  end: number | undefined;
  /** Bytes at the start of the body that were already read (a 200 to a skipping continuation). */
  skip: number;
}

/**
 * A blob's bytes in order from one or more answers (see the module documentation).
 *
 * @example Reading a blob whole
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
 * import { completeUpload, openUpload } from "./uploads.ts";
 * import { BlobReader } from "./blob_reader.ts";
 * import { AttemptBudget } from "./retry.ts";
 * import { BLOB_SPEC_POLICY } from "./policy.ts";
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
 * await completeUpload(repo, session, digest, bytes.length, { make: () => bytes, replayable: true }, undefined);
 * const signal = new AbortController().signal;
 * const budget = new AttemptBudget(BLOB_SPEC_POLICY.retry, undefined, signal);
 * const reader = await BlobReader.open(repo, digest, { budget, signal, offset: 1 });
 * const chunk = await reader.read();
 * console.log(chunk?.offset, new TextDecoder().decode(chunk?.bytes)); // 1 "ello"
 * ```
 */
export class BlobReader {
  readonly #repo: RemoteRepository;
  readonly #digest: string;
  readonly #options: BlobReadOptions;
  readonly #operation: string;
  readonly #label: string;
  #answer: Answer | undefined;
  #position: number;
  #total: number | undefined;
  #ranges = false;
  #mirrored = false;
  #portions = 0;
  #complete = false;
  /** A read taken while joining that ended the body or failed: the next read handles it. */
  #held: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
  /** The caller's buffer, as the read that found an answer's end handed it back. */
  #handedBack: ArrayBuffer | undefined;

  private constructor(repo: RemoteRepository, digest: string, options: BlobReadOptions) {
    this.#repo = repo;
    this.#digest = digest;
    this.#options = options;
    this.#operation = options.end === undefined ? "GET blob" : "GET blob range";
    this.#label = options.label ?? this.#operation;
    this.#position = options.offset ?? 0;
    this.#total = options.total;
  }

  /**
   * Sends the read's first request within the budget (or takes `options.first`) and resolves
   * once its answer was validated; a failure the budget does not absorb rejects.
   */
  static async open(
    repo: RemoteRepository,
    digest: string,
    options: BlobReadOptions,
  ): Promise<BlobReader> {
    const reader = new BlobReader(repo, digest, options);
    if (options.first !== undefined) reader.#take(options.first);
    else await options.budget.run(reader.#label, () => reader.#request());
    return reader;
  }

  /** The blob offset of the next byte. */
  get position(): number {
    return this.#position;
  }

  /** The blob's size, once known. */
  get total(): number | undefined {
    return this.#total;
  }

  /** Whether a mirror sent any of the bytes read so far (since the last restart). */
  get mirrored(): boolean {
    return this.#mirrored;
  }

  /**
   * The next bytes, or undefined once everything asked for was read and its end checked. With
   * `into`, the bytes are read into it (its buffer is taken; the chunk's bytes are a view of
   * that buffer, or of a fresh one of the same size when a read broke), at most its length.
   */
  async read(into?: Uint8Array): Promise<BlobChunk | undefined> {
    const size = into?.byteLength ?? 0;
    for (;;) {
      // A read into `into` that ended or broke took its buffer: the next one needs another.
      if (into !== undefined && into.byteLength === 0) into = new Uint8Array(size);
      if (this.#answer === undefined && !(await this.#next())) return undefined;
      const answer = this.#answer!;
      let bytes: Uint8Array | undefined;
      try {
        bytes = await this.#readBody(answer, into);
      } catch (err) {
        await this.#broke(err);
        continue;
      }
      if (bytes === undefined) continue;
      const offset = this.#position;
      this.#position += bytes.byteLength;
      return { bytes, offset };
    }
  }

  /** The next bytes, with the reads that arrived together joined (up to `EMIT_BYTES`). */
  async readJoined(): Promise<BlobChunk | undefined> {
    const first = await this.read();
    if (first === undefined || first.bytes.byteLength >= EMIT_BYTES) return first;
    const answer = this.#answer;
    if (answer?.reader === undefined) return first;
    const pieces = [first.bytes];
    let length = first.bytes.byteLength;
    const until = performance.now() + GATHER_MS;
    while (length < EMIT_BYTES && performance.now() < until && this.#answer === answer) {
      const read = answer.reader.read();
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await read;
      } catch {
        this.#held = read;
        break;
      }
      if (result.done) {
        this.#held = read;
        break;
      }
      const bytes = this.#withoutSkipped(answer, result.value);
      this.#checkRoom(answer, bytes.byteLength);
      this.#position += bytes.byteLength;
      pieces.push(bytes);
      length += bytes.byteLength;
    }
    return { bytes: concatBytes(pieces, length), offset: first.offset };
  }

  /**
   * The buffer of the caller's last `read(into)` when that read found the end instead of bytes
   * (the read took it; here it is back, to be used again), once; else undefined.
   */
  takeBuffer(): ArrayBuffer | undefined {
    const buffer = this.#handedBack;
    this.#handedBack = undefined;
    return buffer;
  }

  /** Stops the answer being read; never throws. */
  async cancel(reason?: unknown): Promise<void> {
    const answer = this.#answer;
    this.#answer = undefined;
    if (answer === undefined) return;
    const stop = answer.byob ?? answer.reader ?? answer.body;
    await stop.cancel(reason).catch(() => {});
  }

  /** One read of the answer's body; undefined when it ended where it should (the answer is done). */
  async #readBody(answer: Answer, into: Uint8Array | undefined): Promise<Uint8Array | undefined> {
    const result = await this.#readOnce(answer, into);
    if (result.done || result.value === undefined) {
      // A read into the caller's buffer that found the end hands the (empty) buffer back.
      if (result.value !== undefined) this.#handedBack = result.value.buffer as ArrayBuffer;
      const end = answer.end;
      if (end !== undefined && this.#position <= end) {
        throw new NetworkError(`${this.#operation}: body ended early`);
      }
      this.#answer = undefined;
      if (end === undefined) this.#complete = true;
      return undefined;
    }
    const bytes = this.#withoutSkipped(answer, result.value);
    if (bytes.byteLength === 0) return await this.#readBody(answer, into);
    this.#checkRoom(answer, bytes.byteLength);
    return bytes;
  }

  #readOnce(
    answer: Answer,
    into: Uint8Array | undefined,
  ): Promise<ReadableStreamReadResult<Uint8Array>> {
    const held = this.#held;
    this.#held = undefined;
    if (held !== undefined) return held;
    if (into !== undefined && answer.skip === 0) {
      answer.byob ??= answer.reader === undefined ? openByob(answer.body) : undefined;
      if (answer.byob !== undefined) {
        // Past the answer's end one byte is still asked for: the body must end there.
        const room = answer.end === undefined ? into.byteLength : answer.end + 1 - this.#position;
        return answer.byob.read(into.subarray(0, Math.max(1, Math.min(into.byteLength, room))));
      }
    }
    answer.reader ??= answer.body.getReader();
    return answer.reader.read();
  }

  /** Fails when `length` more bytes would pass what the answer (or the blob) holds. */
  #checkRoom(answer: Answer, length: number): void {
    const end = answer.end ?? (this.#total === undefined ? undefined : this.#total - 1);
    if (end === undefined || this.#position + length <= end + 1) return;
    // A whole answer longer than the blob is another blob; a portion past its range, a fault.
    if (this.#options.end !== undefined) {
      throw new ProtocolError(`${this.#operation}: body longer than its Content-Range`);
    }
    throw new LengthMismatchError(`${this.#operation}: body longer than the blob size`);
  }

  #withoutSkipped(answer: Answer, value: Uint8Array): Uint8Array {
    if (answer.skip === 0) return value;
    const dropped = Math.min(answer.skip, value.byteLength);
    answer.skip -= dropped;
    return value.subarray(dropped);
  }

  /**
   * Moves to the next answer once the last one ended where it should: false when the read is
   * over (everything asked for arrived, or the registry said nothing is left).
   */
  async #next(): Promise<boolean> {
    const end = this.#options.end ?? (this.#total === undefined ? undefined : this.#total - 1);
    if (this.#complete || (end !== undefined && this.#position > end)) return false;
    // A ranged read continues with the next portion; a whole read's answer runs to the end.
    await this.#options.budget.run(this.#label, () => this.#request());
    return !this.#complete;
  }

  /**
   * After a body broke with `err`: spends an attempt and asks for the rest. A whole read from
   * a server that does not serve ranges cannot skip its way past byte zero.
   */
  async #broke(err: unknown): Promise<void> {
    const { signal, budget, wholeAgain } = this.#options;
    const answer = this.#answer;
    this.#answer = undefined;
    void (answer?.byob ?? answer?.reader)?.cancel().catch(() => {});
    if (signal.aborted || isAbortError(err)) throw signal.reason ?? err;
    if (err instanceof ProtocolError) throw err;
    const failure = asNetworkFailure(this.#operation, err, undefined, "body read failed");
    const skipping = this.#options.end === undefined && (wholeAgain ?? "skip") === "skip";
    if (skipping && !this.#ranges && this.#position > 0) throw failure;
    await budget.failed(this.#label, failure);
    await budget.run(this.#label, () => this.#request());
  }

  /** Sends the request for the bytes from the position on and takes its answer. */
  async #request(): Promise<void> {
    const { signal, end } = this.#options;
    if (end === undefined) {
      const answer = await getBlob(this.#repo, this.#digest, this.#position, this.#total, signal);
      if (answer === "complete") this.#complete = true;
      else this.#take(answer);
      return;
    }
    if (this.#portions >= MAX_RANGE_PORTIONS) {
      throw new ProtocolError(`${this.#operation}: range split into too many portions`);
    }
    const portion = await getRange(
      this.#repo,
      this.#digest,
      this.#position,
      end,
      this.#total,
      signal,
    );
    this.#take(portion);
  }

  #take(answer: BlobBody | RangePortion): void {
    const total = answer.total ?? this.#total;
    this.#total = total;
    let end: number | undefined;
    let skip = 0;
    if (answer.mirrored === true) this.#mirrored = true;
    if ("end" in answer) {
      this.#portions++;
      end = answer.end;
    } else {
      this.#ranges ||= answer.ranges;
      end = total === undefined ? undefined : total - 1;
      if (answer.start < this.#position) {
        if (this.#options.wholeAgain === "restart") {
          // The whole blob again: the next chunk's offset tells the caller to start over.
          this.#position = answer.start;
          this.#mirrored = answer.mirrored === true;
        } else skip = this.#position - answer.start;
      }
    }
    this.#answer = { reader: undefined, byob: undefined, body: answer.body, end, skip };
  }
}

/** A blob answer whose headers were validated; its body is unread. */
export interface BlobBody {
  /** The body to read. */
  body: ReadableStream<Uint8Array>;
  /**
   * The blob offset of the body's first byte: the requested offset for a 206, 0 for a 200
   * (the registry ignored the range and sends the whole blob again).
   */
  start: number;
  /** The blob's total size when known (the caller's, or stated by the answer). */
  total: number | undefined;
  /** True when the server showed it serves byte ranges. */
  ranges: boolean;
  /** True when a mirror of the repository answered instead of the registry. */
  mirrored?: boolean;
}

/** A ranged answer whose Content-Range was validated. */
export interface RangePortion {
  /** The body: exactly `end - start + 1` bytes are expected. */
  body: ReadableStream<Uint8Array>;
  /** First byte of the portion. */
  start: number;
  /** Last byte of the portion (inclusive). */
  end: number;
  /** The blob size the server stated, if any. */
  total: number | undefined;
  /** True when a mirror of the repository answered instead of the registry. */
  mirrored?: boolean;
}

/**
 * GET blob from byte `offset` (a `bytes=<offset>-` Range when `offset > 0`), with the blob's
 * `total` size when known. A 206 must start at `offset`, agree with `total` and reach the end;
 * a 200 is the whole blob from byte 0 (its Content-Length must equal a known `total`, else
 * `LengthMismatchError`). Returns `"complete"` for the terminal 416 case: `bytes *\/N` with N
 * equal to `offset` and to any known total (the 416 body is never read).
 *
 * @example Reading a blob from an offset
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
 * import { completeUpload, openUpload } from "./uploads.ts";
 * import { getBlob } from "./blob_reader.ts";
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
 * const answer = await getBlob(repo, digest, 2, bytes.length, undefined);
 * if (answer !== "complete") console.log(answer.start, await new Response(answer.body).text());
 * // 2 "llo"
 * ```
 */
export async function getBlob(
  repo: RemoteRepository,
  digest: string,
  offset: number,
  total: number | undefined,
  signal: AbortSignal | undefined,
): Promise<BlobBody | "complete"> {
  return await blobMirrorsFirst(
    repo,
    digest,
    signal,
    (source) => getBlobFrom(source, digest, offset, total, signal),
  );
}

/** {@linkcode getBlob} from one host: the registry or one of its mirrors. */
async function getBlobFrom(
  repo: RemoteRepository,
  digest: string,
  offset: number,
  total: number | undefined,
  signal: AbortSignal | undefined,
): Promise<BlobBody | "complete"> {
  const operation = "GET blob";
  const headers: Record<string, string> = { "accept-encoding": "identity" };
  if (offset > 0) headers.range = formatRange(offset);
  const { response, offOrigin } = await repo.send({
    method: "GET",
    url: blobUrl(repo.origin, repo.name, digest),
    headers,
    signal,
  }, operation);
  if (offset > 0 && response.status === 416 && isCompleteAnswer(response, offset, total)) {
    await discard(response);
    return "complete";
  }
  if (response.status === 206 && offset > 0) {
    return await validated(response, () => {
      requireIdentityEncoding(response, operation);
      const range = validateContentRange(
        response.headers.get("content-range"),
        { start: offset, end: total === undefined ? undefined : total - 1, total },
        operation,
      );
      if (range.total !== undefined && range.end !== range.total - 1) {
        throw new ProtocolError(`${operation}: Content-Range does not reach the end`);
      }
      return { body: bodyOf(response), start: offset, total: range.total ?? total, ranges: true };
    });
  }
  await expectStatus(response, [200], operation, { offOrigin });
  return await wholeBody(response, total, operation);
}

/** What the probe of a parallel download found. */
export type ProbeAnswer =
  | { kind: "empty" }
  | { kind: "whole"; answer: BlobBody }
  | { kind: "ranged"; portion: RangePortion; total: number };

/**
 * The first GET of a parallel download: `bytes=0-<end>`. A 206 is the first portion (its
 * Content-Range must state the total); a 200 means the registry does not serve ranges (the
 * whole blob follows); a 416 stating a total of 0 is an empty blob (`size` unknown or 0).
 *
 * @example Probing whether the registry serves ranges
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
 * import { completeUpload, openUpload } from "./uploads.ts";
 * import { probeBlob } from "./blob_reader.ts";
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
 * const probe = await probeBlob(repo, digest, 1, undefined, undefined);
 * if (probe.kind === "ranged") await probe.portion.body.cancel();
 * console.log(probe.kind); // "ranged"
 * ```
 */
export async function probeBlob(
  repo: RemoteRepository,
  digest: string,
  end: number,
  size: number | undefined,
  signal: AbortSignal | undefined,
): Promise<ProbeAnswer> {
  const operation = "GET blob";
  const { response, offOrigin } = await repo.send({
    method: "GET",
    url: blobUrl(repo.origin, repo.name, digest),
    headers: { "accept-encoding": "identity", range: formatRange(0, end) },
    signal,
  }, operation);
  // An empty blob: nothing can satisfy a range. Never read this body.
  if (response.status === 416 && isCompleteAnswer(response, 0, size || undefined)) {
    await discard(response);
    return { kind: "empty" };
  }
  if (response.status === 200) {
    return { kind: "whole", answer: await wholeBody(response, size, operation) };
  }
  await expectStatus(response, [206], operation, { offOrigin });
  return await validated(response, () => {
    requireIdentityEncoding(response, operation);
    const range = validateContentRange(
      response.headers.get("content-range"),
      { start: 0, total: size },
      operation,
    );
    if (range.total === undefined) {
      throw new ProtocolError(`${operation}: Content-Range has no total`);
    }
    if (range.end > end) throw new ProtocolError(`${operation}: Content-Range exceeds the request`);
    const portion = { body: bodyOf(response), start: 0, end: range.end, total: range.total };
    return { kind: "ranged", portion, total: range.total };
  });
}

/** A 200 answer: the whole blob, whose Content-Length must equal a known `total`. */
function wholeBody(
  response: Response,
  total: number | undefined,
  operation: string,
): Promise<BlobBody> {
  return validated(response, () => {
    requireIdentityEncoding(response, operation);
    const length = contentLength(response);
    if (total !== undefined && length !== undefined && length !== total) {
      throw new LengthMismatchError(`${operation}: Content-Length differs from the blob size`);
    }
    return {
      body: bodyOf(response),
      start: 0,
      total: total ?? length,
      ranges: acceptsRanges(response),
    };
  });
}

/**
 * Sends one ranged GET for `[start, end]` (mirrors first, as {@linkcode getBlob}) and validates
 * the 206 answer: the portion must begin at `start`, end at or before `end`, and agree with a
 * known total. Anything but 206 is an error (a 200 means the server ignored the range).
 *
 * @example Reading two bytes
 * ```ts
 * import { sha256Digest } from "../hashing/sha256.ts";
 * import { completeUpload, openUpload } from "./uploads.ts";
 * import { getRange } from "./blob_reader.ts";
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
 * const portion = await getRange(repo, digest, 1, 2, undefined, undefined);
 * console.log(await new Response(portion.body).text()); // "el"
 * ```
 */
export async function getRange(
  repo: RemoteRepository,
  digest: string,
  start: number,
  end: number,
  total: number | undefined,
  signal: AbortSignal | undefined,
  operation = "GET blob range",
): Promise<RangePortion> {
  return await blobMirrorsFirst(
    repo,
    digest,
    signal,
    (source) => getRangeFrom(source, digest, start, end, total, signal, operation),
  );
}

/** {@linkcode getRange} from one host: the registry or one of its mirrors. */
async function getRangeFrom(
  repo: RemoteRepository,
  digest: string,
  start: number,
  end: number,
  total: number | undefined,
  signal: AbortSignal | undefined,
  operation: string,
): Promise<RangePortion> {
  const { response, offOrigin } = await repo.send({
    method: "GET",
    url: blobUrl(repo.origin, repo.name, digest),
    headers: { "accept-encoding": "identity", range: formatRange(start, end) },
    signal,
  }, operation);
  await expectStatus(response, [206], operation, { offOrigin });
  return await validated(response, () => {
    requireIdentityEncoding(response, operation);
    const range = validateContentRange(
      response.headers.get("content-range"),
      { start, total },
      operation,
    );
    if (range.end > end) throw new ProtocolError(`${operation}: Content-Range exceeds the request`);
    return {
      body: bodyOf(response),
      start: range.start,
      end: range.end,
      total: range.total ?? total,
    };
  });
}

/** `Accept-Ranges: bytes` on a response. */
export function acceptsRanges(response: Response): boolean {
  return /\bbytes\b/i.test(response.headers.get("accept-ranges") ?? "");
}

/** The Content-Length of a response, when present and valid. */
export function contentLength(response: Response): number | undefined {
  const value = response.headers.get("content-length");
  if (value === null || !/^\d+$/.test(value)) return undefined;
  const length = Number(value);
  return Number.isSafeInteger(length) ? length : undefined;
}

/** The body of a response, or an empty stream when it has none. */
export function bodyOf(response: Response): ReadableStream<Uint8Array> {
  return response.body ?? new ReadableStream({ start: (c) => c.close() });
}

/** Runs `check` over a response's headers; a failed check releases the unread body. */
async function validated<T>(response: Response, check: () => T): Promise<T> {
  try {
    return check();
  } catch (err) {
    await discard(response);
    throw err;
  }
}

/** A 416 that says the blob ends exactly at `offset` (and at any known total). */
function isCompleteAnswer(response: Response, offset: number, total: number | undefined): boolean {
  const value = response.headers.get("content-range");
  if (value === null) return false;
  try {
    const parsed = parseContentRange(value);
    return "unsatisfied" in parsed && parsed.total === offset &&
      (total === undefined || total === offset);
  } catch {
    return false;
  }
}
