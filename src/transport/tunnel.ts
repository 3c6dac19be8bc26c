/**
 * Dialing through a forward proxy on `node:net`: the `CONNECT` tunnel under `node:https`
 * requests, and the check of a target against the peer guard when the proxy, not this
 * process, connects to it.
 *
 * @module
 */
import type * as http from "node:http";
import * as net from "node:net";
import * as tls from "node:tls";
import { lookup } from "node:dns/promises";
import { Buffer } from "node:buffer";
import { PeerRefusedError } from "../errors/kinds.ts";
import { connectError, OPERATION, tunnelError } from "./failure.ts";
import { connectHead, connectStatus, type ProxyRoute } from "./proxy.ts";

const MAX_CONNECT_HEAD = 16 * 1024;

type CreateConnection = (
  options: tls.ConnectionOptions & net.TcpNetConnectOpts,
  callback: (err: Error | null, socket?: net.Socket) => void,
) => net.Socket | undefined;

/**
 * Makes `agent` (an `https.Agent`) reach every origin through a `CONNECT` tunnel of `route`:
 * TLS to the origin starts inside the tunnel, so the proxy sees the target's host and port and
 * nothing else; the proxy's credentials go only in the `CONNECT` request.
 *
 * @example
 * ```ts
 * import * as https from "node:https";
 * import { tunnelConnections } from "./tunnel.ts";
 * const agent = new https.Agent();
 * tunnelConnections(agent, { host: "127.0.0.1", port: 3128, authorization: undefined });
 * agent.destroy();
 * ```
 */
export function tunnelConnections(agent: http.Agent, route: ProxyRoute): void {
  const createConnection: CreateConnection = (options, callback) => {
    const raw = net.connect({ host: route.host, port: route.port });
    let done = false;
    const finish = (err: Error | null, socket?: net.Socket) => {
      if (done) return;
      done = true;
      raw.off("data", onData);
      raw.off("error", onError);
      raw.off("end", onEnd);
      raw.off("close", onEnd);
      if (err) raw.destroy();
      callback(err, socket);
    };
    const onError = (err: Error) => finish(connectError(err));
    // A proxy that hangs up before its answer is complete refused the tunnel.
    const onEnd = () => finish(tunnelError(undefined));
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.byteLength > MAX_CONNECT_HEAD) finish(tunnelError(undefined));
        return;
      }
      const status = connectStatus(head.subarray(0, end).toString("latin1"));
      // Bytes after the answer would be the origin speaking before TLS started: refuse them.
      if (status !== 200 || head.byteLength > end + 4) return finish(tunnelError(status));
      finish(null, tls.connect({ ...options, socket: raw }));
    };
    raw.on("error", onError);
    raw.on("end", onEnd);
    raw.on("close", onEnd);
    raw.on("data", onData);
    raw.once("connect", () => {
      raw.write(connectHead(String(options.host), Number(options.port), route));
    });
    return undefined;
  };
  (agent as unknown as { createConnection: CreateConnection }).createConnection = createConnection;
}

/**
 * Vets a proxied request's target with `guard` before anything is sent: an address literal
 * directly, a name by every address it resolves to here (the proxy resolves it again; a name
 * that does not resolve here is refused, so the guard fails closed).
 *
 * @example
 * ```ts
 * import { vetProxiedTarget } from "./tunnel.ts";
 * await vetProxiedTarget("203.0.113.7", () => true);
 * ```
 */
export async function vetProxiedTarget(
  hostname: string,
  guard: (address: string, family: 4 | 6) => boolean,
): Promise<void> {
  const family = net.isIP(hostname);
  if (family !== 0) {
    if (!guard(hostname, family as 4 | 6)) throw new PeerRefusedError(OPERATION);
    return;
  }
  let addresses: { address: string; family: number }[];
  try {
    addresses = await lookup(hostname, { all: true });
  } catch {
    throw new PeerRefusedError(OPERATION);
  }
  if (addresses.length === 0 || !addresses.every((a) => guard(a.address, a.family as 4 | 6))) {
    throw new PeerRefusedError(OPERATION);
  }
}
