/**
 * Helpers of the confidentiality tests:
 *
 * - `ErrorLedger` — every error a test produced, each checked so that no package error in its
 *   `cause` chain renders a URL, a loopback host name or address, a port in use, a query, a
 *   realm path, a storage signature or a planted secret.
 * - `startCountingServer(hostname)` — a raw TCP listener that counts accepted connections and
 *   the bytes of their first read, then hangs up (proof that nothing was dialed or sent).
 * - `startStorageForwarder(options)` — an "object storage" origin for off-origin upload
 *   sessions: records every request's headers and forwards it to the registry with a
 *   pre-signed credential of its own (what a signed URL does), or answers a scripted fault.
 * - `FAST_POLICY`, `credentialHeaders(record)`, `tmpFile(dir, size)`.
 *
 * @module
 */
import { type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { causeChain } from "../../src/errors/find_error.ts";
import { OciError } from "../../src/errors/oci_error.ts";
import type { RetryPolicy } from "../../src/remote/retry.ts";

/** Three attempts with millisecond waits: retries happen, the suite stays quick. */
export const FAST_POLICY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 };

/** The secret planted in realm queries and storage answers; it must never surface. */
export const SECRET = "planted-secret-7f3a9c";

/** Headers that carry credentials or browsing context. */
export const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie", "referer"];

/** The credential-bearing headers present in a recorded request. */
export function credentialHeaders(headers: Record<string, string>): string[] {
  return CREDENTIAL_HEADERS.filter((name) => headers[name] !== undefined);
}

const ALWAYS_FORBIDDEN: RegExp[] = [
  /[a-z][a-z0-9+.-]*:\/\//i, // any URL
  /127\.0\.0\.1|\b127\.\d+\.\d+\.\d+|::1|::ffff|fe80:|fc00:|169\.254\.|\b10\.0\.0\.1\b/i,
  /localhost/i,
  /\?/,
  /\/token\b/,
  /\/docker\/registry/,
  /\/v2\//,
  /_state|x-amz|signature=/i,
  /Bearer |Basic /,
  /sha256:[0-9a-f]/,
];

/** Every error the tests produced, checked as it is added. */
export class ErrorLedger {
  readonly errors: unknown[] = [];
  readonly #secrets = new Set<string>([SECRET]);

  /** Adds strings that must not appear (ports, hosts, paths of this run). */
  forbid(...values: (string | number)[]): void {
    for (const value of values) this.#secrets.add(String(value));
  }

  /**
   * Records `err` and throws when the message of the error itself, or of any package error in
   * its cause chain, carries something it must not. Returns `err`.
   */
  check<T>(err: T): T {
    this.errors.push(err);
    if (Deno.env.get("CONF_DEBUG")) {
      console.log([...causeChain(err)].map((e) => String(e)).join("\n  <- "));
    }
    for (const link of causeChain(err)) {
      if (!(link instanceof Error)) continue;
      if (link !== err && !(link instanceof OciError)) continue;
      const rendered = `${String(link)} | ${link.message}`;
      for (const pattern of ALWAYS_FORBIDDEN) {
        if (pattern.test(rendered)) throw new Error(`unsafe error text (${pattern}): ${rendered}`);
      }
      for (const secret of this.#secrets) {
        if (rendered.includes(secret)) {
          throw new Error(`error text contains "${secret}": ${rendered}`);
        }
      }
    }
    return err;
  }

  /** Awaits a promise that must reject, checks the error and returns it. */
  async rejection(promise: Promise<unknown>): Promise<unknown> {
    try {
      await promise;
    } catch (err) {
      return this.check(err);
    }
    throw new Error("expected a rejection");
  }
}

/** A listener that only counts. */
export interface CountingServer {
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Bytes received so far, over all connections. */
  readonly bytes: number;
  close(): Promise<void>;
}

/** Listens on `hostname` (default `127.0.0.1`; `"::"` is dual-stack here), counting only. */
export function startCountingServer(hostname = "127.0.0.1"): CountingServer {
  const listener = Deno.listen({ hostname, port: 0 });
  const conns = new Set<Deno.Conn>();
  let connections = 0;
  let bytes = 0;
  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        connections++;
        conns.add(conn);
        (async () => {
          // Counts what arrives first, then hangs up: a client that got through fails fast.
          const buffer = new Uint8Array(65536);
          try {
            const n = await conn.read(buffer);
            if (n !== null) bytes += n;
          } catch { /* reset */ }
          conns.delete(conn);
          try {
            conn.close();
          } catch { /* closed */ }
        })();
      }
    } catch { /* listener closed */ }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get connections() {
      return connections;
    },
    get bytes() {
      return bytes;
    },
    async close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
      await accepting;
    },
  };
}

/** One request the storage forwarder received. */
export interface ForwardedRecord {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  status: number;
}

/** A scripted answer of the storage forwarder (given instead of forwarding). */
export interface StorageFault {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** Options of {@linkcode startStorageForwarder}. */
export interface StorageForwarderOptions {
  /** Where requests are forwarded (the registry). */
  target: string;
  /** `Authorization` value the forwarder presents to the target (the "signature"). */
  authorization: () => Promise<string> | string;
  /** Headers added to every answer (e.g. `set-cookie`). */
  answerHeaders?: Record<string, string>;
}

/** A running storage forwarder. */
export interface StorageForwarder {
  readonly url: string;
  readonly port: number;
  readonly log: ForwardedRecord[];
  /** Queues answers for the next requests, one each, instead of forwarding them. */
  failNext(...faults: StorageFault[]): void;
  close(): Promise<void>;
}

/** Starts a storage forwarder; see the module doc. */
export async function startStorageForwarder(
  options: StorageForwarderOptions,
): Promise<StorageForwarder> {
  const target = new URL(options.target);
  const log: ForwardedRecord[] = [];
  const faults: StorageFault[] = [];
  const sockets = new Set<Socket>();
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://storage.invalid");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    const record: ForwardedRecord = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.search,
      headers,
      status: 0,
    };
    log.push(record);
    for (const [name, value] of Object.entries(options.answerHeaders ?? {})) {
      res.setHeader(name, value);
    }
    const fault = faults.shift();
    if (fault !== undefined) {
      req.resume();
      await new Promise((resolve) => req.on("end", resolve));
      record.status = fault.status;
      res.writeHead(fault.status, { "content-type": "text/plain", ...fault.headers });
      res.end(fault.body ?? "");
      return;
    }
    const forwarded: Record<string, string> = {};
    for (const name of ["content-length", "content-type"]) {
      if (headers[name] !== undefined) forwarded[name] = headers[name];
    }
    forwarded.authorization = await options.authorization();
    const upstream = httpRequest({
      hostname: target.hostname,
      port: Number(target.port),
      method: req.method,
      path: url.pathname + url.search,
      headers: forwarded,
    }, (answer) => {
      record.status = answer.statusCode ?? 0;
      const out: Record<string, string> = {};
      for (const name of ["content-length", "docker-content-digest", "location", "range"]) {
        const value = answer.headers[name];
        if (typeof value === "string") out[name] = value;
      }
      res.writeHead(record.status, out);
      answer.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  };
  const server = createServer((req, res) => {
    serve(req, res).catch(() => res.destroy());
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log,
    failNext: (...more) => faults.push(...more),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Writes `size` pseudo-random bytes to `path` and returns them. */
export async function writeRandomFile(path: string, size: number, seed = 7): Promise<Uint8Array> {
  const bytes = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  await Deno.writeFile(path, bytes);
  return bytes;
}

/** True when two byte arrays are equal. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
