/**
 * Uploads a file range with one HTTP/1.1 request on a connection of its own, written straight
 * from the file to the socket (Deno only). About a third less client CPU than `node:http` for
 * large bodies.
 *
 * @module
 */
import { FileEndedError, LocalFileError } from "../errors/kinds.ts";
import { connectError, ExchangeError, malformedAnswerError, readError } from "./failure.ts";
import type { ProxyRoute } from "./proxy.ts";
import type { FileRange } from "./file_body.ts";
import { BODILESS_STATUSES } from "./response_body.ts";
import { type ByteDuplex, dial, type PeerGuard } from "./dial.ts";
import { denoSockets } from "./deno_socket.ts";

/** What {@linkcode rawFileUpload} sends. */
export interface RawUploadRequest {
  /** The target; `http:` or `https:`. */
  url: URL;
  /** The request method. */
  method: string;
  /** Lower-case header names; `content-length` must equal `range.length` (not checked). */
  headers: Record<string, string>;
  /** The file range that is the body. */
  range: FileRange;
  /** Aborts the exchange with its reason. */
  signal: AbortSignal;
  /** Vets resolved and connected peer addresses; `false` refuses with `PeerRefusedError`. */
  peerGuard?: PeerGuard;
  /** Extra PEM roots for HTTPS. */
  caCerts?: string[];
  /** The forward proxy to go through: a `CONNECT` tunnel for `https:`, absolute-form else. */
  proxy?: ProxyRoute;
}

interface DenoFileApi {
  open(path: string, options: { read: true }): Promise<DenoFile>;
}
interface DenoFile {
  seek(offset: number, whence: 0): Promise<number>;
  read(buffer: Uint8Array): Promise<number | null>;
  close(): void;
}

function denoFiles(): DenoFileApi | undefined {
  const deno = (globalThis as { Deno?: Partial<DenoFileApi> }).Deno;
  return typeof deno?.open === "function" ? deno as DenoFileApi : undefined;
}

/**
 * Whether {@linkcode rawFileUpload} can run here (Deno with TCP, TLS and file access).
 *
 * @example
 * ```ts
 * import { rawUploadAvailable } from "./raw_upload.ts";
 * console.log(typeof rawUploadAvailable()); // "boolean"
 * ```
 */
export function rawUploadAvailable(): boolean {
  return denoSockets(undefined) !== undefined && denoFiles() !== undefined;
}

const CHUNK = 1 << 20;
const READ_CHUNK = 64 * 1024;
const MAX_HEAD = 64 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Sends `request` on a new connection (`Connection: close`): dials through the dialer (the
 * peer guard and the proxy as `dial.ts` applies them; TLS for `https:`), writes the head and
 * then the file range in 1 MiB reads, and resolves with the answer, whose body
 * (content-length, chunked, or up to the close) streams from the connection. An answer that
 * arrives before the body is complete stops the upload and is returned. A file that ends
 * before its range fails with `LocalFileError` before the last byte is sent.
 *
 * @example
 * ```ts ignore
 * const response = await rawFileUpload({ url, method: "PUT", headers, range, signal });
 * ```
 */
