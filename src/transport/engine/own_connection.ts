/**
 * A connection for one request of the transport's minimal HTTP/1.1 client (file uploads and
 * downloads on the runtime's sockets): dialed through the dialer (peer guard, proxy, TLS) or
 * kept from an earlier download, closed by the request's signal, and released once, by whoever
 * finishes first (or detached, to be kept for the next request).
 *
 * @module
 */
import type { ProxyRoute } from "./proxy.ts";
import {
  type ByteDuplex,
  dial,
  type DialedSocket,
  type PeerGuard,
  type SocketKind,
} from "./dial.ts";

/** Where a request's own connection goes. */
export interface OwnConnectionTarget {
  /** The target; `http:` or `https:`. */
  url: URL;
  /** Aborts the dial and closes the connection, with its reason. */
  signal: AbortSignal;
  /** Vets resolved and connected peer addresses. */
  peerGuard?: PeerGuard;
  /** The forward proxy to go through. */
  proxy?: ProxyRoute;
}

/** A dialed connection and its end. */
export interface OwnConnection {
  readonly conn: ByteDuplex;
  /** The signal's reason once it aborted, else undefined. */
  failure(): unknown;
  /** Stops watching the signal and closes the connection (again: nothing). */
  release(): void;
  /** Stops watching the signal and leaves the connection open, for a next request. */
  detach(): void;
}

/**
 * Watches `signal` for a connection already open (a kept one): an abort closes it.
 *
 * @example
 * ```ts ignore
 * const own = watchConnection(kept, request.signal);
 * ```
 */
export function watchConnection(conn: ByteDuplex, signal: AbortSignal): OwnConnection {
  let failure: unknown;
  const onAbort = () => {
    failure ??= signal.reason;
    conn.close();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  if (signal.aborted) onAbort();
  const detach = () => signal.removeEventListener("abort", onAbort);
  return {
    conn,
    failure: () => failure,
    release: () => (detach(), conn.close()),
    detach,
  };
}

/**
 * Dials `target` on `sockets`; rejects with the signal's reason when it aborts meanwhile.
 *
 * @example
 * ```ts ignore
 * const own = await dialOwnConnection(denoSockets(caCerts)!, { url, signal });
 * ```
 */
export async function dialOwnConnection<S extends DialedSocket>(
  sockets: SocketKind<S>,
  target: OwnConnectionTarget,
): Promise<OwnConnection> {
  const { url, signal } = target;
  if (signal.aborted) throw signal.reason;
  const secure = url.protocol === "https:";
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? (secure ? 443 : 80) : Number(url.port);
  // The dial rejects with the signal's reason and leaves nothing open when it aborts meanwhile.
  const { peerGuard, proxy } = target;
  const conn = await dial(sockets, { hostname, port, secure }, { peerGuard, proxy, signal });
  const own = watchConnection(conn, signal);
  if (own.failure() !== undefined) {
    own.release();
    throw own.failure();
  }
  return own;
}
