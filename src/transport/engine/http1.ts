/**
 * The minimal HTTP/1.1 client of the transport's own connections (file uploads and downloads on
 * the runtime's sockets): the request head, the answer's head, and its body read from the
 * connection. A body of a known length is a byte stream that reads straight into the caller's
 * buffers; the others (chunked, up to the close) are read in pieces. An answer read to its end
 * tells whether its connection may carry another request.
 *
 * @module
 */
import { malformedAnswerError, readError } from "../failure.ts";
import type { ProxyRoute } from "./proxy.ts";
import { BODILESS_STATUSES } from "../response_body.ts";
import type { ByteDuplex } from "./dial.ts";

const READ_CHUNK = 64 * 1024;
const MAX_HEAD = 64 * 1024;

// A head's bytes as the Fetch API holds header values: one character per byte (ISO-8859-1), so
// a byte that is not UTF-8 reaches the caller's checks as it came instead of being replaced.
function byteString(bytes: Uint8Array): string {
  let text = "";
  for (let at = 0; at < bytes.byteLength; at += 8192) {
    text += String.fromCharCode(...bytes.subarray(at, at + 8192));
  }
  return text;
}

/** What a request head names. */
export interface HeadRequest {
  url: URL;
  method: string;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** The forward proxy, when the request goes through one. */
  proxy?: ProxyRoute;
}

// Through a proxy, a plain-HTTP request names its whole target and carries
// the proxy's credentials; inside a tunnel it is the origin's request as usual.
/**
 * The request's head; unless `keepAlive`, it ends the connection after the answer
 * (`connection: close`).
 */
export function requestHead(request: HeadRequest, keepAlive = false): string {
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
  return head + (keepAlive ? "\r\n" : "connection: close\r\n\r\n");
}

/**
 * Called once when an answer is done with its connection: `reusable` when its body was read to
 * its end, the server keeps the connection open, and nothing more arrived on it.
 */
export type Release = (reusable: boolean) => void;

// The `Response` of an answer whose head is in: a bodiless answer releases the connection at
// once, any other streams its body from it.
export function answerResponse(
  input: ConnReader,
  parsed: ParsedHead,
  url: URL,
  aborted: () => unknown,
  release: Release,
): Response {
  const headers = new Headers();
  for (const [name, value] of parsed.headers) {
    try {
      headers.append(name, value);
    } catch { /* drop a header the Fetch API cannot represent */ }
  }
  let body: ReadableStream<Uint8Array> | null = null;
  const ended = () => release(parsed.persistent && input.buffered === 0 && !input.eof);
  if (parsed.bodiless) {
    ended();
  } else {
    body = parsed.framing.kind === "length"
      ? lengthBody(input, parsed.framing.length, aborted, release, ended)
      : responseBody(input, parsed, aborted, release, ended);
  }
  const response = new Response(body, {
    status: parsed.status,
    statusText: parsed.statusText,
    headers,
  });
  Object.defineProperty(response, "url", { value: url.href });
  return response;
}

/** Buffered reads from a connection. */
export class ConnReader {
  readonly #conn: ByteDuplex;
  #buffer = new Uint8Array(READ_CHUNK);
  #start = 0;
  #end = 0;
  #eof = false;
  #received = false;

  constructor(conn: ByteDuplex) {
    this.#conn = conn;
  }

  get buffered(): number {
    return this.#end - this.#start;
  }

  get eof(): boolean {
    return this.#eof && this.buffered === 0;
  }

  /** Whether any byte came from the connection. */
  get received(): boolean {
    return this.#received;
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
    this.#received = true;
    this.#end += n;
    return true;
  }