export async function rawFileUpload(request: RawUploadRequest): Promise<Response> {
  const sockets = denoSockets(request.caCerts);
  const files = denoFiles();
  if (sockets === undefined || files === undefined) {
    throw new TypeError("raw upload: not available on this runtime");
  }
  const { url, signal } = request;
  if (signal.aborted) throw signal.reason;
  const secure = url.protocol === "https:";
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? (secure ? 443 : 80) : Number(url.port);

  let conn: ByteDuplex | undefined;
  let failure: unknown;
  const onAbort = () => {
    failure ??= signal.reason;
    conn?.close();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  const release = () => {
    signal.removeEventListener("abort", onAbort);
    conn?.close();
  };

  try {
    const { peerGuard, proxy } = request;
    conn = await dial(sockets, { hostname, port, secure }, { peerGuard, proxy, signal });
    if (failure !== undefined) onAbort();
    if (failure !== undefined) throw failure;
    return await exchange(files, conn, request, () => failure, release);
  } catch (err) {
    release();
    throw failure ?? err;
  }
}

// The request's head. Through a proxy, a plain-HTTP request names its whole target and carries
// the proxy's credentials; inside a tunnel it is the origin's request as usual.
function requestHead(request: RawUploadRequest): string {
  const url = request.url;
  const viaProxy = request.proxy !== undefined && url.protocol === "http:";
  const target = viaProxy ? `${url.origin}${url.pathname}${url.search}` : url.pathname + url.search;
  let head = `${request.method} ${target} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  if (viaProxy && request.proxy?.authorization !== undefined) {
    head += `proxy-authorization: ${request.proxy.authorization}\r\n`;
  }
  for (const [name, value] of Object.entries(request.headers)) {
    if (name === "host" || name === "connection" || name === "proxy-authorization") continue;
    head += `${name}: ${value}\r\n`;
  }
  head += "connection: close\r\n\r\n";
  return head;
}

// Sends the request and resolves with the answer, its body streaming from the connection.
async function exchange(
  files: DenoFileApi,
  conn: ByteDuplex,
  request: RawUploadRequest,
  aborted: () => unknown,
  release: () => void,
): Promise<Response> {
  const input = new ConnReader(conn);
  // The answer is read while the body is written: an early answer (413, 401) ends the upload.
  const answer = pendingAnswer(input, request.method);
  const writeError = await sendRequest(files, conn, request, answer, aborted);
  let parsed: ParsedHead;
  try {
    parsed = await answer.head;
  } catch (err) {
    if (aborted() !== undefined) throw aborted();
    // An answer that is not HTTP is told as such, whatever happened to the upload meanwhile.
    if (err instanceof ExchangeError) throw err;
    throw writeError === undefined ? readError(err) : connectError(writeError);
  }
  return answerResponse(input, parsed, request.url, aborted, release);
}

/** The answer's head, read while the request goes out. */
interface PendingAnswer {
  readonly head: Promise<ParsedHead>;
  /** Settles once the head is in or cannot come: either way the upload is over. */
  readonly settled: Promise<true>;
  /** Whether the head is in. */
  answered(): boolean;
}

function pendingAnswer(input: ConnReader, method: string): PendingAnswer {
  let answered = false;
  const head = readHead(input, method).then((parsed) => {
    answered = true;
    return parsed;
  });
  head.catch(() => {});
  const settled = head.then(() => true as const, () => true as const);
  return { head, settled, answered: () => answered };
}

// Writes the head and then the file range. A write that fails is returned, for the answer (if
// one came) to explain; a local file failure or the abort is thrown.
async function sendRequest(
  files: DenoFileApi,
  conn: ByteDuplex,
  request: RawUploadRequest,
  answer: PendingAnswer,
  aborted: () => unknown,
): Promise<unknown> {
  let file: DenoFile | undefined;
  try {
    await conn.write(encoder.encode(requestHead(request)));
    file = await openRange(files, request.range);
    await writeRange(conn, file, request.range, answer);
    return undefined;
  } catch (err) {
    if (err instanceof LocalFileError) throw err;
    if (aborted() !== undefined) throw aborted();
    if (isFileError(err)) {
      throw new LocalFileError("file body: read failed", { cause: err });
    }
    return err;
  } finally {
    try {
      file?.close();
    } catch { /* closed */ }
  }
}

// Writes `range` from `file` (positioned at its start) in chunks, reading the next chunk into
// the other of two buffers while one goes out; stops once the answer is in.
async function writeRange(
  conn: ByteDuplex,
  file: DenoFile,
  range: FileRange,
  answer: PendingAnswer,
): Promise<void> {
  const size = range.chunkSize ?? CHUNK;
  const buffers = [new Uint8Array(Math.min(size, range.length)), new Uint8Array(0)];
  if (range.length > size) buffers[1] = new Uint8Array(size);
  let sent = 0;
  let next = range.length > 0 ? readChunk(file, buffers[0], range.length) : undefined;
  // An answer that is already in skips the loop; the read still settles when the file closes.
  next?.catch(() => {});
  for (let k = 0; next !== undefined && !answer.answered(); k++) {
    const bytes = await next;
    if (answer.answered()) break;
    if (bytes === 0) {
      throw new FileEndedError("file body: file ended before the requested range");
    }
    sent += bytes;
    const chunk = buffers[k & 1].subarray(0, bytes);
    // The next read runs while this chunk goes out; the last chunk is written only once
    // the file has proven to hold the whole range (a read past it is not needed: the range
    // length is what was declared).
    next = sent < range.length
      ? readChunk(file, buffers[(k + 1) & 1], range.length - sent)
      : undefined;
    if (next !== undefined) next.catch(() => {});
    // A bandwidth cap holds the chunk until it may pass (rejecting only on abort).
    await range.pace?.(bytes);
    if (answer.answered()) break;
    const written = conn.write(chunk).then(() => false);
    // A server that answered may have stopped reading: a pending write must not hold the
    // answer back (it fails once the connection is released).
    if (await Promise.race([written, answer.settled])) {
      written.catch(() => {});
      break;
    }
    range.onBytes?.(bytes);
  }
}

// The `Response` of an answer whose head is in: a bodiless status releases the connection at
// once, any other streams its body from it.
function answerResponse(
  input: ConnReader,
  parsed: ParsedHead,
  url: URL,
  aborted: () => unknown,
  release: () => void,
): Response {
  const headers = new Headers();
  for (const [name, value] of parsed.headers) {
    try {
      headers.append(name, value);
    } catch { /* drop a header the Fetch API cannot represent */ }
  }
  let body: ReadableStream<Uint8Array> | null = null;
  if (BODILESS_STATUSES.has(parsed.status)) {
    release();
  } else {
    body = responseBody(input, parsed, aborted, release);
  }
  const response = new Response(body, {
    status: parsed.status,
    statusText: parsed.statusText,
    headers,
  });
  Object.defineProperty(response, "url", { value: url.href });
  return response;
}

function isFileError(err: unknown): boolean {
  return (err as { fileRead?: boolean } | null)?.fileRead === true;
}

async function openRange(files: DenoFileApi, range: FileRange): Promise<DenoFile> {
  let file: DenoFile | undefined;
  try {
    file = await files.open(range.path, { read: true });
    if (range.offset > 0) await file.seek(range.offset, 0);
    return file;
  } catch (err) {
    try {
      file?.close();
    } catch { /* closed */ }
    throw new LocalFileError("file body: read failed", { cause: err });
  }
}

// Fills `buffer` up to `limit` bytes from the file's current position; 0 at the end of file.
async function readChunk(file: DenoFile, buffer: Uint8Array, limit: number): Promise<number> {
  const want = Math.min(buffer.byteLength, limit);
  let filled = 0;
  try {
    while (filled < want) {
      const n = await file.read(buffer.subarray(filled, want));
      if (n === null) break;
      filled += n;
    }
  } catch (err) {
    throw Object.assign(new Error("file read failed", { cause: err }), { fileRead: true });
  }
  return filled;
}

/** Buffered reads from a connection. */
class ConnReader {
  readonly #conn: ByteDuplex;
  #buffer = new Uint8Array(READ_CHUNK);
  #start = 0;
  #end = 0;
  #eof = false;

  constructor(conn: ByteDuplex) {
    this.#conn = conn;
  }

  get buffered(): number {
    return this.#end - this.#start;
  }

  get eof(): boolean {
    return this.#eof && this.buffered === 0;
  }

  /** The bytes buffered and not yet taken (a view, valid until the next read). */
  peek(): Uint8Array {
    return this.#buffer.subarray(this.#start, this.#end);
  }

  /** Reads more bytes into the buffer; false at the end of the stream. */
  async fill(): Promise<boolean> {
    if (this.#eof) return false;
    if (this.#start > 0 && this.#start === this.#end) this.#start = this.#end = 0;
    if (this.#end === this.#buffer.byteLength) {
      const size = this.buffered > this.#buffer.byteLength / 2
        ? this.#buffer.byteLength * 2
        : this.#buffer.byteLength;
      const next = new Uint8Array(size);
      next.set(this.#buffer.subarray(this.#start, this.#end));
      this.#end -= this.#start;
      this.#start = 0;
      this.#buffer = next;
    }
    const n = await this.#conn.read(this.#buffer.subarray(this.#end));
    if (n === null) {
      this.#eof = true;
      return false;
    }
    this.#end += n;
    return true;
  }

  /** A line without its CRLF, or undefined when the stream ends first. */
  async line(limit: number): Promise<string | undefined> {
    for (let scanned = this.#start;;) {
      const at = this.#buffer.subarray(scanned, this.#end).indexOf(10);
      if (at >= 0) {
        const stop = scanned + at;
        const text = decoder.decode(this.#buffer.subarray(this.#start, stop));
        this.#start = stop + 1;
        return text.endsWith("\r") ? text.slice(0, -1) : text;
      }
      scanned = this.#end;
      if (this.buffered > limit) throw new Error("line too long");
      const before = this.#start;
      if (!await this.fill()) return undefined;
      scanned += this.#start - before;
    }
  }

  /** Up to `max` buffered (or newly read) bytes as a copy; empty at the end of the stream. */
  async take(max: number): Promise<Uint8Array> {
    if (this.buffered === 0 && !await this.fill()) return new Uint8Array(0);
    const n = Math.min(max, this.buffered);
    const out = this.#buffer.slice(this.#start, this.#start + n);
    this.#start += n;
    return out;
  }
}

interface ParsedHead {
  status: number;
  statusText: string;
  headers: [string, string][];
  /** How the body is framed. */
  framing: { kind: "length"; length: number } | { kind: "chunked" } | { kind: "close" };
}

// A control character an HTTP head may not hold (a tab may separate words).
// deno-lint-ignore no-control-regex
const HEAD_CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

async function readHead(input: ConnReader, method: string): Promise<ParsedHead> {
  for (;;) {
    // Bytes that end without a line (a TLS alert has none) still tell what answered.
    const first = await input.line(MAX_HEAD);
    if (first === undefined && input.buffered > 0) throw malformedAnswerError(input.peek());
    if (first === undefined) throw new Error("connection closed before an answer");
    const statusLine = first;
    const match = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
    if (!match || HEAD_CONTROL.test(statusLine)) {
      throw malformedAnswerError(new TextEncoder().encode(statusLine));
    }
    const status = Number(match[1]);
    const headers: [string, string][] = [];
    let size = statusLine.length;
    for (;;) {
      const line = await input.line(MAX_HEAD);
      if (line === undefined) throw new Error("connection closed in the answer's head");
      if (line === "") break;
      size += line.length;
      if (size > MAX_HEAD) throw malformedAnswerError(new Uint8Array());
      const colon = line.indexOf(":");
      if (colon <= 0 || HEAD_CONTROL.test(line)) throw malformedAnswerError(new Uint8Array());
      headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
    }
    // 1xx answers (100 Continue) are interim: the final answer follows.
    if (status >= 100 && status < 200) {
      if (status === 101) throw new Error("unexpected protocol switch");
      continue;
    }
    const get = (name: string) =>
      headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
    let framing: ParsedHead["framing"];
    const transfer = get("transfer-encoding").join(",").toLowerCase();
    if (method === "HEAD" || BODILESS_STATUSES.has(status)) {
      framing = { kind: "length", length: 0 };
    } else if (transfer !== "") {
      if (!/(^|,)\s*chunked\s*$/.test(transfer)) throw new Error("unsupported transfer encoding");
      framing = { kind: "chunked" };
    } else if (get("content-length").length > 0) {
      const values = new Set(
        get("content-length").flatMap((v) => v.split(",")).map((v) => v.trim()),
      );
      const [only] = values;
      if (values.size !== 1 || !/^\d+$/.test(only) || !Number.isSafeInteger(Number(only))) {
        throw new Error("malformed content-length");
      }
      framing = { kind: "length", length: Number(only) };
    } else {
      framing = { kind: "close" };
    }
    return { status, statusText: match[2] ?? "", headers, framing };
  }
}

function responseBody(
  input: ConnReader,
  head: ParsedHead,
  aborted: () => unknown,
  release: () => void,
): ReadableStream<Uint8Array> {
  const framing = head.framing;
  let remaining = framing.kind === "length" ? framing.length : 0;
  let chunkLeft = 0;
  let trailers = false;
  const next = async (): Promise<Uint8Array | undefined> => {
    if (framing.kind === "length") {
      if (remaining === 0) return undefined;
      const bytes = await input.take(Math.min(remaining, READ_CHUNK));
      if (bytes.byteLength === 0) throw new Error("connection closed before the body ended");
      remaining -= bytes.byteLength;
      return bytes;
    }
    if (framing.kind === "close") {
      const bytes = await input.take(READ_CHUNK);
      return bytes.byteLength === 0 ? undefined : bytes;
    }
    for (;;) {
      if (trailers) return undefined;
      if (chunkLeft > 0) {
        const bytes = await input.take(Math.min(chunkLeft, READ_CHUNK));
        if (bytes.byteLength === 0) throw new Error("connection closed in a chunk");
        chunkLeft -= bytes.byteLength;
        if (chunkLeft === 0 && (await input.line(1024)) !== "") {
          throw new Error("malformed chunk end");
        }
        return bytes;
      }
      const line = await input.line(1024);
      if (line === undefined) throw new Error("connection closed in a chunk size");
      const size = parseInt(line.split(";")[0].trim(), 16);
      if (!Number.isSafeInteger(size) || size < 0) throw new Error("malformed chunk size");
      if (size === 0) {
        // Trailer lines up to the empty one.
        for (;;) {
          const trailer = await input.line(MAX_HEAD);
          if (trailer === undefined || trailer === "") break;
        }
        trailers = true;
        return undefined;
      }
      chunkLeft = size;
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let bytes: Uint8Array | undefined;
      try {
        bytes = await next();
      } catch (err) {
        release();
        controller.error(aborted() ?? readError(err));
        return;
      }
      if (bytes === undefined) {
        release();
        controller.close();
      } else {
        controller.enqueue(bytes);
      }
    },
    cancel() {
      release();
    },
  }, { highWaterMark: 0 });
}
