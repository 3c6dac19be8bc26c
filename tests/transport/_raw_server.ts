import { fileBody } from "../../src/transport/file_body.ts";
/**
 * A raw HTTP/1.1 test server on `Deno.listen` that sees exactly the bytes a client sends.
 *
 * API:
 * - `startRawServer(respond?: Responder, options?: { tls?: { cert, key } }): RawServer` — listens
 *   on a free 127.0.0.1 port (over TLS with that certificate and key when `tls` is given). For
 *   each connection it counts every byte received, parses request heads, reads bodies framed by
 *   `content-length` (hashing them with sha256), records a `RawRequest`, then calls `respond`
 *   (default: `200` with an empty body). Chunked bodies are recorded with `chunked: true` and
 *   the connection is closed.
 * - `RawServer`: `{ port, origin ("http(s)://127.0.0.1:<port>"), requests, connections,
 *   closed(): Promise<void> (resolves once every accepted connection has ended),
 *   close(): Promise<void> }`.
 * - `RawConnection`: `{ id, bytesReceived, ended }`.
 * - `respond(request, writer)` gets `writer.write(bytes|string)` and `writer.close()`; returning
 *   without closing keeps the connection for the next request.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** A request as the server parsed it. */
export interface RawRequest {
  /** Index of the connection it arrived on. */
  connection: number;
  method: string;
  path: string;
  /** Lower-cased header names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Body bytes received for this request. */
  bodyBytes: number;
  /** sha256 hex of the body bytes received. */
  sha256: string;
  /** True when the whole declared body arrived. */
  complete: boolean;
  /** True when the request used chunked transfer encoding. */
  chunked: boolean;
}

/** One accepted connection. */
export interface RawConnection {
  id: number;
  /** Every byte received on it, heads included. */
  bytesReceived: number;
  /** True once the client closed it (or it failed). */
  ended: boolean;
}

/** Lets a responder write to the connection. */
export interface RawWriter {
  write(data: Uint8Array | string): Promise<void>;
  close(): void;
  /** Resolves when the client closed or reset the connection. */
  readonly ended: Promise<void>;
}

/** Answers a parsed request. */
export type Responder = (request: RawRequest, writer: RawWriter) => Promise<void> | void;

