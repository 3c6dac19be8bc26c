/**
 * Blob reads: the GET of a whole blob or of its rest from an offset (Content-Range validated,
 * the restart-on-200 rule), and the GET of an explicit byte range.
 *
 * @module
 */
import { LengthMismatchError, ProtocolError } from "../errors/kinds.ts";
import { discard } from "../registry/discard.ts";
import { blobUrl } from "../registry/endpoints.ts";
import { formatRange, parseContentRange, validateContentRange } from "../registry/range.ts";
import { expectStatus, requireIdentityEncoding } from "../registry/status.ts";
import { readSources, watchMirroredBody } from "./mirror_reads.ts";
import type { RemoteRepository } from "./repository.ts";

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
 * import { getBlob } from "./blob_reads.ts";
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
  for (const source of readSources(repo, { digest })) {
    if (source === repo) break;
    try {
      const answer = await getBlobFrom(source, digest, offset, total, signal);
      if (answer === "complete") return answer;
      return { ...answer, body: watchMirroredBody(answer.body, repo, digest), mirrored: true };
    } catch (err) {
      repo.mirrors!.dropped(source, err, signal);
    }
  }
  return await getBlobFrom(repo, digest, offset, total, signal);
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
 * import { probeBlob } from "./blob_reads.ts";
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
 * import { getRange } from "./blob_reads.ts";
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
  for (const source of readSources(repo, { digest })) {
    if (source === repo) break;
    try {
      const portion = await getRangeFrom(source, digest, start, end, total, signal, operation);
      return { ...portion, body: watchMirroredBody(portion.body, repo, digest), mirrored: true };
    } catch (err) {
      repo.mirrors!.dropped(source, err, signal);
    }
  }
  return await getRangeFrom(repo, digest, start, end, total, signal, operation);
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
