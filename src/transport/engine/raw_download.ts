/**
 * A body-less GET on a connection of its own, for the requests the runtime's pooled client cannot
 * take (a proxy, a peer guard, a host only `node:tls` can judge), on Deno: its body reads from
 * the socket into the caller's buffers, so memory stays what the caller holds, where `node:http`
 * allocates every read and leaves it to the collector (a 1 GiB pull through a proxy peaked at
 * 274 MiB that way, one with a pinned certificate above 300 MiB). The connection is closed after
 * the answer.
 *
 * @module
 */
import type { ProxyRoute } from "./proxy.ts";
import type { DialedSocket, PeerGuard, SocketKind } from "./dial.ts";
import { dialOwnConnection } from "./own_connection.ts";
import { denoSockets } from "./deno_socket.ts";
import { answerResponse, ConnReader, readHead, requestHead } from "./http1.ts";
import { connectError, ExchangeError, readError } from "../failure.ts";

/** What {@linkcode rawDownload} sends. */
export interface RawDownloadRequest {
  /** The target; `http:` or `https:`. */
  url: URL;
  /** `GET`: the request has no body. */
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

/**
 * Whether {@linkcode rawDownload} can run here (Deno with TCP and TLS).
 *
 * @example
 * ```ts
 * import { rawDownloadAvailable } from "./raw_download.ts";
 * console.log(typeof rawDownloadAvailable()); // "boolean"
 * ```
 */
export function rawDownloadAvailable(): boolean {
  return denoSockets(undefined) !== undefined;
}

const encoder = new TextEncoder();

/**
 * Sends `request` on a new connection (`Connection: close`) of `sockets` through the dialer (peer
 * guard, proxy, TLS as `sockets` verify it) and resolves with the answer, whose body streams from
 * the connection.
 *
 * @example
 * ```ts ignore
 * const response = await rawDownload({ url, method: "GET", headers, signal }, denoSockets([])!);
 * ```
 */
export async function rawDownload(
  request: RawDownloadRequest,
  sockets: SocketKind<DialedSocket>,
): Promise<Response> {
  const own = await dialOwnConnection(sockets, request);
  try {
    await own.conn.write(encoder.encode(requestHead(request))).catch((err) => {
      throw own.failure() ?? connectError(err);
    });
    const input = new ConnReader(own.conn);
    const head = await readHead(input, request.method).catch((err) => {
      if (own.failure() !== undefined || err instanceof ExchangeError) throw own.failure() ?? err;
      throw readError(err);
    });
    return answerResponse(input, head, request.url, own.failure, own.release);
  } catch (err) {
    own.release();
    throw own.failure() ?? err;
  }
}