/** A running raw server. */
export interface RawServer {
  port: number;
  origin: string;
  requests: RawRequest[];
  connections: RawConnection[];
  /** Resolves once every accepted connection has ended. */
  closed(): Promise<void>;
  close(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Writes a whole response with a fixed body. */
export function response(
  status: number,
  headers: Record<string, string> = {},
  body: Uint8Array | string = "",
): Uint8Array {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const lines = [`HTTP/1.1 ${status} X`];
  const all = { "content-length": String(bytes.byteLength), ...headers };
  for (const [name, value] of Object.entries(all)) lines.push(`${name}: ${value}`);
  const head = encoder.encode(lines.join("\r\n") + "\r\n\r\n");
  const out = new Uint8Array(head.byteLength + bytes.byteLength);
  out.set(head);
  out.set(bytes, head.byteLength);
  return out;
}

/** Starts a raw server; see the module documentation. */
export function startRawServer(
  respond: Responder = (_request, writer) => writer.write(response(200)),
  options: { tls?: { cert: string; key: string } } = {},
): RawServer {
  const { tls } = options;
  const listener = tls
    ? Deno.listenTls({ hostname: "127.0.0.1", port: 0, ...tls })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const requests: RawRequest[] = [];
  const connections: RawConnection[] = [];

  const serve = async (conn: Deno.Conn, record: RawConnection) => {
    let buffer = new Uint8Array(0);
    let ended = false;
    let resolveEnded!: () => void;
    const endedPromise = new Promise<void>((resolve) => resolveEnded = resolve);
    const chunk = new Uint8Array(1 << 20);
    const readMore = async (): Promise<boolean> => {
      if (ended) return false;
      let n: number | null = null;
      try {
        n = await conn.read(chunk);
      } catch {
        n = null;
      }
      if (n === null) {
        ended = true;
        return false;
      }
      record.bytesReceived += n;
      const next = new Uint8Array(buffer.byteLength + n);
      next.set(buffer);
      next.set(chunk.subarray(0, n), buffer.byteLength);
      buffer = next;
      return true;
    };
    const writer: RawWriter = {
      async write(data) {
        const bytes = typeof data === "string" ? encoder.encode(data) : data;
        let offset = 0;
        while (offset < bytes.byteLength) offset += await conn.write(bytes.subarray(offset));
      },
      close() {
        try {
          conn.close();
        } catch { /* already closed */ }
      },
      ended: endedPromise,
    };
    try {
      for (;;) {
        let headEnd = -1;
        while ((headEnd = indexOfHeadEnd(buffer)) < 0) {
          if (!await readMore()) return;
        }
        const head = decoder.decode(buffer.subarray(0, headEnd));
        buffer = buffer.slice(headEnd + 4);
        const [requestLine, ...headerLines] = head.split("\r\n");
        const [method, path] = requestLine.split(" ");
        const headers: Record<string, string> = {};
        for (const line of headerLines) {
          const colon = line.indexOf(":");
          const name = line.slice(0, colon).trim().toLowerCase();
          const value = line.slice(colon + 1).trim();
          headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
        }
        const request: RawRequest = {
          connection: record.id,
          method,
          path,
          headers,
          bodyBytes: 0,
          sha256: "",
          complete: false,
          chunked: /chunked/i.test(headers["transfer-encoding"] ?? ""),
        };
        requests.push(request);
        const hash = createHash("sha256");
        if (request.chunked) {
          while (await readMore()) { /* drain */ }
          request.bodyBytes = buffer.byteLength;
          return;
        }
        let remaining = Number(headers["content-length"] ?? "0");
        for (;;) {
          const take = Math.min(remaining, buffer.byteLength);
          if (take > 0) {
            hash.update(buffer.subarray(0, take));
            request.bodyBytes += take;
            remaining -= take;
            buffer = buffer.slice(take);
          }
          if (remaining === 0) break;
          if (!await readMore()) break;
        }
        request.sha256 = hash.digest("hex");
        request.complete = remaining === 0;
        if (!request.complete) return;
        // Notice a client that hangs up while the responder waits.
        const watch = readMore().then((more) => {
          if (!more) resolveEnded();
        });
        await respond(request, writer);
        await watch;
        if (ended) return;
      }
    } finally {
      ended = true;
      record.ended = true;
      resolveEnded();
    }
  };

  const accepted = acceptConnections(listener, (conn) => {
    const record: RawConnection = { id: connections.length, bytesReceived: 0, ended: false };
    connections.push(record);
    return serve(conn, record);
  });

  return {
    port,
    origin: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    requests,
    connections,
    closed: accepted.served,
    close: accepted.close,
  };
}

function indexOfHeadEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.byteLength; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

/**
 * Serves every connection `listener` accepts with `serve`, closing each when its `serve` ends.
 * `served()` waits for every connection accepted so far; `close()` stops accepting, closes every
 * open connection and waits for all of them.
 */
export function acceptConnections(
  listener: Deno.Listener,
  serve: (conn: Deno.Conn) => Promise<void>,
): { served(): Promise<void>; close(): Promise<void> } {
  const conns = new Set<Deno.Conn>();
  const done: Promise<void>[] = [];
  const closeConn = (conn: Deno.Conn) => {
    conns.delete(conn);
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      done.push(serve(conn).finally(() => closeConn(conn)));
    }
  })().catch(() => {});
  const served = async () => {
    await Promise.all(done);
  };
  return {
    served,
    async close() {
      listener.close();
      for (const conn of [...conns]) closeConn(conn);
      await accepting;
      await served();
    },
  };
}

/**
 * One request of each client path of the transport: GET on its own download client, with `head`
 * a HEAD too, POST with a streamed body on node:http(s), PUT of a file range of `file` (at least 4
 * bytes) on the minimal upload client.
 */
export function everyPath(
  origin: string,
  file: string,
  options: { head?: boolean } = {},
): Array<[string, () => Request]> {
  return [
    ["GET", () => new Request(`${origin}/v2/`)],
    ...(options.head
      ? [
        ["HEAD", () => new Request(`${origin}/v2/`, { method: "HEAD" })] as [string, () => Request],
      ]
      : []),
    [
      "POST",
      () =>
        new Request(`${origin}/v2/a/blobs/uploads/`, {
          method: "POST",
          body: "x",
          headers: { "content-length": "1" },
        }),
    ],
    [
      "PUT",
      () =>
        new Request(`${origin}/v2/a/blobs/uploads/u?digest=x`, {
          method: "PUT",
          body: fileBody(file, 0, 4),
          headers: { "content-length": "4" },
        }),
    ],
  ];
}
