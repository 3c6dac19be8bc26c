/**
 * The default transport: a {@linkcode Fetch} on `node:http`/`node:https` that frames streamed
 * bodies with their exact Content-Length, pools connections per origin, and checks every peer
 * address before a byte is written.
 *
 * @module
 */
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as dns from "node:dns";
import { open as openFile } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import * as tls from "node:tls";
import { LocalFileError, PeerRefusedError } from "../errors/kinds.ts";
import { FILE_BODY_CHUNK_SIZE, fileBodyRange, type FileRange } from "./file_body.ts";
import type { Fetch } from "./fetch.ts";
import { type PlatformFetch, platformFetch } from "./platform_fetch.ts";
import { rawFileUpload, rawUploadAvailable } from "./raw_upload.ts";
import { connectError, lengthError, OPERATION, readError } from "./failure.ts";
import { platformExchange } from "./platform_exchange.ts";

// File-range bodies go out on a connection of their own, written from the file by a minimal
// HTTP/1.1 client where the runtime allows it: a third less CPU than node:http's write path.
const RAW_UPLOADS = rawUploadAvailable();

/** Options of {@linkcode HttpTransport}. */
export interface HttpTransportOptions {
  /** Extra PEM root certificates trusted for HTTPS, in addition to the runtime's roots. */
  caCerts?: string[];
  /**
   * Decides whether a peer address may be connected to; `false` refuses the request with
   * `PeerRefusedError`. Consulted for every address a host name resolves to (before dialing),
   * for IP-literal hosts (before dialing), and with the socket's actual remote address once
   * connected, before any request byte is written.
   */
  peerGuard?: (address: string, family: 4 | 6) => boolean;
  /**
   * Maximum concurrent `node:http` connections per origin (default 32); further requests wait.
   * Downloads on the runtime's own client (see {@linkcode HttpTransport}) are not capped.
   */
  maxSocketsPerOrigin?: number;
  /** Maximum idle connections kept per origin (default: `maxSocketsPerOrigin`). */
  maxIdleSocketsPerOrigin?: number;
}

const NULL_BODY_STATUSES = new Set([204, 205, 304]);
// Methods whose body-less requests carry no framing; the others get `content-length: 0`.
const BODYLESS_METHODS = new Set(["GET", "HEAD", "DELETE", "OPTIONS", "TRACE", "CONNECT"]);
const DEFAULT_MAX_SOCKETS = 32;
// Body-less methods sent through the runtime's client: the downloads and existence checks.
const PLATFORM_METHODS = new Set(["GET", "HEAD"]);

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/**
 * A fetch-shaped HTTP/1.1 client on `node:http`/`node:https`, used by both libraries unless a
 * caller supplies its own {@linkcode Fetch}.
 *
 * - A request with a body must carry a `content-length` header (else `TypeError`); the body is
 *   streamed with exactly that length and never with chunked transfer encoding. A body that
 *   turns out shorter or longer destroys the request before it is complete and rejects with
 *   `BodyLengthError`. Bodies made by `fileBody()` are read from the file directly; on Deno
 *   they go out on a connection of their own (`Connection: close`, peer guard and TLS roots
 *   as usual, not counted by `maxSocketsPerOrigin`) written by a minimal HTTP/1.1 client.
 * - The response body is a `ReadableStream` that pulls from the socket with backpressure; HEAD,
 *   204, 205 and 304 answers have a null body; 1xx answers are never surfaced.
 * - Redirects are returned, never followed; nothing is decompressed; there is no cookie jar.
 * - Connections are kept alive in a pool per origin; {@linkcode HttpTransport.external} is a
 *   separately pooled twin for cross-host requests.
 * - On Deno, GET and HEAD requests of a transport without `peerGuard` go through the runtime's
 *   own HTTP/1.1 client (its own pool, closed by {@linkcode HttpTransport.close}): downloads
 *   run faster and with less memory. They carry `accept-encoding: identity` (a request that
 *   accepts another encoding stays on `node:http`), are never decompressed or redirected, and
 *   are not counted by `maxSocketsPerOrigin`. Everything else, and every request of a guarded transport, uses
 *   `node:http`.
 * - `request.signal` aborts the request at any point (also mid-body) with the signal's reason
 *   and destroys its socket. Connection failures reject with a retryable `NetworkError`.
 *
 * @example A request and its streamed answer
 * ```ts ignore
 * import { HttpTransport } from "./http_transport.ts";
 * const transport = new HttpTransport();
 * const response = await transport.fetch(new Request("http://127.0.0.1:5000/v2/"));
 * console.log(response.status);
 * await response.body?.cancel();
 * transport.close();
 * ```
 */
