/**
 * One request and its answer on `node:http`/`node:https`, as a small state machine:
 *
 * - `sending`: the head and the body go out (a file range from the file, a stream with its exact
 *   declared length); an answer may arrive early and ends the upload.
 * - `answered`: the answer's head is in; the caller gets a `Response` whose body streams from
 *   the socket with backpressure.
 * - `done` / `failed`: the end, reached once; a failure (abort, socket error, length mismatch)
 *   rejects the pending promise or errors the body stream, and destroys the request.
 *
 * @module
 */
import * as http from "node:http";
import * as https from "node:https";
import type * as net from "node:net";
import { open as openFile } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { FileEndedError, LocalFileError } from "../../errors/kinds.ts";
import { OciError } from "../../errors/oci_error.ts";
import { FILE_BODY_CHUNK_SIZE, fileBodyRange, type FileRange } from "../file_body.ts";
import { connectError, failureReason, lengthError, readError } from "../failure.ts";
import { BODILESS_STATUSES } from "../response_body.ts";
import { giveUploadBuffer, takeUploadBuffer } from "./upload_buffers.ts";
import { linkTcpReads } from "./tls_tcp_reads.ts";
import { signalOf } from "../request_signal.ts";

/** What {@linkcode nodeExchange} sends. */
export interface NodeExchangeInit {
  /** The caller's request: method, body, signal and URL (the `Response.url`). */
  request: Request;
  /** Ready `node:http` options: host, port, path, headers and agent. */
  options: https.RequestOptions;
  /** Whether the connection is TLS (`node:https`). */
  secure: boolean;
  /** The request body's declared length, when it has one. */
  declared: number | undefined;
}

type State = "sending" | "answered" | "done" | "failed";

/**
 * Sends `init` and resolves with the answer; see the module doc for the states.
 *
 * @example
 * ```ts ignore
 * const response = await nodeExchange({ request, options, secure: false, declared: undefined });
 * ```
 */
export function nodeExchange(init: NodeExchangeInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    let exchange: NodeExchange;
    try {
      exchange = new NodeExchange(init, resolve, reject);
    } catch (err) {
      // The agent dials inside `request()`: a refusal there (a missing permission) is known.
      reject(failureReason(err) === undefined ? err : connectError(err));
      return;
    }
    exchange.start();
  });
}

class NodeExchange {
  #state: State = "sending";
  #settled = false;
  #failure: unknown;
  #bodyDone: boolean;
  #bodyReader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #answer: http.IncomingMessage | undefined;
  readonly #init: NodeExchangeInit;
  readonly #resolve: (response: Response) => void;
  readonly #reject: (err: unknown) => void;
  readonly #req: http.ClientRequest;
  /** The caller's signal (not the request's own copy, which Node may stop updating). */
  readonly #signal: AbortSignal;
  readonly #onAbort = () => this.#fail(this.#signal.reason);

  constructor(
    init: NodeExchangeInit,
    resolve: (response: Response) => void,
    reject: (err: unknown) => void,
  ) {
    this.#init = init;
    this.#signal = signalOf(init.request);
    this.#resolve = resolve;
    this.#reject = reject;
    this.#bodyDone = init.request.body === null;
    this.#req = (init.secure ? https : http).request(init.options);
  }

