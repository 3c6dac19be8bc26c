/**
 * Backpressure for `node:tls` sockets: pausing one stops reading its TCP connection.
 *
 * Deno's `node:tls` is a TLS layer over a TCP handle: pausing the TLS socket stops the decrypted
 * bytes, but the TCP handle under it keeps reading, so whatever the peer sends piles up in
 * memory (a 1 GiB download over `node:https` held 1.4 GiB, and a bandwidth cap slowed only
 * what left that pile, not the wire). Stopping and starting the TCP handle with the TLS one
 * puts the socket's flow control back on the wire. Node's own TLS handle already does this,
 * so only Deno's is changed.
 *
 * @module
 */
import type * as net from "node:net";

/** The read switch of a stream handle (libuv's in Node, its emulation in Deno). */
interface ReadHandle {
  readStart(): unknown;
  readStop(): unknown;
  /** The TCP handle under a TLS handle. */
  _parent?: ReadHandle;
}

const RUNTIME_NEEDS_IT = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined";
const linked = new WeakSet<ReadHandle>();

/**
 * Makes `socket`'s pause stop its TCP reads, once its TLS layer is up (a plain or already linked
 * socket is left as it is). Safe to call on every request of a pooled socket.
 *
 * @example A TLS socket before its first request
 * ```ts ignore
 * import * as tls from "node:tls";
 * import { stopTcpReadsOnPause } from "./tls_read_stop.ts";
 * const socket = tls.connect({ host: "registry.example", port: 443 });
 * stopTcpReadsOnPause(socket);
 * ```
 */
export function stopTcpReadsOnPause(socket: net.Socket): void {
  if (!RUNTIME_NEEDS_IT || !(socket as { encrypted?: boolean }).encrypted) return;
  const link = () => linkReads((socket as unknown as { _handle?: ReadHandle })._handle);
  link();
  socket.once("secureConnect", link);
}

// Wraps the TLS handle's read switch so that it also switches the TCP handle under it.
function linkReads(handle: ReadHandle | undefined): void {
  const tcp = handle?._parent;
  if (handle === undefined || tcp === undefined || linked.has(handle)) return;
  if (typeof tcp.readStop !== "function" || typeof tcp.readStart !== "function") return;
  linked.add(handle);
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
