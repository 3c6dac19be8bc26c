/**
 * The dialer's sockets on `Deno.connect`/`Deno.startTls`, for the file-range upload client
 * (`raw_upload.ts`): its reads and writes go straight to the runtime's connection.
 *
 * @module
 */
import { abortable } from "../abortable.ts";
import type { DialedSocket, SocketKind } from "./dial.ts";

interface DenoConn {
  readonly remoteAddr: { hostname?: string };
  read(buffer: Uint8Array): Promise<number | null>;
  write(buffer: Uint8Array): Promise<number>;
  close(): void;
  ref?(): void;
  unref?(): void;
}

// What a read started while the connection was idle brought: bytes, the end, or a failure.
type IdleRead = { n: number | null } | { error: unknown };

interface DenoNetApi {
  connect(options: { hostname: string; port: number }): Promise<DenoConn>;
  startTls(
    conn: DenoConn,
    options: { hostname: string; caCerts?: string[]; alpnProtocols?: string[] },
  ): Promise<DenoConn & { handshake(): Promise<unknown> }>;
}

function denoNet(): DenoNetApi | undefined {
  const deno = (globalThis as { Deno?: Partial<DenoNetApi> }).Deno;
  return typeof deno?.connect === "function" && typeof deno.startTls === "function"
    ? deno as DenoNetApi
    : undefined;
}

/**
 * The runtime's TCP and TLS as the dialer's sockets, TLS trusting the runtime's roots plus
 * `caCerts` and offering HTTP/1.1 only; `undefined` where the runtime has no such API.
 *
 * @example A connection to a local listener
 * ```ts
 * import { dial } from "./dial.ts";
 * import { denoSockets } from "./deno_socket.ts";
 * const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * const accepted = listener.accept();
 * const target = { hostname: "127.0.0.1", port: listener.addr.port, secure: false };
 * const socket = await dial(denoSockets([])!, target, {});
 * console.log(socket.remoteAddress); // "127.0.0.1"
 * socket.close();
 * (await accepted).close();
 * listener.close();
 * ```
 */
export function denoSockets(caCerts: string[] | undefined): SocketKind<DenoSocket> | undefined {
  const net = denoNet();
  if (net === undefined) return undefined;
  return {
    connect: async (host, port, addresses) =>
      new DenoSocket(await net.connect({ hostname: addresses?.[0].address ?? host, port })),
    startTls: async (socket, hostname, signal) => {
      const conn = await net.startTls(socket.conn, {
        hostname,
        alpnProtocols: ["http/1.1"],
        ...(caCerts?.length ? { caCerts } : {}),
      });
      const secured = new DenoSocket(conn);
      try {
        await abortable(conn.handshake(), signal);
      } catch (err) {
        secured.close();
        throw err;
      }
      return secured;
    },
  };
}

/**
 * A connection of the runtime as a {@linkcode DialedSocket}.
 *
 * @example A connection's peer address
 * ```ts
 * import { DenoSocket } from "./deno_socket.ts";
 * const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * const conn = await Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port });
 * const socket = new DenoSocket(conn);
 * console.log(socket.remoteAddress); // "127.0.0.1"
 * socket.close();
 * listener.close();
 * ```
 */
export class DenoSocket implements DialedSocket {
  /** The runtime's connection. */
  readonly conn: DenoConn;
  // The read that watches the connection while it is idle (kept for a next request), its buffer,
  // and what it brought once it settled.
  #watch: Promise<IdleRead> | undefined;
  #watchBuffer: Uint8Array | undefined;
  #watched: IdleRead | undefined;
  #idle = false;

  /** Wraps `conn`. */
  constructor(conn: DenoConn) {
    this.conn = conn;
  }

  /** False once anything came while idle: bytes nobody asked for, the end, a failure. */
  get alive(): boolean {
    return this.#watched === undefined;
  }

  /**
   * Idle: a read watches the connection without keeping the process running, and anything it
   * brings closes it (the server ended it, or sent bytes no request asked for, which must never
   * be taken for the next answer). Taken again: the watching read, still waiting, becomes the
   * next read's.
   */
  idle(idle: boolean): void {
    this.#idle = idle;
    if (!idle) return this.conn.ref?.();
    this.conn.unref?.();
    if (this.#watch !== undefined) return;
    const buffer = new Uint8Array(16 * 1024);
    this.#watchBuffer = buffer;
    this.#watch = this.conn.read(buffer).then((n) => ({ n }), (error) => ({ error }));
    this.#watch.then((read) => {
      this.#watched = read;
      if (this.#idle) this.close();
    });
  }

  /** The connected peer's address. */
  get remoteAddress(): string | undefined {
    return this.conn.remoteAddr.hostname;
  }

  /** Reads into `into`; `null` at the end. */
  read(into: Uint8Array): Promise<number | null> {
    const watch = this.#watch;
    if (watch === undefined) return this.conn.read(into);
    return watch.then((read) => {
      this.#watch = undefined;
      this.#watched = undefined;
      if ("error" in read) throw read.error;
      if (read.n === null || read.n <= into.byteLength) {
        if (read.n !== null) into.set(this.#watchBuffer!.subarray(0, read.n));
        return read.n;
      }
      // More came than `into` holds: the rest waits for the next read.
      into.set(this.#watchBuffer!.subarray(0, into.byteLength));
      const rest = this.#watchBuffer!.slice(into.byteLength, read.n);
      this.#watchBuffer = rest;
      this.#watch = Promise.resolve({ n: rest.byteLength });
      return into.byteLength;
    });
  }

  /** Writes all of `bytes`. */
  async write(bytes: Uint8Array): Promise<void> {
    for (let offset = 0; offset < bytes.byteLength;) {
      offset += await this.conn.write(bytes.subarray(offset));
    }
  }

  /** Closes the connection; closing it again does nothing. */
  close(): void {
    try {
      this.conn.close();
    } catch { /* already closed */ }
  }
}
