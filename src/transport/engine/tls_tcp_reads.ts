/**
 * How a `node:tls` socket reads its TCP connection on Deno: pausing it stops the TCP reads, and
 * the TCP reads land in one buffer per connection.
 *
 * Deno's `node:tls` is a TLS layer over a TCP handle, and two of its habits cost a download its
 * memory bound:
 *
 * - Pausing the TLS socket stops the decrypted bytes, but the TCP handle under it keeps reading,
 *   so whatever the peer sends piles up (a 1 GiB download over `node:https` held 1.4 GiB, and a
 *   bandwidth cap slowed only what left that pile, not the wire). Stopping and starting the TCP
 *   handle with the TLS one puts the socket's flow control back on the wire.
 * - Every TCP read is a new buffer, handed to the TLS layer (which copies it) and left to the
 *   collector, which frees them in batches: reading 1 GiB and doing nothing else peaked near
 *   500 MiB. The TCP handle can read into one caller-given buffer instead (the `onread` option of
 *   `node:net`); the TLS layer still takes each read as it did, now a view of that buffer.
 *
 * Node's own TLS handle already reads its connection this way, so only Deno's is changed.
 *
 * @module
 */
import type * as net from "node:net";

/** The read switch of a stream handle (libuv's in Node, its emulation in Deno). */
interface ReadHandle {
  readStart(): unknown;
  readStop(): unknown;
  /** The TCP handle under a TLS handle. */
  _parent?: TcpHandle;
}

/** The TCP handle under Deno's TLS handle: its reads go to `onread`. */
interface TcpHandle extends ReadHandle {
  onread?: (buffer: ArrayBuffer | Uint8Array | undefined) => unknown;
  useUserBuffer?: (buffer: Uint8Array) => unknown;
}

const RUNTIME_NEEDS_IT = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined";
// One TCP read at most: a few TLS records.
const TCP_READ_BUFFER = 64 * 1024;
const linked = new WeakSet<ReadHandle>();
/** Sockets already waiting for their TLS layer: one listener each, however many requests. */
const waiting = new WeakSet<net.Socket>();

/**
 * Links `socket`'s TCP reads to its TLS layer, once that layer is up (a plain or already linked
 * socket is left as it is): a pause stops them, and they land in one buffer. Safe to call on
 * every request of a pooled socket.
 *
 * @example A TLS socket before its first request
 * ```ts ignore
 * import * as tls from "node:tls";
 * import { linkTcpReads } from "./tls_tcp_reads.ts";
 * const socket = tls.connect({ host: "registry.example", port: 443 });
 * linkTcpReads(socket);
 * ```
 */
export function linkTcpReads(socket: net.Socket): void {
  if (!RUNTIME_NEEDS_IT || !(socket as { encrypted?: boolean }).encrypted) return;
  const link = () =>
    linkReads((socket as unknown as { _handle?: ReadHandle })._handle, !socket.connecting);
  link();
  // A pooled socket comes back here on each request: a listener per request would pile up on
  // it (Node warns from the eleventh).
  if (waiting.has(socket)) return;
  waiting.add(socket);
  socket.once("secureConnect", link);
}

// `started`: the TLS layer is up and its TCP handle may be reading already.
function linkReads(handle: ReadHandle | undefined, started: boolean): void {
  const tcp = handle?._parent;
  if (handle === undefined || tcp === undefined || linked.has(handle)) return;
  if (typeof tcp.readStop !== "function" || typeof tcp.readStart !== "function") return;
  linked.add(handle);
  stopWithTls(handle, tcp);
  readIntoOneBuffer(tcp, started);
}

// Wraps the TLS handle's read switch so that it also switches the TCP handle under it.
function stopWithTls(handle: ReadHandle, tcp: TcpHandle): void {
  const stop = handle.readStop.bind(handle);
  const start = handle.readStart.bind(handle);
  handle.readStop = () => {
    tcp.readStop();
    return stop();
  };
  handle.readStart = () => {
    tcp.readStart();
    return start();
  };
}

// Gives the TCP handle one read buffer. With it, the handle calls its `onread` with no buffer
// (the bytes are in the given one), which the TLS layer's reader would drop: `onread` becomes a
// property whose function hands the given buffer on to whatever reader the TLS layer installs,
// now or later. A handle takes its `onread` when it starts reading, so one that may be reading
// already (`started`) is restarted to take this one.
function readIntoOneBuffer(tcp: TcpHandle, started: boolean): void {
  if (typeof tcp.useUserBuffer !== "function" || typeof tcp.onread !== "function") return;
  const buffer = new Uint8Array(TCP_READ_BUFFER);
  let reader = tcp.onread;
  const forward = function (this: unknown, given: ArrayBuffer | Uint8Array | undefined) {
    return reader.call(this, given ?? buffer);
  };
  Object.defineProperty(tcp, "onread", {
    configurable: true,
    enumerable: true,
    get: () => forward,
    set: (next: typeof reader) => reader = next,
  });
  tcp.useUserBuffer(buffer);
  if (!started) return;
  tcp.readStop();
  tcp.readStart();
}