  /** A line without its CRLF, or undefined when the stream ends first. */
  async line(limit: number): Promise<string | undefined> {
    for (let scanned = this.#start;;) {
      const at = this.#buffer.subarray(scanned, this.#end).indexOf(10);
      if (at >= 0) {
        const stop = scanned + at;
        const text = byteString(this.#buffer.subarray(this.#start, stop));
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

  /**
   * Reads into `into`: first what is buffered, else straight from the connection (no copy, no
   * allocation); 0 at the end of the stream.
   */
  async readInto(into: Uint8Array): Promise<number> {
    if (this.buffered > 0) {
      const n = Math.min(into.byteLength, this.buffered);
      into.set(this.#buffer.subarray(this.#start, this.#start + n));
      this.#start += n;
      return n;
    }
    if (this.#eof) return 0;
    const n = await this.#conn.read(into);
    if (n === null) {
      this.#eof = true;
      return 0;
    }
    this.#received = true;
    return n;
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

/** An answer's head and how its body is framed. */
export interface ParsedHead {
  status: number;
  statusText: string;
  headers: [string, string][];
  /** How the body is framed. */
  framing: { kind: "length"; length: number } | { kind: "chunked" } | { kind: "close" };
  /** An answer without a body: to a HEAD, or of a status that has none. */
  bodiless: boolean;
  /** Whether the server keeps the connection open after the answer (HTTP/1.1, no `close`). */
  persistent: boolean;
}

// A control character an HTTP head may not hold (a tab may separate words).
// deno-lint-ignore no-control-regex
const HEAD_CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

// The start of a status line, up to where a close may have cut it: `HTTP/1.1 200 OK` or any
// prefix of it (the version's prefix alone, a status of up to three digits, a reason).
// deno-lint-ignore no-control-regex
const STATUS_LINE_START = /^HTTP\/1\.[01](?: \d{0,3}(?: [^\x00-\x08\x0a-\x1f\x7f]*)?)?\r?$/;
const latin1 = new TextDecoder("latin1");

// Whether `bytes`, a line a close cut short, begins as a status line does.
function startsLikeStatusLine(bytes: Uint8Array): boolean {
  const text = latin1.decode(bytes.subarray(0, 256));
  return "HTTP/1.".startsWith(text) || STATUS_LINE_START.test(text);
}

/** Reads an answer's head (1xx answers skipped). */
export async function readHead(input: ConnReader, method: string): Promise<ParsedHead> {
  for (;;) {
    // Bytes that end without a line (a TLS alert has none) still tell what answered.
    const first = await input.line(MAX_HEAD);
    if (first === undefined && input.buffered > 0) {
      // A close in the middle of a status line cut the connection; it was no other protocol.
      if (startsLikeStatusLine(input.peek())) {
        throw new Error("connection closed in the answer's head");
      }
      throw malformedAnswerError(input.peek());
    }
    if (first === undefined) throw new Error("connection closed before an answer");
    const statusLine = first;
    const match = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(statusLine);
    if (!match || HEAD_CONTROL.test(statusLine)) {
      throw malformedAnswerError(new TextEncoder().encode(statusLine));
    }
    const status = Number(match[2]);
    // A status the Fetch API cannot hold (below 100, above 599) is no HTTP answer.
    if (status < 100 || status > 599) throw malformedAnswerError(new Uint8Array());
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
    const bodiless = method === "HEAD" || BODILESS_STATUSES.has(status);
    if (bodiless) {
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
    const closes = get("connection").join(",").toLowerCase().split(",").some((token) =>
      token.trim() === "close"
    );
    // A status without a body that announces one anyway (a 204 with a length, say) may send it:
    // its connection must not carry the next request, which could take those bytes for its answer.
    const announcesBody = method !== "HEAD" && BODILESS_STATUSES.has(status) &&
      (transfer !== "" || get("content-length").some((value) => !/^\s*0\s*$/.test(value)));
    const persistent = match[1] === "1" && !closes && framing.kind !== "close" && !announcesBody;
    return { status, statusText: match[3] ?? "", headers, framing, bodiless, persistent };
  }
}

function responseBody(
  input: ConnReader,
  head: ParsedHead,
  aborted: () => unknown,
  release: Release,
  ended: () => void,
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
        if (aborted() !== undefined) throw aborted();
        bytes = await next();
      } catch (err) {
        release(false);
        controller.error(aborted() ?? readError(err));
        return;
      }
      if (bytes === undefined) {
        ended();
        controller.close();
      } else {
        controller.enqueue(bytes);
      }
    },
    cancel() {
      release(false);
    },
  }, { highWaterMark: 0 });
}

// A body of `length` bytes as a byte stream: a reader's own buffers are filled straight from the
// connection, so a download allocates nothing per read (other readers get 64 KiB pieces).
function lengthBody(
  input: ConnReader,
  length: number,
  aborted: () => unknown,
  release: Release,
  ended: () => void,
): ReadableStream<Uint8Array> {
  let remaining = length;
  const finish = (controller: ReadableByteStreamController) => {
    ended();
    controller.close();
    controller.byobRequest?.respond(0);
  };
  return new ReadableStream({
    type: "bytes",
    autoAllocateChunkSize: READ_CHUNK,
    start(controller) {
      if (remaining === 0) finish(controller);
    },
    async pull(controller) {
      const request = controller.byobRequest!;
      const view = request.view!;
      // The last read may ask for more than is left: bytes past the body that came with it
      // show a server out of step, whose connection must not carry another request. How much
      // one read asks for is the reader's choice (its view).
      let n: number;
      try {
        // Bytes already held (here or by the socket) must not pass once the request was aborted.
        if (aborted() !== undefined) throw aborted();
        n = await input.readInto(view);
        if (n === 0) throw new Error("connection closed before the body ended");
      } catch (err) {
        release(false);
        controller.error(aborted() ?? readError(err));
        return;
      }
      if (n > remaining) {
        request.respond(remaining);
        remaining = 0;
        release(false);
        controller.close();
        return;
      }
      remaining -= n;
      request.respond(n);
      if (remaining === 0) finish(controller);
    },
    cancel() {
      release(false);
    },
  });
}
