/**
 * The dialer's sockets on `node:net`/`node:tls`, and the `createConnection` that makes a
 * `node:http` agent dial through the dialer (`dial.ts`).
 *
 * @module
 */
import type * as http from "node:http";
import * as net from "node:net";
import type * as dns from "node:dns";
import * as tls from "node:tls";
import {
  dial,
  type DialedSocket,
  type DialPolicy,
  type ResolvedAddress,
  type SocketKind,
} from "./dial.ts";
import { connectError } from "../failure.ts";

type ConnectionOptions = tls.ConnectionOptions & net.TcpNetConnectOpts;
type CreateConnection = (
  options: ConnectionOptions,
  callback: (err: Error | null, socket?: net.Socket) => void,
) => net.Socket | undefined;

/**
 * Makes `agent` open every connection through the dialer with `policy` (TLS for `secure`
 * agents, with the agent's TLS options). A connection is handed to the agent only once the
 * policy is satisfied; a refusal or failure reaches the request as its error.
 *
 * @example A guarded agent and a tunnelling one
 * ```ts
 * import * as http from "node:http";
 * import * as https from "node:https";
 * import { dialThroughAgent } from "./node_socket.ts";
 * const guarded = new http.Agent();
 * dialThroughAgent(guarded, { secure: false, peerGuard: (address) => address !== "10.0.0.1" });
 * const tunnels = new https.Agent();
 * dialThroughAgent(tunnels, {
 *   secure: true,
 *   proxy: { host: "127.0.0.1", port: 3128, authorization: undefined },
 * });
 * guarded.destroy();
 * tunnels.destroy();
 * ```
 */
export function dialThroughAgent(
  agent: http.Agent,
  policy: DialPolicy & { readonly secure: boolean },
): void {
  const createConnection: CreateConnection = (options, callback) => {
    const target = {
      hostname: String(options.host),
      port: Number(options.port),
      secure: policy.secure,
    };
    dial(nodeSockets(options), target, policy).then(
      (socket) => socket.handOver(callback),
      (err) => callback(err),
    );
    return undefined;
  };
  (agent as unknown as { createConnection: CreateConnection }).createConnection = createConnection;
}

// The sockets of one agent connection: its local address and family for TCP, its TLS options
// (roots, verification, server name) for TLS.
function nodeSockets(options: ConnectionOptions): SocketKind<NodeSocket> {
  return {
    connect: (host, port, addresses) => connectTcp(host, port, addresses, options),
    startTls: (socket) =>
      Promise.resolve(new NodeSocket(tls.connect({ ...options, socket: socket.release() }))),
  };
}

/**
 * Opens `node:net` TCP to `host:port` (with `addresses`, a name connects only to those, already
 * resolved and vetted), from `local`'s address and family when given: the dialer's `connect` on
 * `node:net`.
 *
 * @example A connection to a local listener
 * ```ts ignore
 * import { connectTcp } from "./node_socket.ts";
 * const socket = await connectTcp("127.0.0.1", 5000, undefined);
 * socket.close();
 * ```
 */
