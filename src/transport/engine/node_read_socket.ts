/**
 * The dialer's sockets on `node:net`/`node:tls` for the transport's own download client, read
 * like the runtime's own: the bytes of each read (decrypted, over TLS) land in one buffer per
 * connection and are copied from it into the caller's. They carry the downloads from a host only
 * `node:tls` can judge (a pinned self-signed certificate, `insecureTls`), and every download on
 * a runtime without Deno's sockets (Node).
 *
 * A `node:net` or `node:tls` socket otherwise hands out every read as a new buffer and leaves it
 * to the collector, which frees them in batches (a 1 GiB pull peaked above 300 MiB that way over
 * TLS on Deno; on Node, `node:http` took a 2 GiB pull to 133 MiB where Deno's own sockets held
 * 81). The `onread` option of `node:net` reads into one buffer instead, but `tls.connect` ignores
 * it for a socket that wraps a connected one, which is how the dialer makes every TLS connection
 * (the peer guard and a proxy tunnel come first): the option's fields are set on the socket once
 * it exists, as its constructor would have. Where the runtime has no such fields, the socket is
 * read through its `data` events, paused while enough is held.
 *
 * @module
 */
import * as net from "node:net";
import * as tls from "node:tls";
import type { DialedSocket, SocketKind } from "./dial.ts";
import { connectTcp, type NodeSocket } from "./node_socket.ts";
import { linkTcpReads } from "./tls_tcp_reads.ts";
import { abortable } from "../abortable.ts";
import type { NodeTlsOptions } from "./tls_trust.ts";

/**
 * `node:net` TCP, and `node:tls` TLS with `trust` (roots, pins, or no verification) offering
 * HTTP/1.1 only, whose socket is a {@linkcode NodeReadSocket}: for `https:` targets (the TCP
 * socket is read through its events only for a proxy's answer to `CONNECT`, before TLS).
 *
 * @example A dial to a TLS host that presents a pinned certificate
 * ```ts ignore
 * import { dial } from "./dial.ts";
 * import { nodeTlsSockets } from "./node_read_socket.ts";
 * const target = { hostname: "registry.example", port: 443, secure: true };
 * const socket = await dial(nodeTlsSockets(trust.nodeOptions), target, {});
 * ```
 */
export function nodeTlsSockets(trust: NodeTlsOptions): SocketKind<DialedSocket> {
  return {
    connect: connectTcp,
    startTls: async (socket, hostname, signal) => {
      const secured = tls.connect({
        ...trust,
        socket: (socket as NodeSocket).release(),
        host: hostname,
        // SNI carries a name only, never an address.
        ...(net.isIP(hostname) === 0 ? { servername: hostname } : {}),
        ALPNProtocols: ["http/1.1"],
      });
      linkTcpReads(secured);
      const wrapped = new NodeReadSocket(secured);
      try {
        await abortable(wrapped.secured, signal);
      } catch (err) {
        wrapped.close();
        throw err;
      }
      return wrapped;
    },
  };
}

/**
 * `node:net` TCP whose socket is a {@linkcode NodeReadSocket}, for `http:` targets (directly or
 * through a proxy, which the dialer never reads before the request): there is no TLS to start.
 *
 * @example A dial to a local listener
 * ```ts
 * import * as net from "node:net";
 * import { dial } from "./dial.ts";
 * import { nodeTcpSockets } from "./node_read_socket.ts";
 * const server = net.createServer((peer) => peer.end("hello"));
 * await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
 * const port = (server.address() as net.AddressInfo).port;
 * const socket = await dial(nodeTcpSockets(), { hostname: "127.0.0.1", port, secure: false }, {});
 * const into = new Uint8Array(16);
 * const n = await socket.read(into);
 * console.log(new TextDecoder().decode(into.subarray(0, n ?? 0))); // "hello"
 * socket.close();
 * server.close();
 * ```
 */
export function nodeTcpSockets(): SocketKind<DialedSocket> {
  return {
    connect: async (host, port, addresses) =>
      new NodeReadSocket((await connectTcp(host, port, addresses)).release()),
    startTls: () => Promise.reject(new TypeError("TLS to an http: target")),
  };
}

/** The `onread` fields of a `node:net` socket. */
interface OnreadFields {
  readonly buffer: symbol;
  readonly callback: symbol;
  readonly generator: symbol;
}

let fields: OnreadFields | null | undefined;

// The fields a socket made with `onread` carries, found by their names; null where the runtime
// has none.
function onreadFields(): OnreadFields | null {
  if (fields !== undefined) return fields;
  const probe = new net.Socket({ onread: { buffer: new Uint8Array(1), callback: () => true } });
  const named = (name: string) =>
    Object.getOwnPropertySymbols(probe).find((symbol) => symbol.description === name);
  const buffer = named("kBuffer"), callback = named("kBufferCb"), generator = named("kBufferGen");
  probe.destroy();
  fields = buffer && callback && generator ? { buffer, callback, generator } : null;
  return fields;
}

// Decrypted bytes per read at most.
const READ_BUFFER = 64 * 1024;
// Bytes held for the caller before the socket pauses. The TLS layer finishes the batch it is
// emitting after a pause, so the held bytes can exceed this by one batch.
const HOLD = 256 * 1024;

interface WaitingRead {
  readonly into: Uint8Array;
  readonly done: (n: number | null) => void;
  readonly fail: (err: Error) => void;
}

