/**
 * Routes a request by its hostname: the registry's own hostname to the registry's transport,
 * every other hostname to the cross-host transport, or nowhere (fail closed).
 *
 * @module
 */
import { PeerRefusedError } from "../../errors/kinds.ts";
import type { Fetch } from "../fetch.ts";

/** Options of {@linkcode crossHostFetch}. */
export interface CrossHostFetchOptions {
  /** The registry origin; only its hostname matters (any port, any scheme counts as own). */
  registry: URL;
  /**
   * The transport for the registry's own hostname, on any port. It must add no credential:
   * the requests routed here are not for the registry origin.
   */
  sameHost: Fetch;
  /**
   * The transport for every other hostname; it owns the destination check (for example
   * `guardedExternalTransport`). Omitted: such requests reject with `PeerRefusedError` before
   * anything is sent, because the transport that would carry them cannot verify the peer.
   */
  crossHost?: Fetch;
}

/**
 * A {@linkcode Fetch} for requests that leave the registry origin (token realms, off-origin
 * upload sessions, blob redirect hops). A request whose hostname equals the registry's (another
 * port, or a registry on a private address) goes to `sameHost`; every other hostname is a
 * cross-host request and goes to `crossHost`, or fails closed with `PeerRefusedError` when
 * there is none. Hostnames compare exactly after URL normalisation (lower case, IPv6
 * compressed), so `localhost` and `127.0.0.1` are different hosts.
 *
 * @example Failing closed behind a caller's transport
 * ```ts
 * import { crossHostFetch } from "./cross_host_fetch.ts";
 * const caller = (_: Request) => Promise.resolve(new Response("ok"));
 * const external = crossHostFetch({ registry: new URL("https://registry.example"), sameHost: caller });
 * console.log((await external(new Request("https://registry.example:8443/x"))).status); // 200
 * await external(new Request("https://auth.example/token")).catch((e) => console.log(e.code));
 * // "ERR_PEER_REFUSED"
 * ```
 */
export function crossHostFetch(options: CrossHostFetchOptions): Fetch {
  const own = options.registry.hostname;
  const { sameHost, crossHost } = options;
  return (request: Request) => {
    let hostname: string;
    try {
      hostname = new URL(request.url).hostname;
    } catch (err) {
      return Promise.reject(err);
    }
    if (hostname === own) return sameHost(request);
    if (crossHost !== undefined) return crossHost(request);
    // Nothing is sent: release a body (an upload stream) nobody will read.
    if (request.body !== null && !request.bodyUsed) request.body.cancel().catch(() => {});
    return Promise.reject(
      new PeerRefusedError("cross-host request", {
        cause: new Error(
          "a caller-supplied transport hides the peer address; " +
            "set unverifiedExternalTransport to send cross-host requests through it",
        ),
      }),
    );
  };
}