export function connectTcp(
  host: string,
  port: number,
  addresses: readonly ResolvedAddress[] | undefined,
  local: Pick<net.TcpNetConnectOpts, "localAddress" | "family"> = {},
): Promise<NodeSocket> {
  return NodeSocket.connect({
    host,
    port,
    ...(local.localAddress ? { localAddress: local.localAddress } : {}),
    ...(local.family ? { family: local.family } : {}),
    ...(addresses ? { lookup: fixedLookup(addresses) as unknown as typeof dns.lookup } : {}),
  });
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

// A `lookup` for node:net that hands out only `addresses` (already resolved and vetted).
function fixedLookup(addresses: readonly ResolvedAddress[]) {
  return (
    _hostname: string,
    options: dns.LookupOptions | number | LookupCallback,
    callback?: LookupCallback,
  ) => {
    const cb = (typeof options === "function" ? options : callback) as LookupCallback;
    const opts: dns.LookupOptions = typeof options === "object" && options !== null
      ? options
      : typeof options === "number"
      ? { family: options }
      : {};
    const family = opts.family === "IPv4" ? 4 : opts.family === "IPv6" ? 6 : opts.family;
    const usable = addresses.filter((a) => !family || a.family === family);
    queueMicrotask(() => {
      if (usable.length === 0) {
        const err = Object.assign(new Error("no address"), { code: "ENOTFOUND" });
        return cb(err, opts.all ? [] : "", 0);
      }
      if (opts.all) return cb(null, usable.map((a) => ({ address: a.address, family: a.family })));
      cb(null, usable[0].address, usable[0].family);
    });
  };
}

/**
 * A `node:net` socket as a {@linkcode DialedSocket}: reads (only the dialer's, for a proxy's
 * answer) start listening on first use, and an error before the hand-over is kept, never
 * unhandled.
 *
 * @example A connection to a local listener
 * ```ts ignore
 * import { NodeSocket } from "./node_socket.ts";
 * const socket = await NodeSocket.connect({ host: "127.0.0.1", port: 5000 });
 * socket.close();
 * ```
 */
export class NodeSocket implements DialedSocket {
  readonly #socket: net.Socket;
  readonly #chunks: Uint8Array[] = [];
  #error: Error | undefined;
  #ended = false;
  #reading = false;
  #wake: (() => void) | undefined;
  readonly #onData = (chunk: Uint8Array) => (this.#chunks.push(chunk), this.#notify());
  readonly #onEnd = () => (this.#ended = true, this.#notify());
  readonly #onError = (err: Error) => (this.#error ??= err, this.#notify());

  constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on("error", this.#onError);
  }

  /** Opens TCP; resolves once connected, rejects with the socket's error. */
  static connect(options: net.TcpNetConnectOpts): Promise<NodeSocket> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(options);
      socket.once("error", reject);
      socket.once("connect", () => {
        const connected = new NodeSocket(socket);
        socket.off("error", reject);
        resolve(connected);
      });
    });
  }

  get remoteAddress(): string | undefined {
    return this.#socket.remoteAddress;
  }

  read(into: Uint8Array): Promise<number | null> {
    this.#listen();
    return new Promise((resolve, reject) => {
      const attempt = () => {
        this.#wake = undefined;
        const chunk = this.#chunks.shift();
        if (chunk !== undefined) {
          const n = Math.min(chunk.byteLength, into.byteLength);
          into.set(chunk.subarray(0, n));
          if (n < chunk.byteLength) this.#chunks.unshift(chunk.subarray(n));
          resolve(n);
        } else if (this.#error !== undefined) {
          reject(this.#error);
        } else if (this.#ended) {
          resolve(null);
        } else {
          this.#wake = attempt;
        }
      };
      attempt();
    });
  }

  write(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#socket.write(bytes, (err) => err ? reject(err) : resolve());
    });
  }

  close(): void {
    this.#socket.destroy();
  }

  /** The socket without this wrapper's listeners, for the layer that takes it over. */
  release(): net.Socket {
    const socket = this.#socket;
    socket.off("error", this.#onError);
    socket.off("data", this.#onData);
    socket.off("end", this.#onEnd);
    socket.off("close", this.#onEnd);
    return socket;
  }

  /** Hands the socket to an agent's callback, or the error it met while being dialed. */
  handOver(callback: (err: Error | null, socket?: net.Socket) => void): void {
    if (this.#error !== undefined) {
      this.close();
      return callback(connectError(this.#error));
    }
    callback(null, this.release());
  }

  #listen(): void {
    if (this.#reading) return;
    this.#reading = true;
    this.#socket.on("data", this.#onData);
    this.#socket.on("end", this.#onEnd);
    this.#socket.on("close", this.#onEnd);
  }

  #notify(): void {
    this.#wake?.();
  }
}
