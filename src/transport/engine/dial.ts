/**
 * The one dialer of the transport: how a connection to a target is opened, whatever sockets
 * carry it. It resolves a name and vets every address with the peer guard, connects, vets the
 * connected address before any byte (a TLS ClientHello included), and starts TLS; through a
 * proxy it vets the target instead (the proxy is the user's choice) and opens a `CONNECT`
 * tunnel whose answer head is bounded and after whose `200` no byte may come before TLS.
 *
 * The sockets are a {@linkcode SocketKind}: `node:net`/`node:tls` for the `node:http` agents
 * (`node_socket.ts`), `Deno.connect`/`Deno.startTls` for the file-range upload client
 * (`deno_socket.ts`).
 *
 * @module
 */
import { isIP } from "node:net";
import { lookup } from "node:dns/promises";
import { PeerRefusedError } from "../../errors/kinds.ts";
import { OciError } from "../../errors/oci_error.ts";
import { connectError, OPERATION, tunnelError } from "../failure.ts";
import type { ProxyRoute } from "./proxy.ts";
import { abortable } from "../abortable.ts";

/**
 * Decides whether a peer address may be connected to.
 *
 * @example A guard that refuses one address
 * ```ts
 * import type { PeerGuard } from "./dial.ts";
 * const guard: PeerGuard = (address) => address !== "169.254.169.254";
 * console.log(guard("169.254.169.254", 4)); // false
 * ```
 */
export type PeerGuard = (address: string, family: 4 | 6) => boolean;

/**
 * An open byte stream, as the dialer and the upload client read and write it.
 *
 * @example An in-memory duplex that answers what it is told
 * ```ts
 * import type { ByteDuplex } from "./dial.ts";
 * const answer = new TextEncoder().encode("HTTP/1.1 200 OK\r\n\r\n");
 * let given = false;
 * const duplex: ByteDuplex = {
 *   read: (into) => {
 *     if (given) return Promise.resolve(null);
 *     given = true;
 *     into.set(answer);
 *     return Promise.resolve(answer.byteLength);
 *   },
 *   write: () => Promise.resolve(),
 *   close: () => {},
 * };
 * console.log(await duplex.read(new Uint8Array(64))); // 19
 * ```
 */
export interface ByteDuplex {
  /** Reads into `into`; the count read, or `null` at the end of the stream. */
  read(into: Uint8Array): Promise<number | null>;
  /** Writes all of `bytes`. */
  write(bytes: Uint8Array): Promise<void>;
  /** Closes the stream; a second call does nothing. */
  close(): void;
}

/**
 * A connected socket as the dialer sees it: a byte stream and the address it reached.
 *
 * @example A socket that reached a documentation address
 * ```ts
 * import type { DialedSocket } from "./dial.ts";
 * const socket: DialedSocket = {
 *   remoteAddress: "192.0.2.1",
 *   read: () => Promise.resolve(null),
 *   write: () => Promise.resolve(),
 *   close: () => {},
 * };
 * console.log(socket.remoteAddress); // "192.0.2.1"
 * ```
 */
export interface DialedSocket extends ByteDuplex {
  /** The peer's address as connected, when the runtime reports one. */
  readonly remoteAddress: string | undefined;
}

/**
 * An address a host name resolved to.
 *
 * @example An IPv6 address of a name
 * ```ts
 * import type { ResolvedAddress } from "./dial.ts";
 * const address: ResolvedAddress = { address: "2001:db8::1", family: 6 };
 * console.log(address.family); // 6
 * ```
 */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/**
 * The socket primitives of one runtime API, under the dialer's policy.
 *
 * @example Sockets that cannot connect
 * ```ts
 * import { dial, type DialedSocket, type SocketKind } from "./dial.ts";
 * const none: SocketKind<DialedSocket> = {
 *   connect: () => Promise.reject(Object.assign(new Error("no"), { code: "ECONNREFUSED" })),
 *   startTls: (socket) => Promise.resolve(socket),
 * };
 * const err = await dial(none, { hostname: "192.0.2.1", port: 80, secure: false }, {})
 *   .catch((e) => e);
 * console.log(err.message); // "HTTP request: connection failed (connection refused)"
 * ```
 */
export interface SocketKind<S extends DialedSocket> {
  /**
   * Opens TCP to `host:port`. With `addresses`, a name connects only to those (already vetted);
   * without, the runtime resolves it.
   */
  connect(
    host: string,
    port: number,
    addresses: readonly ResolvedAddress[] | undefined,
  ): Promise<S>;
  /** Starts TLS for `hostname` on `socket`, which it takes over; `signal` aborts the handshake. */
  startTls(socket: S, hostname: string, signal: AbortSignal | undefined): Promise<S>;
}

