/**
 * Dialing under the peer guard on `node:net`: every address a name resolves to and the
 * connected socket's address are vetted before TLS starts or a request byte is written.
 *
 * @module
 */
import type * as http from "node:http";
import * as net from "node:net";
import * as dns from "node:dns";
import * as tls from "node:tls";
import { PeerRefusedError } from "../errors/kinds.ts";
import { OPERATION } from "./failure.ts";

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

type CreateConnection = (
  options: tls.ConnectionOptions & net.TcpNetConnectOpts,
  callback: (err: Error | null, socket?: net.Socket) => void,
) => net.Socket | undefined;

/**
 * Makes `agent` dial through the guard: names resolve only to addresses the guard accepts, and
 * the connected socket's remote address is checked before it is handed to the request. TLS
 * starts only after that check, so a refused peer receives no byte at all (not even a
 * ClientHello).
 */
export function guardConnections(
  agent: http.Agent,
  guard: (address: string, family: 4 | 6) => boolean,
  secure: boolean,
): void {
  const createConnection: CreateConnection = (options, callback) => {
    const raw = net.connect({
      host: options.host,
      port: options.port,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      ...(options.family ? { family: options.family } : {}),
      lookup: guardedLookup(guard) as unknown as typeof dns.lookup,
    });
    const onError = (err: Error) => callback(err);
    raw.once("error", onError);
    raw.once("connect", () => {
      raw.off("error", onError);
      const address = raw.remoteAddress;
      const family = address === undefined ? 0 : net.isIP(address);
      if (address === undefined || family === 0 || !guard(address, family as 4 | 6)) {
        raw.destroy();
        callback(new PeerRefusedError(OPERATION));
        return;
      }
      callback(null, secure ? tls.connect({ ...options, socket: raw }) : raw);
    });
    return undefined;
  };
  (agent as unknown as { createConnection: CreateConnection }).createConnection = createConnection;
}

// A `lookup` for node:net that only hands out addresses the guard accepts.
function guardedLookup(guard: (address: string, family: 4 | 6) => boolean) {
  return (
    hostname: string,
    options: dns.LookupOptions | number | LookupCallback,
    callback?: LookupCallback,
  ) => {
    const cb = (typeof options === "function" ? options : callback) as LookupCallback;
    const opts: dns.LookupOptions = typeof options === "object" && options !== null
      ? options
      : typeof options === "number"
      ? { family: options }
      : {};
    dns.lookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return cb(err, opts.all ? [] : "", 0);
      const allowed = addresses.filter((a) => guard(a.address, a.family as 4 | 6));
      if (allowed.length === 0) return cb(new PeerRefusedError(OPERATION), opts.all ? [] : "", 0);
      if (opts.all) return cb(null, allowed);
      cb(null, allowed[0].address, allowed[0].family);
    });
  };
}
