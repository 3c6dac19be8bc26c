/**
 * A small origin for the blob tests: serves bytes (from memory or from files under a root
 * directory, such as a Distribution storage root behind its redirect middleware) with optional
 * Range support, may split ranged answers into short valid portions, and records every request
 * with its headers and how many answers were in flight at once.
 *
 * API: `startStorageServer(options) → Promise<StorageServer>`; options: `root?` (directory
 * served by path), `blobs?` (pathname → bytes), `ranges?` (default true), `maxPortion?` (cap
 * of each 206 body), `answer?` (override: return a Response-like tuple to answer directly).
 * `StorageServer`: `url`, `origin`, `log` (`{ method, path, query, headers }`), `maxActive`,
 * `active`, `close()`.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createReadStream, statSync } from "node:fs";
import type { AddressInfo, Socket } from "node:net";
import { join, normalize } from "node:path";

/** One recorded request. */
export interface StorageRequest {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
}

/** Options of {@linkcode startStorageServer}. */
export interface StorageServerOptions {
  /** Serve files below this directory by path. */
  root?: string;
  /** Serve these bytes by pathname. */
  blobs?: Map<string, Uint8Array>;
  /** Honour Range requests (default true). */
  ranges?: boolean;
  /** Largest body of one 206 answer: longer ranges get a shorter valid portion. */
  maxPortion?: number;
  /** Answer directly when this returns a status (e.g. to simulate expired signatures). */
  answer?: (
    request: StorageRequest,
  ) => { status: number; headers?: Record<string, string> } | undefined;
}

/** A running storage server. */
export interface StorageServer {
  readonly url: string;
  readonly origin: string;
  readonly log: StorageRequest[];
  /** Most answers that were being sent at the same time. */
  readonly maxActive: number;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts the server on a free loopback port. */
export async function startStorageServer(
  options: StorageServerOptions = {},
): Promise<StorageServer> {
  const log: StorageRequest[] = [];
  const sockets = new Set<Socket>();
  let active = 0;
  let maxActive = 0;
  const ranges = options.ranges ?? true;

  const content = (
    path: string,
  ):
    | { size: number; open: (s: number, e: number) => NodeJS.ReadableStream | Uint8Array }
    | undefined => {
    const bytes = options.blobs?.get(path);
    if (bytes !== undefined) {
      return {
        size: bytes.byteLength,
        open: (s, e) => bytes.subarray(s, e + 1),
      };
    }
    if (options.root === undefined) return undefined;
    const file = normalize(join(options.root, path));
    if (!file.startsWith(normalize(options.root))) return undefined;
    try {
      const info = statSync(file);
      if (!info.isFile()) return undefined;
      return {
        size: info.size,
        open: (s, e) => createReadStream(file, { start: s, end: e, highWaterMark: 1 << 20 }),
      };
    } catch {
      return undefined;
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://storage.invalid");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    const record = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.search.slice(1),
      headers,
    };
    log.push(record);
    req.resume();
    active++;
    maxActive = Math.max(maxActive, active);
    res.on("close", () => active--);
    const direct = options.answer?.(record);
    if (direct !== undefined) {
      res.writeHead(direct.status, { "content-length": "0", ...direct.headers });
      res.end();
      return;
    }
    const found = content(url.pathname);
    if (found === undefined) {
      res.writeHead(404, { "content-length": "0" });
      res.end();
      return;
    }
    const base: Record<string, string> = { "content-type": "application/octet-stream" };
    if (ranges) base["accept-ranges"] = "bytes";
    const range = ranges ? /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "") : null;
    let start = 0;
    let end = found.size - 1;
    let status = 200;
    if (range !== null) {
      start = Number(range[1]);
      end = range[2] === "" ? found.size - 1 : Math.min(Number(range[2]), found.size - 1);
      if (start >= found.size) {
        res.writeHead(416, {
          ...base,
          "content-range": `bytes */${found.size}`,
          "content-length": "0",
        });
        res.end();
        return;
      }
      if (options.maxPortion !== undefined) end = Math.min(end, start + options.maxPortion - 1);
      status = 206;
      base["content-range"] = `bytes ${start}-${end}/${found.size}`;
    }
    const length = Math.max(0, end - start + 1);
    res.writeHead(status, { ...base, "content-length": String(length) });
    if (req.method === "HEAD" || length === 0) {
      res.end();
      return;
    }
    const body = found.open(start, end);
    if (body instanceof Uint8Array) res.end(body);
    else {
      body.on("error", () => res.destroy());
      (body as unknown as { pipe: (d: ServerResponse) => void }).pipe(res);
    }
  };

  const server = createServer(handle);
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url: `http://127.0.0.1:${port}`,
    origin: `http://127.0.0.1:${port}`,
    log,
    get maxActive() {
      return maxActive;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