export class HttpTransport {
  /** The transport as a {@linkcode Fetch}; bound, so it can be passed around on its own. */
  readonly fetch: Fetch;
  readonly #options: Readonly<HttpTransportOptions>;
  readonly #httpAgent: http.Agent;
  readonly #httpsAgent: https.Agent;
  readonly #platform: PlatformFetch | undefined;
  #external: HttpTransport | undefined;

  /** Creates a transport; no connection is opened until the first request. */
  constructor(options: HttpTransportOptions = {}) {
    const maxSockets = options.maxSocketsPerOrigin ?? DEFAULT_MAX_SOCKETS;
    if (!Number.isSafeInteger(maxSockets) || maxSockets < 1) {
      throw new RangeError("HttpTransport: maxSocketsPerOrigin must be a positive integer");
    }
    const maxFreeSockets = options.maxIdleSocketsPerOrigin ?? maxSockets;
    if (!Number.isSafeInteger(maxFreeSockets) || maxFreeSockets < 0) {
      throw new RangeError("HttpTransport: maxIdleSocketsPerOrigin must be a non-negative integer");
    }
    if (options.caCerts !== undefined && !Array.isArray(options.caCerts)) {
      throw new TypeError("HttpTransport: caCerts must be an array of PEM strings");
    }
    if (options.peerGuard !== undefined && typeof options.peerGuard !== "function") {
      throw new TypeError("HttpTransport: peerGuard must be a function");
    }
    this.#options = Object.freeze({
      ...options,
      caCerts: options.caCerts === undefined ? undefined : [...options.caCerts],
    });
    const agentOptions = {
      keepAlive: true,
      maxSockets,
      maxFreeSockets,
      scheduling: "lifo",
    } as const;
    this.#httpAgent = new http.Agent(agentOptions);
    const ca = trustedRoots(this.#options.caCerts);
    this.#httpsAgent = new https.Agent({ ...agentOptions, ...(ca ? { ca } : {}) });
    const guard = this.#options.peerGuard;
    if (guard) {
      guardConnections(this.#httpAgent, guard, false);
      guardConnections(this.#httpsAgent, guard, true);
    }
    // Downloads of the registry-origin transport go through the runtime's own client where
    // there is one (Deno): about twice the throughput of node:http and a fraction of its
    // memory. A guarded transport keeps node:http, the only client that shows the peer address.
    this.#platform = guard ? undefined : platformFetch({
      ...(this.#options.caCerts ? { caCerts: this.#options.caCerts } : {}),
      maxIdlePerHost: maxFreeSockets,
    });
    this.fetch = (request: Request) => this.#fetch(request);
  }

  /**
   * The lazily created, separately pooled twin for cross-host requests (storage redirects,
   * token realms): same TLS roots, peer guard and tuning, its own connections. Created once and
   * cached; {@linkcode HttpTransport.close} closes it too.
   *
   * @example
   * ```ts
   * import { HttpTransport } from "./http_transport.ts";
   * const transport = new HttpTransport();
   * console.log(transport.external() === transport.external()); // true
   * transport.close();
   * ```
   */
  external(): HttpTransport {
    this.#external ??= this.clone();
    return this.#external;
  }

  /**
   * A new transport with its own connection pool and the same options, except `overrides`.
   *
   * @example A guarded copy
   * ```ts
   * import { HttpTransport } from "./http_transport.ts";
   * import { isForbiddenPeerAddress } from "./peer_policy.ts";
   * const transport = new HttpTransport();
   * const guarded = transport.clone({ peerGuard: (address) => !isForbiddenPeerAddress(address) });
   * guarded.close();
   * transport.close();
   * ```
   */
  clone(overrides: HttpTransportOptions = {}): HttpTransport {
    return new HttpTransport({ ...this.#options, ...overrides });
  }

  /**
   * Destroys every pooled and in-use connection, including those of
   * {@linkcode HttpTransport.external}. Requests in flight fail with `NetworkError`; a later
   * request opens new connections.
   *
   * @example
   * ```ts
   * import { HttpTransport } from "./http_transport.ts";
   * new HttpTransport().close();
   * ```
   */
  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
    this.#platform?.close();
    this.#external?.close();
  }

  #fetch(request: Request): Promise<Response> {
    try {
      return this.#send(request);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #send(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const secure = url.protocol === "https:";
    if (!secure && url.protocol !== "http:") {
      throw new TypeError(`${OPERATION}: unsupported URL scheme`);
    }
    if (url.username !== "" || url.password !== "") {
      throw new TypeError(`${OPERATION}: URL must not carry credentials`);
    }
    const signal = request.signal;
    if (signal.aborted) return Promise.reject(signal.reason);

    const headers: Record<string, string> = {};
    for (const [name, value] of request.headers) {
      if (name === "transfer-encoding" || name === "connection" || name === "keep-alive") continue;
      headers[name] = value;
    }
    const body = request.body;
    let declared: number | undefined;
    if (headers["content-length"] !== undefined) {
      const text = headers["content-length"].trim();
      declared = /^\d+$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(declared)) {
        throw new TypeError(`${OPERATION}: content-length header is not a valid length`);
      }
      headers["content-length"] = String(declared);
    }
    if (body !== null && declared === undefined) {
      throw new TypeError(`${OPERATION}: a request body needs a content-length header`);
    }
    if (body === null && declared === undefined && !BODYLESS_METHODS.has(request.method)) {
      headers["content-length"] = "0";
      declared = 0;
    }

    // The runtime's client decodes any compressed answer unless it asked for identity, so a
    // request that accepts an encoding stays on node:http, which never decodes.
    const encoding = headers["accept-encoding"]?.trim().toLowerCase();
    if (
      body === null && this.#platform !== undefined && PLATFORM_METHODS.has(request.method) &&
      (encoding === undefined || encoding === "identity")
    ) {
      return platformExchange(this.#platform, request, headers);
    }

    const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    const guard = this.#options.peerGuard;
    const literalFamily = net.isIP(hostname);
    if (guard && literalFamily !== 0 && !guard(hostname, literalFamily as 4 | 6)) {
      return Promise.reject(new PeerRefusedError(OPERATION));
    }

    const fileRange = fileBodyRange(body);
    if (fileRange !== undefined && RAW_UPLOADS) {
      // The stream itself is never read: cancel it so the request body counts as used.
      body!.cancel().catch(() => {});
      if (fileRange.length !== declared) {
        return Promise.reject(lengthError(fileRange.length < declared! ? "shorter" : "longer"));
      }
      return rawFileUpload({
        url,
        method: request.method,
        headers,
        range: fileRange,
        signal,
        ...(guard ? { peerGuard: guard } : {}),
        ...(this.#options.caCerts ? { caCerts: this.#options.caCerts } : {}),
      });
    }

    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      let failure: unknown;
      let responseController: ReadableStreamDefaultController<Uint8Array> | undefined;
      let bodyDone = body === null;
      let bodyReader: ReadableStreamDefaultReader<Uint8Array> | undefined;

      const fail = (err: unknown) => {
        if (failure !== undefined) return;
        failure = err;
        signal.removeEventListener("abort", onAbort);
        stopBody(err);
        req.destroy();
        if (!settled) {
          settled = true;
          reject(err);
        } else if (responseController) {
          try {
            responseController.error(err);
          } catch { /* already closed or errored */ }
        }
      };
      const stopBody = (reason: unknown) => {
        if (bodyDone) return;
        bodyDone = true;
        bodyReader?.cancel(reason).catch(() => {});
        if (!bodyReader && body && !body.locked) body.cancel(reason).catch(() => {});
      };
      const onAbort = () => fail(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });

      const options: https.RequestOptions = {
        protocol: url.protocol,
        hostname,
        port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
        path: url.pathname + url.search,
        method: request.method,
        headers,
        agent: secure ? this.#httpsAgent : this.#httpAgent,
      };
      const req = secure ? https.request(options) : http.request(options);
      if (body !== null) {
        // Deno's node:http resends a request whose reused keep-alive connection closes before
        // the answer, replaying only what it still buffers. Part of the body may already have
        // reached the server (an upload session that took part of a PUT answers a resend with
        // 404), so a request with a body is sent on one connection only: a second socket fails
        // it before a byte goes out, and the caller's retry rebuilds the request.
        let sockets = 0;
        req.on("socket", () => {
          if (++sockets > 1) {
            fail(connectError(new Error("connection lost")));
          }
        });
      }

      req.on("error", (err: Error) => {
        if (failure !== undefined) return;
        if (err instanceof PeerRefusedError) return fail(err);
        if (answer !== undefined) {
          // A server that answered early (413, 401) may refuse the rest of the upload: once its
          // whole answer is in, the failed write does not matter and the answer stays readable.
          if (answer.complete) return;
          return fail(readError(err));
        }
        fail(connectError(err));
      });

      let answer: http.IncomingMessage | undefined;
      req.on("response", (res: http.IncomingMessage) => {
        if (failure !== undefined) {
          res.destroy();
          return;
        }
        answer = res;
        // An answer before the whole body was sent ends the upload; the connection cannot be
        // reused because the server never received the declared length.
        const earlyAnswer = !bodyDone;
        if (earlyAnswer) stopBody(undefined);
        const status = res.statusCode ?? 0;
        const responseHeaders = new Headers();
        const raw = res.rawHeaders;
        for (let i = 0; i + 1 < raw.length; i += 2) {
          try {
            responseHeaders.append(raw[i], raw[i + 1]);
          } catch { /* drop a header the Fetch API cannot represent */ }
        }
        const nullBody = request.method === "HEAD" || NULL_BODY_STATUSES.has(status);
        let stream: ReadableStream<Uint8Array> | null = null;
        const finish = () => {
          signal.removeEventListener("abort", onAbort);
          if (earlyAnswer) req.destroy();
        };
        if (nullBody) {
          res.on("end", finish);
          res.resume();
        } else {
          stream = new ReadableStream<Uint8Array>({
            start(controller) {
              responseController = controller;
              res.on("data", (chunk: Uint8Array) => {
                if (failure !== undefined) return;
                controller.enqueue(
                  new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength),
                );
                if ((controller.desiredSize ?? 0) <= 0) res.pause();
              });
              res.on("end", () => {
                if (failure !== undefined) return;
                finish();
                controller.close();
              });
              res.on("error", (err: Error) => {
                fail(readError(err));
              });
              res.on("close", () => {
                if (failure === undefined && !res.complete) {
                  fail(readError(new Error("connection closed")));
                }
              });
            },
            pull() {
              res.resume();
            },
            cancel() {
              signal.removeEventListener("abort", onAbort);
              failure ??= new Error("cancelled");
              // An unread remainder would have to be drained before reuse: drop the connection.
              res.destroy();
              req.destroy();
            },
          }, new ByteLengthQueuingStrategy({ highWaterMark: 1 << 20 }));
          res.pause();
        }
        let response: Response;
        try {
          response = new Response(stream, {
            status,
            statusText: res.statusMessage ?? "",
            headers: responseHeaders,
          });
        } catch (err) {
          fail(connectError(err));
          return;
        }
        Object.defineProperty(response, "url", { value: request.url });
        const deliver = () => {
          if (failure !== undefined) return;
          settled = true;
          resolve(response);
        };
        // Without a body the answer is complete once the message ends, which also hands the
        // connection back to the pool before the caller's next request.
        if (nullBody) res.once("end", deliver);
        else deliver();
      });

      const range = fileBodyRange(body);
      if (body === null) {
        req.end();
      } else if (range !== undefined) {
        if (range.length !== declared) {
          fail(lengthError(range.length < declared! ? "shorter" : "longer"));
          return;
        }
        sendFile(range, declared);
      } else {
        sendStream(body, declared!);
      }

      async function sendFile(range: FileRange, length: number) {
        // The stream itself is never read: cancel it so the request body counts as used.
        body!.cancel().catch(() => {});
        if (length === 0) {
          bodyDone = true;
          req.end();
          return;
        }
        // Two reused buffers: one is read from disk while the other is on its way to the
        // socket. Fresh buffers per chunk doubled peak RSS and cost CPU in allocation.
        const buffers = [
          new Uint8Array(FILE_BODY_CHUNK_SIZE),
          new Uint8Array(FILE_BODY_CHUNK_SIZE),
        ];
        const inFlight: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
        let handle: FileHandle | undefined;
        let sent = 0;
        try {
          handle = await openFile(range.path, "r");
          // Body chunks go to the socket directly once the head is out: node:http's write path
          // corks every write into a writev, which costs a copy of each chunk.
          const socket = await connectedSocket(req);
          if (bodyDone || socket === undefined) return;
          req.flushHeaders();
          for (let k = 0; sent < length; k++) {
            const buffer = buffers[k & 1];
            await inFlight[k & 1];
            if (bodyDone) return;
            const want = Math.min(buffer.byteLength, length - sent);
            const { bytesRead } = await handle.read(buffer, 0, want, range.offset + sent);
            if (bodyDone) return;
            if (bytesRead === 0) {
              return fail(new LocalFileError("file body: file ended before the requested range"));
            }
            sent += bytesRead;
            inFlight[k & 1] = writeFlushed(
              req,
              socket,
              buffer.subarray(0, bytesRead),
              range.onBytes,
            );
          }
          await Promise.all(inFlight);
          if (bodyDone) return;
          bodyDone = true;
          req.end();
        } catch (err) {
          if (!bodyDone) fail(new LocalFileError("file body: read failed", { cause: err }));
        } finally {
          await handle?.close().catch(() => {});
        }
      }

      async function sendStream(stream: ReadableStream<Uint8Array>, length: number) {
        let sent = 0;
        try {
          bodyReader = stream.getReader();
          for (;;) {
            const { done, value } = await bodyReader.read();
            if (bodyDone) return;
            if (done) {
              if (sent !== length) return fail(lengthError("shorter"));
              bodyDone = true;
              req.end();
              return;
            }
            if (value.byteLength === 0) continue;
            if (sent + value.byteLength > length) return fail(lengthError("longer"));
            if (sent + value.byteLength === length) {
              // The last declared byte completes the request: confirm the body ends first.
              for (;;) {
                const next = await bodyReader.read();
                if (bodyDone) return;
                if (next.done) break;
                if (next.value.byteLength > 0) return fail(lengthError("longer"));
              }
              sent += value.byteLength;
              bodyDone = true;
              req.end(value);
              return;
            }
            sent += value.byteLength;
            if (!req.write(value)) await drained(req);
          }
        } catch (err) {
          if (bodyDone) return;
          fail(err);
        }
      }
    });
  }
}

