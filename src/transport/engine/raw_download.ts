/**
 * Body-less GETs and HEADs on the transport's own connections (Deno's sockets, or `node:net` and
 * `node:tls` read into one buffer per connection): the body reads from the socket into the
 * caller's buffers, so memory stays what the caller holds, where `node:http` allocates every read
 * and leaves it to the collector (a 1 GiB pull through a proxy peaked at 274 MiB that way, one
 * with a pinned certificate above 300 MiB), and Deno's own client hands out a new array per read
 * (a pull took a sixth more CPU on it). A connection whose answer
 * was read to its end is kept for the next request of the same route (`idle_connections.ts`).
 *
 * @module
 */
import type { ProxyRoute } from "./proxy.ts";
import type { DialedSocket, PeerGuard, SocketKind } from "./dial.ts";
import { dialOwnConnection, type OwnConnection, watchConnection } from "./own_connection.ts";
import { answerResponse, ConnReader, readHead, requestHead } from "./http1.ts";
import { connectError, ExchangeError, readError } from "../failure.ts";
import type { IdleConnections, PooledConnection } from "./idle_connections.ts";

/** What {@linkcode rawDownload} sends. */
export interface RawDownloadRequest {
  /** The target; `http:` or `https:`. */
  url: URL;
  /** `GET` or `HEAD`: the request has no body. */
  method: string;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** Aborts the exchange with its reason. */
  signal: AbortSignal;
  /** Vets resolved and connected peer addresses; `false` refuses with `PeerRefusedError`. */
  peerGuard?: PeerGuard;
  /** The forward proxy to go through: a `CONNECT` tunnel for `https:`, absolute-form else. */
  proxy?: ProxyRoute;
}

/** Where {@linkcode rawDownload} keeps connections: the pool and the request's route in it. */
export interface KeptConnections {
  readonly pool: IdleConnections;
  /** Everything the connection was dialed for: scheme, host, port, TLS kind, proxy. */
  readonly route: string;
}

const encoder = new TextEncoder();

/**
 * Sends `request` on a kept connection of `kept.route`, or on a new one of `sockets` dialed
 * through the dialer (peer guard, proxy, TLS as `sockets` verify it), and resolves with the
 * answer, whose body streams from the connection. A kept connection that the server closed
 * meanwhile (nothing came back, not a byte) is dropped with the route's other idle ones and the
 * request goes once more, on a new connection: a body-less GET or HEAD that got no answer can
 * be sent again.
 *
 * @example
 * ```ts ignore
 * const kept = { pool: new IdleConnections(4), route: url.origin };
 * const response = await rawDownload({ url, method: "GET", headers, signal }, denoSockets([])!, kept);
 * ```
 */
export async function rawDownload(
  request: RawDownloadRequest,
  sockets: SocketKind<DialedSocket>,
  kept: KeptConnections,
): Promise<Response> {
  const closes = kept.pool.closes;
  const reused = kept.pool.take(kept.route);
  if (reused !== undefined) {
    const own = watchConnection(reused, request.signal);
    const answer = await exchange(request, own, kept).catch((err: unknown) => ({ err }));
    if (answer instanceof Response) return answer;
    if (!(answer.err instanceof StaleConnection) || request.signal.aborted) throw answer.err;
    kept.pool.drop(kept.route);
  }
  const own = await dialOwnConnection(sockets, request);
  if (!kept.pool.inUse(own.conn as PooledConnection, closes)) {
    own.release();
    throw connectError(new Error("the transport was closed"));
  }
  return exchange(request, own, kept).catch((err: unknown) => {
    throw err instanceof StaleConnection ? err.cause : err;
  });
}

// A kept connection that gave no byte back: the request may go again on a new one.
class StaleConnection extends Error {}

// Writes the head on `own` and reads the answer's head; the connection goes back to the pool
// once its answer was read to its end, else it is closed.
async function exchange(
  request: RawDownloadRequest,
  own: OwnConnection,
  kept: KeptConnections,
): Promise<Response> {
  const conn = own.conn as PooledConnection;
  let released = false;
  const release = (reusable: boolean) => {
    if (released) return;
    released = true;
    if (!reusable || own.failure() !== undefined) {
      own.release();
      kept.pool.done(conn);
      return;
    }
    own.detach();
    kept.pool.keep(kept.route, conn);
  };
  const input = new ConnReader(conn);
  try {
    const written = await conn.write(encoder.encode(requestHead(request, true)))
      .then(() => undefined, (err: unknown) => own.failure() ?? connectError(err));
    if (written !== undefined) {
      throw input.received ? written : new StaleConnection("", { cause: written });
    }
    const parsed = await readHead(input, request.method).catch((err) => {
      if (own.failure() !== undefined || err instanceof ExchangeError) throw own.failure() ?? err;
      const failure = readError(err);
      throw input.received ? failure : new StaleConnection("", { cause: failure });
    });
    return answerResponse(input, parsed, request.url, own.failure, release);
  } catch (err) {
    release(false);
    throw own.failure() ?? err;
  }
}