/**
 * Where a connection goes.
 *
 * @example A TLS target on the IPv6 loopback
 * ```ts
 * import type { DialTarget } from "./dial.ts";
 * const target: DialTarget = { hostname: "::1", port: 5000, secure: true };
 * console.log(target.port); // 5000
 * ```
 */
export interface DialTarget {
  /** The host name or address, IPv6 without brackets. */
  readonly hostname: string;
  readonly port: number;
  /** TLS to the target (inside the tunnel when there is a proxy). */
  readonly secure: boolean;
}

/**
 * How a connection is dialed.
 *
 * @example A guarded dial through a proxy
 * ```ts
 * import type { DialPolicy } from "./dial.ts";
 * const policy: DialPolicy = {
 *   peerGuard: (address) => address !== "127.0.0.1",
 *   proxy: { host: "proxy.internal", port: 3128, authorization: undefined },
 * };
 * console.log(policy.proxy?.port); // 3128
 * ```
 */
export interface DialPolicy {
  /** Vets peer addresses; `false` refuses with `PeerRefusedError`. */
  readonly peerGuard?: PeerGuard | undefined;
  /**
   * The forward proxy: a `secure` target is reached through its `CONNECT` tunnel; otherwise the
   * connection is to the proxy itself (a request in absolute form follows).
   */
  readonly proxy?: ProxyRoute | undefined;
  /** Ends the dial with its reason, closing what was opened. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Opens a connection to `target` on `sockets` by `policy`. Failures reject with
 * `PeerRefusedError`, a tunnel refusal, or a connection failure naming a safe reason (never the
 * host); an abort rejects with the signal's reason. Nothing is left open after a failure.
 *
 * @example A connection refused by the peer guard before any packet
 * ```ts
 * import { dial, type DialedSocket, type SocketKind } from "./dial.ts";
 * let dialed = 0;
 * const counting: SocketKind<DialedSocket> = {
 *   connect: () => (dialed++, Promise.reject(new Error("unreachable"))),
 *   startTls: (socket) => Promise.resolve(socket),
 * };
 * const target = { hostname: "169.254.169.254", port: 80, secure: false };
 * const err = await dial(counting, target, { peerGuard: () => false }).catch((e) => e);
 * console.log(err.code, dialed); // "ERR_PEER_REFUSED" 0
 * ```
 */
export async function dial<S extends DialedSocket>(
  sockets: SocketKind<S>,
  target: DialTarget,
  policy: DialPolicy,
): Promise<S> {
  try {
    return policy.proxy === undefined
      ? await dialDirect(sockets, target, policy)
      : await dialThroughProxy(sockets, target, policy.proxy, policy);
  } catch (err) {
    throw dialFailure(err, policy.signal);
  }
}

/**
 * Vets a proxied request's target with `guard` before anything is sent: an address literal
 * directly, a name by every address it resolves to here (the proxy resolves it again; a name
 * that does not resolve here is refused, so the guard fails closed).
 *
 * @example A literal the guard accepts
 * ```ts
 * import { vetProxiedTarget } from "./dial.ts";
 * await vetProxiedTarget("203.0.113.7", () => true);
 * ```
 */
export async function vetProxiedTarget(hostname: string, guard: PeerGuard): Promise<void> {
  const family = isIP(hostname);
  if (family !== 0) {
    if (!guard(hostname, family as 4 | 6)) throw new PeerRefusedError(OPERATION);
    return;
  }
  let addresses: ResolvedAddress[];
  try {
    addresses = await lookup(hostname, { all: true });
  } catch {
    throw new PeerRefusedError(OPERATION);
  }
  if (addresses.length === 0 || !addresses.every((a) => guard(a.address, a.family as 4 | 6))) {
    throw new PeerRefusedError(OPERATION);
  }
}

// What a failed dial rejects with: the abort's reason, an error already classified, or a
// connection failure.
function dialFailure(err: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  return err instanceof OciError ? err : connectError(err);
}

// Without a proxy: a name connects only to the addresses the guard accepts, and the address
// actually connected is vetted again before TLS starts.
async function dialDirect<S extends DialedSocket>(
  sockets: SocketKind<S>,
  target: DialTarget,
  policy: DialPolicy,
): Promise<S> {
  const { peerGuard, signal } = policy;
  const addresses = peerGuard ? await vettedAddresses(target.hostname, peerGuard) : undefined;
  const socket = await connect(sockets, target.hostname, target.port, addresses, signal);
  try {
    if (peerGuard) vetConnected(socket, peerGuard);
    return target.secure ? await sockets.startTls(socket, target.hostname, signal) : socket;
  } catch (err) {
    socket.close();
    throw err;
  }
}

// Through a proxy: the target is vetted (the proxy, the user's choice, is not), then a TLS
// target is reached through a tunnel and TLS starts inside it.
async function dialThroughProxy<S extends DialedSocket>(
  sockets: SocketKind<S>,
  target: DialTarget,
  proxy: ProxyRoute,
  policy: DialPolicy,
): Promise<S> {
  const { peerGuard, signal } = policy;
  if (peerGuard) await vetProxiedTarget(target.hostname, peerGuard);
  const socket = await connect(sockets, proxy.host, proxy.port, undefined, signal);
  if (!target.secure) return socket;
  try {
    await abortable(openTunnel(socket, target.hostname, target.port, proxy), signal);
    return await sockets.startTls(socket, target.hostname, signal);
  } catch (err) {
    socket.close();
    throw err;
  }
}

// The addresses `hostname` may be dialed at: a literal the guard accepts as it is (undefined),
// a name's resolved addresses that the guard accepts.
async function vettedAddresses(
  hostname: string,
  guard: PeerGuard,
): Promise<ResolvedAddress[] | undefined> {
  const family = isIP(hostname);
  if (family !== 0) {
    if (!guard(hostname, family as 4 | 6)) throw new PeerRefusedError(OPERATION);
    return undefined;
  }
  const addresses = await lookup(hostname, { all: true });
  const allowed = addresses.filter((a) => guard(a.address, a.family as 4 | 6));
  if (allowed.length === 0) throw new PeerRefusedError(OPERATION);
  return allowed;
}

function vetConnected(socket: DialedSocket, guard: PeerGuard): void {
  const address = socket.remoteAddress ?? "";
  const family = isIP(address);
  if (family === 0 || !guard(address, family as 4 | 6)) throw new PeerRefusedError(OPERATION);
}

// Connects unless the signal aborted; a socket that connects after the abort is closed.
function connect<S extends DialedSocket>(
  sockets: SocketKind<S>,
  host: string,
  port: number,
  addresses: readonly ResolvedAddress[] | undefined,
  signal: AbortSignal | undefined,
): Promise<S> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return abortable(sockets.connect(host, port, addresses), signal, (late) => late.close());
}