// Resolves once `chunk` has been handed to the socket (or the request is gone), so its buffer
// may be reused.
function writeFlushed(
  req: http.ClientRequest,
  socket: net.Socket,
  chunk: Uint8Array,
  onWritten?: (bytes: number) => void,
): Promise<void> {
  const bytes = chunk.byteLength;
  return new Promise((resolve) => {
    const done = () => {
      req.off("close", done);
      resolve();
    };
    req.on("close", done);
    socket.write(chunk, (err) => {
      if (!err) onWritten?.(bytes);
      done();
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

// Node's `ca` replaces the default roots while Deno's adds to them; keep "in addition" on both.
function trustedRoots(caCerts: string[] | undefined): string[] | undefined {
  if (caCerts === undefined || caCerts.length === 0) return undefined;
  if ("Deno" in globalThis) return caCerts;
  return [...tls.rootCertificates, ...caCerts];
}

type CreateConnection = (
  options: tls.ConnectionOptions & net.TcpNetConnectOpts,
  callback: (err: Error | null, socket?: net.Socket) => void,
) => net.Socket | undefined;

/**
 * Makes `agent` dial through the guard: names resolve only to addresses the guard accepts, and
 * the connected socket's remote address is checked before it is handed to the request. TLS
 * starts only after that check, so a refused peer receives no byte at all (not even a
 * ClientHello).
 */
function guardConnections(
  agent: http.Agent,
  guard: (address: string, family: 4 | 6) => boolean,
  secure: boolean,
): void {
  const createConnection: CreateConnection = (options, callback) => {
    const raw = net.connect({
      host: options.host,
      port: options.port,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      ...(options.family ? { family: options.family } : {}),
      lookup: guardedLookup(guard) as unknown as typeof dns.lookup,
    });
    const onError = (err: Error) => callback(err);
    raw.once("error", onError);
    raw.once("connect", () => {
      raw.off("error", onError);
      const address = raw.remoteAddress;
      const family = address === undefined ? 0 : net.isIP(address);
      if (address === undefined || family === 0 || !guard(address, family as 4 | 6)) {
        raw.destroy();
        callback(new PeerRefusedError(OPERATION));
        return;
      }
      callback(null, secure ? tls.connect({ ...options, socket: raw }) : raw);
    });
    return undefined;
  };
  (agent as unknown as { createConnection: CreateConnection }).createConnection = createConnection;
}

// A `lookup` for node:net that only hands out addresses the guard accepts.
function guardedLookup(guard: (address: string, family: 4 | 6) => boolean) {
  return (
    hostname: string,
    options: dns.LookupOptions | number | LookupCallback,
    callback?: LookupCallback,
  ) => {
    const cb = (typeof options === "function" ? options : callback) as LookupCallback;
    const opts: dns.LookupOptions = typeof options === "object" && options !== null
      ? options
      : typeof options === "number"
      ? { family: options }
      : {};
    dns.lookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return cb(err, opts.all ? [] : "", 0);
      const allowed = addresses.filter((a) => guard(a.address, a.family as 4 | 6));
      if (allowed.length === 0) return cb(new PeerRefusedError(OPERATION), opts.all ? [] : "", 0);
      if (opts.all) return cb(null, allowed);
      cb(null, allowed[0].address, allowed[0].family);
    });
  };
}