/**
 * A `node:tls` socket, or a connected `node:net` one, as the dialer's socket, read into the
 * caller's buffers.
 *
 * @example Wrapping a TLS socket
 * ```ts ignore
 * import * as tls from "node:tls";
 * import { NodeReadSocket } from "./node_read_socket.ts";
 * const socket = new NodeReadSocket(tls.connect({ host: "registry.example", port: 443 }));
 * await socket.secured;
 * socket.close();
 * ```
 */
export class NodeReadSocket implements DialedSocket {
  /** Resolves once the handshake is done (at once for TCP); rejects with the socket's error. */
  readonly secured: Promise<void>;
  readonly #socket: net.Socket;
  #held = new Uint8Array(0);
  #start = 0;
  #end = 0;
  #paused = false;
  #ended = false;
  #error: Error | undefined;
  #waiting: WaitingRead | undefined;

  constructor(socket: net.Socket) {
    this.#socket = socket;
    this.secured = socket instanceof tls.TLSSocket
      ? new Promise((resolve, reject) => {
        socket.once("secureConnect", () => resolve());
        socket.once("close", () => reject(this.#error ?? new Error("TLS connection closed")));
      })
      : Promise.resolve();
    this.secured.catch(() => {});
    socket.on("error", (err: Error) => (this.#error ??= err, this.#wake()));
    socket.on("end", () => (this.#ended = true, this.#wake()));
    socket.on("close", () => (this.#ended = true, this.#wake()));
    this.#readIntoOneBuffer();
  }

  /** The connected peer's address. */
  get remoteAddress(): string | undefined {
    return this.#socket.remoteAddress;
  }

  /** Reads into `into`; `null` at the end. */
  read(into: Uint8Array): Promise<number | null> {
    if (this.#end > this.#start) return Promise.resolve(this.#take(into));
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve(null);
    return new Promise((done, fail) => {
      this.#waiting = { into, done, fail };
      this.#resume();
    });
  }

  /** Writes all of `bytes`. */
  write(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#socket.write(bytes, (err) => err ? reject(err) : resolve());
    });
  }

  /** False once the peer closed or failed, or sent bytes nobody asked for. */
  get alive(): boolean {
    return !this.#ended && this.#error === undefined && this.#end === this.#start;
  }

  /** An idle connection (kept for a next request) does not keep the process running. */
  idle(idle: boolean): void {
    if (idle) this.#socket.unref();
    else this.#socket.ref();
  }

  /**
   * Closes the connection; closing it again does nothing. What it held goes with it: a read
   * after the close, or waiting during it, rejects.
   */
  close(): void {
    this.#error ??= new Error("connection closed");
    this.#start = this.#end = 0;
    this.#held = new Uint8Array(0);
    this.#socket.destroy();
    this.#wake();
  }

  // Sets the `onread` fields on the socket, or else reads its data events.
  #readIntoOneBuffer(): void {
    const found = onreadFields();
    const handle = (this.#socket as unknown as { _handle?: { useUserBuffer?: unknown } })._handle;
    if (found === null || typeof handle?.useUserBuffer !== "function") {
      this.#socket.on("data", (chunk: Uint8Array) => {
        if (!this.#deliver(chunk)) (this.#paused = true, this.#socket.pause());
      });
      return;
    }
    const buffer = new Uint8Array(READ_BUFFER);
    const socket = this.#socket as unknown as Record<symbol, unknown>;
    socket[found.generator] = null;
    socket[found.callback] = (n: number) => {
      const more = this.#deliver(buffer.subarray(0, n));
      if (!more) this.#paused = true;
      return more;
    };
    socket[found.buffer] = buffer;
    (handle.useUserBuffer as (buffer: Uint8Array) => void).call(handle, buffer);
  }

  // Hands `bytes` to a waiting read and holds the rest; false once enough is held.
  #deliver(bytes: Uint8Array): boolean {
    let given = 0;
    const waiting = this.#waiting;
    if (waiting !== undefined && this.#end === this.#start) {
      this.#waiting = undefined;
      given = Math.min(bytes.byteLength, waiting.into.byteLength);
      waiting.into.set(bytes.subarray(0, given));
      waiting.done(given);
    }
    if (given < bytes.byteLength) this.#hold(bytes.subarray(given));
    return this.#end - this.#start < HOLD;
  }

  #hold(bytes: Uint8Array): void {
    const kept = this.#end - this.#start;
    if (this.#end + bytes.byteLength > this.#held.byteLength) {
      const needed = kept + bytes.byteLength;
      if (needed > this.#held.byteLength) {
        const grown = new Uint8Array(Math.max(needed, HOLD + READ_BUFFER));
        grown.set(this.#held.subarray(this.#start, this.#end));
        this.#held = grown;
      } else {
        this.#held.copyWithin(0, this.#start, this.#end);
      }
      this.#start = 0;
      this.#end = kept;
    }
    this.#held.set(bytes, this.#end);
    this.#end += bytes.byteLength;
  }

  #take(into: Uint8Array): number {
    const n = Math.min(into.byteLength, this.#end - this.#start);
    into.set(this.#held.subarray(this.#start, this.#start + n));
    this.#start += n;
    if (this.#start === this.#end) this.#start = this.#end = 0;
    if (this.#end - this.#start < HOLD / 2) this.#resume();
    return n;
  }

  #resume(): void {
    if (!this.#paused || this.#ended) return;
    this.#paused = false;
    this.#socket.resume();
    this.#socket.read(0);
  }

  #wake(): void {
    const waiting = this.#waiting;
    if (waiting === undefined) return;
    this.#waiting = undefined;
    if (this.#end > this.#start) waiting.done(this.#take(waiting.into));
    else if (this.#error !== undefined) waiting.fail(this.#error);
    else waiting.done(null);
  }
}