// The longest answer head a proxy may send to `CONNECT`.
const MAX_CONNECT_ANSWER = 16 * 1024;
const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/**
 * Asks the proxy on `socket` for a tunnel to `host:port` and resolves once it is open: the
 * proxy's credentials go only in this request, the answer's head may be at most 16 KiB, and a
 * byte after a `200` answer (the origin speaking before TLS started) is refused.
 *
 * @example A proxy that refuses
 * ```ts
 * import { type ByteDuplex, openTunnel } from "./dial.ts";
 * const answer = new TextEncoder().encode("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n");
 * const proxy: ByteDuplex = {
 *   read: (into) => (into.set(answer), Promise.resolve(answer.byteLength)),
 *   write: () => Promise.resolve(),
 *   close: () => {},
 * };
 * const route = { host: "proxy", port: 3128, authorization: undefined };
 * const err = await openTunnel(proxy, "registry.example", 443, route).catch((e) => e);
 * console.log(err.message); // "HTTP request: proxy refused the tunnel (status 407)"
 * ```
 */
export async function openTunnel(
  socket: ByteDuplex,
  host: string,
  port: number,
  route: ProxyRoute,
): Promise<void> {
  try {
    await socket.write(encoder.encode(connectHead(host, port, route)));
  } catch (err) {
    throw connectError(err);
  }
  const answer = new Uint8Array(MAX_CONNECT_ANSWER);
  for (let filled = 0;;) {
    let n: number | null;
    try {
      n = await socket.read(answer.subarray(filled));
    } catch (err) {
      throw connectError(err);
    }
    if (n === null) throw tunnelError(undefined);
    const end = headEnd(answer, filled, filled + n);
    filled += n;
    if (end < 0) {
      if (filled === answer.byteLength) throw tunnelError(undefined);
      continue;
    }
    const status = connectStatus(latin1.decode(answer.subarray(0, end)));
    // Bytes after the answer would be the origin speaking before TLS started: refuse them.
    if (status !== 200 || filled > end + 4) throw tunnelError(status);
    return;
  }
}

// The `CONNECT` request that opens a tunnel to `host:port` through `route`: the proxy's
// credentials go here, and nothing of the request that later travels inside the tunnel.
function connectHead(host: string, port: number, route: ProxyRoute): string {
  const authority = `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
  let head = `CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n`;
  if (route.authorization !== undefined) head += `proxy-authorization: ${route.authorization}\r\n`;
  return `${head}\r\n`;
}

// Where the empty line ending a head starts in `bytes[0, filled)`, or -1; `from` is where the
// bytes not yet searched start.
function headEnd(bytes: Uint8Array, from: number, filled: number): number {
  for (let i = Math.max(0, from - 3); i + 3 < filled; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

// The status of a proxy's answer head, or undefined when it is malformed.
function connectStatus(head: string): number | undefined {
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  return match ? Number(match[1]) : undefined;
}