  start(): void {
    const { request, declared } = this.#init;
    this.#signal.addEventListener("abort", this.#onAbort, { once: true });
    if (this.#signal.aborted) return this.#fail(this.#signal.reason);
    const req = this.#req;
    if (request.body !== null) this.#oneSocketOnly();
    if (this.#init.secure) req.on("socket", linkTcpReads);
    req.on("error", (err: Error) => this.#onRequestError(err));
    req.on("response", (res: http.IncomingMessage) => this.#onResponse(res));
    const body = request.body;
    const range = fileBodyRange(body);
    if (body === null) {
      req.end();
    } else if (range !== undefined) {
      // The stream itself is never read: cancel it so the request body counts as used.
      body.cancel().catch(() => {});
      if (range.length !== declared) {
        return this.#fail(lengthError(range.length < declared! ? "shorter" : "longer"));
      }
      this.#sendFile(range, declared).catch((err) => this.#fail(err));
    } else {
      this.#sendStream(body, declared!).catch((err) => this.#fail(err));
    }
  }

  // Deno's node:http resends a request whose reused keep-alive connection closes before the
  // answer, replaying only what it still buffers. Part of the body may already have reached the
  // server (an upload session that took part of a PUT answers a resend with 404), so a request
  // with a body is sent on one connection only: a second socket fails it before a byte goes
  // out, and the caller's retry rebuilds the request.
  #oneSocketOnly(): void {
    let sockets = 0;
    this.#req.on("socket", () => {
      if (++sockets > 1) this.#fail(connectError(new Error("connection lost")));
    });
  }

  #fail(err: unknown): void {
    if (this.#failure !== undefined || this.#state === "done") return;
    this.#failure = err;
    this.#state = "failed";
    this.#signal.removeEventListener("abort", this.#onAbort);
    this.#stopBody(err);
    this.#req.destroy();
    if (!this.#settled) {
      this.#settled = true;
      this.#reject(err);
    } else {
      try {
        this.#controller?.error(err);
      } catch { /* already closed or errored */ }
    }
  }

  #stopBody(reason: unknown): void {
    if (this.#bodyDone) return;
    this.#bodyDone = true;
    const body = this.#init.request.body;
    this.#bodyReader?.cancel(reason).catch(() => {});
    if (!this.#bodyReader && body && !body.locked) body.cancel(reason).catch(() => {});
  }

  #onRequestError(err: Error): void {
    if (this.#failure !== undefined) return;
    // Already classified (peer guard, proxy tunnel): passed on as it is.
    if (err instanceof OciError) return this.#fail(err);
    const answer = this.#answer;
    if (answer !== undefined) {
      // A server that answered early (413, 401) may refuse the rest of the upload: once its
      // whole answer is in, the failed write does not matter and the answer stays readable.
      if (answer.complete) return;
      return this.#fail(readError(err));
    }
    this.#fail(connectError(err));
  }

  #onResponse(res: http.IncomingMessage): void {
    if (this.#failure !== undefined) {
      res.destroy();
      return;
    }
    this.#answer = res;
    this.#state = "answered";
    // An answer before the whole body was sent ends the upload; the connection cannot be
    // reused because the server never received the declared length.
    const earlyAnswer = !this.#bodyDone;
    if (earlyAnswer) this.#stopBody(undefined);
    const status = res.statusCode ?? 0;
    const nullBody = this.#init.request.method === "HEAD" || BODILESS_STATUSES.has(status);
    const finish = () => {
      this.#signal.removeEventListener("abort", this.#onAbort);
      if (earlyAnswer) this.#req.destroy();
    };
    const stream = nullBody ? null : this.#bodyStream(res, finish);
    if (nullBody) {
      res.on("end", finish);
      res.resume();
    }
    let response: Response;
    try {
      response = new Response(stream, {
        status,
        statusText: res.statusMessage ?? "",
        headers: answerHeaders(res),
      });
    } catch (err) {
      return this.#fail(connectError(err));
    }
    Object.defineProperty(response, "url", { value: this.#init.request.url });
    const deliver = () => {
      if (this.#failure !== undefined) return;
      this.#settled = true;
      this.#resolve(response);
    };
    // Without a body the answer is complete once the message ends, which also hands the
    // connection back to the pool before the caller's next request.
    if (nullBody) res.once("end", deliver);
    else deliver();
  }

  #bodyStream(res: http.IncomingMessage, finish: () => void): ReadableStream<Uint8Array> {
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        res.on("data", (chunk: Uint8Array) => {
          if (this.#failure !== undefined) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) res.pause();
        });
        res.on("end", () => {
          if (this.#failure !== undefined) return;
          this.#state = "done";
          finish();
          controller.close();
        });
        res.on("error", (err: Error) => this.#fail(readError(err)));
        res.on("close", () => {
          if (this.#failure === undefined && !res.complete) {
            this.#fail(readError(new Error("connection closed")));
          }
        });
      },
      pull: () => {
        res.resume();
      },
      cancel: () => {
        this.#signal.removeEventListener("abort", this.#onAbort);
        this.#failure ??= new Error("cancelled");
        // An unread remainder would have to be drained before reuse: drop the connection.
        res.destroy();
        this.#req.destroy();
      },
    }, new ByteLengthQueuingStrategy({ highWaterMark: 1 << 20 }));
    res.pause();
    return stream;
  }

  async #sendFile(range: FileRange, length: number): Promise<void> {
    const req = this.#req;
    if (length === 0) {
      this.#bodyDone = true;
      req.end();
      return;
    }
    // Two reused buffers: one is read from disk while the other is on its way to the socket.
    // Fresh buffers per chunk doubled peak RSS and cost CPU in allocation.
    const size = range.chunkSize ?? FILE_BODY_CHUNK_SIZE;
    const buffers = [takeUploadBuffer(size), takeUploadBuffer(size)];
    const inFlight: Promise<boolean>[] = [Promise.resolve(true), Promise.resolve(true)];
    let handle: FileHandle | undefined;
    let sent = 0;
    try {
      handle = await openFile(range.path, "r");
      // Body chunks go to the socket directly once the head is out: node:http's write path
      // corks every write into a writev, which costs a copy of each chunk.
      const socket = await connectedSocket(req);
      if (this.#bodyDone || socket === undefined) return;
      req.flushHeaders();
      for (let k = 0; sent < length; k++) {
        const buffer = buffers[k & 1];
        await inFlight[k & 1];
        if (this.#bodyDone) return;
        const want = Math.min(buffer.byteLength, length - sent);
        const { bytesRead } = await handle.read(buffer, 0, want, range.offset + sent);
        if (this.#bodyDone) return;
        if (bytesRead === 0) {
          return this.#fail(
            new FileEndedError("file body: file ended before the requested range"),
          );
        }
        try {
          // A bandwidth cap holds the chunk until it may pass (rejecting only on abort).
          await range.pace?.(bytesRead);
        } catch (err) {
          return this.#fail(err);
        }
        if (this.#bodyDone) return;
        sent += bytesRead;
        const chunk = buffer.subarray(0, bytesRead);
        inFlight[k & 1] = writeFlushed(req, socket, chunk, range.onBytes);
      }
      const written = await Promise.all(inFlight);
      if (this.#bodyDone) return;
      // Every read and write of the range is done: the buffers go back for the next request.
      if (written.every(Boolean)) buffers.forEach(giveUploadBuffer);
      this.#bodyDone = true;
      req.end();
    } catch (err) {
      if (!this.#bodyDone) this.#fail(new LocalFileError("file body: read failed", { cause: err }));
    } finally {
      await handle?.close().catch(() => {});
    }
  }

  async #sendStream(stream: ReadableStream<Uint8Array>, length: number): Promise<void> {
    const req = this.#req;
    let sent = 0;
    try {
      const reader = this.#bodyReader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (this.#bodyDone) return;
        if (done) {
          if (sent !== length) return this.#fail(lengthError("shorter"));
          this.#bodyDone = true;
          req.end();
          return;
        }
        if (value.byteLength === 0) continue;
        if (sent + value.byteLength > length) return this.#fail(lengthError("longer"));
        sent += value.byteLength;
        if (sent === length) {
          // The last declared byte completes the request: confirm the body ends first.
          if (!await this.#endsHere(reader)) return;
          this.#bodyDone = true;
          req.end(value);
          return;
        }
        if (!req.write(value)) await drained(req);
      }
    } catch (err) {
      if (!this.#bodyDone) this.#fail(err);
    }
  }

  // Whether the body has nothing after its declared length (fails the exchange if it has).
  async #endsHere(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<boolean> {
    for (;;) {
      const next = await reader.read();
      if (this.#bodyDone) return false;
      if (next.done) return true;
      if (next.value.byteLength > 0) {
        this.#fail(lengthError("longer"));
        return false;
      }
    }
  }
}

function answerHeaders(res: http.IncomingMessage): Headers {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i], raw[i + 1]);
    } catch { /* drop a header the Fetch API cannot represent */ }
  }
  return headers;
}

// Resolves once `chunk` has been handed to the socket (or the request is gone), so its buffer
// may be reused.
function writeFlushed(
  req: http.ClientRequest,
  socket: net.Socket,
  chunk: Uint8Array,
  onWritten?: (bytes: number) => void,
): Promise<boolean> {
  const bytes = chunk.byteLength;
  return new Promise((resolve) => {
    const done = (written: boolean) => {
      req.off("close", closed);
      resolve(written);
    };
    // A request that closes first may leave the write pending: the chunk is not known done.
    const closed = () => done(false);
    req.on("close", closed);
    socket.write(chunk, (err) => {
      if (!err) onWritten?.(bytes);
      done(!err);
    });
  });
}

// The request's socket once it is connected, or undefined if the request ends first.
function connectedSocket(req: http.ClientRequest): Promise<net.Socket | undefined> {
  return new Promise((resolve) => {
    const onClose = () => resolve(undefined);
    req.once("close", onClose);
    const ready = (socket: net.Socket) => {
      req.off("close", onClose);
      resolve(req.destroyed ? undefined : socket);
    };
    const onSocket = (socket: net.Socket) => {
      if (socket.connecting) socket.once("connect", () => ready(socket));
      else ready(socket);
    };
    if (req.socket) onSocket(req.socket);
    else req.once("socket", onSocket);
  });
}

function drained(req: http.ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      req.off("drain", done);
      req.off("close", done);
      resolve();
    };
    req.on("drain", done);
    req.on("close", done);
  });
}
