/**
 * The peer guard of cross-host requests, and the lazily created guarded transport that applies
 * it.
 *
 * @module
 */
import type { Fetch } from "./fetch.ts";
import type { HttpTransport } from "./engine/http_transport.ts";
import { isForbiddenPeerAddress } from "./peer_policy.ts";

/**
 * The peer guard of cross-host requests (token realms, off-origin upload sessions, blob
 * redirects): accepts a peer address unless `isForbiddenPeerAddress` refuses it (loopback,
 * private, link-local, multicast and the other ranges that are not globally reachable, also
 * when an IPv6 address carries them). Text that is not an IP address is refused.
 *
 * Requests to the registry's own hostname never meet this guard: they are routed to the
 * registry's transport before it (see `crossHostFetch`), which is how a registry on a private
 * address or on another port of the same host stays reachable.
 *
 * @example
 * ```ts
 * import { crossHostPeerGuard } from "./peer_guard.ts";
 * console.log(crossHostPeerGuard("169.254.169.254", 4)); // false
 * console.log(crossHostPeerGuard("8.8.8.8", 4)); // true
 * ```
 */
export function crossHostPeerGuard(address: string, _family?: 4 | 6): boolean {
  return !isForbiddenPeerAddress(address);
}

/**
 * A transport created on first use; {@linkcode GuardedTransport.close} releases it.
 *
 * @example Closing the clone with its base
 * ```ts
 * import { guardedExternalTransport, HttpTransport } from "@ocipart/ocipart/transport";
 * import type { GuardedTransport } from "@ocipart/ocipart/transport";
 * const base = new HttpTransport();
 * const storage: GuardedTransport = guardedExternalTransport(base);
 * storage.close(); // nothing was created: no request was sent
 * base.close();
 * ```
 */
export interface GuardedTransport {
  /** Sends through the guarded transport, creating it on the first request. */
  readonly fetch: Fetch;
  /** Closes the guarded transport's connections, if it was ever created. */
  close(): void;
}

/**
 * The transport of cross-host requests: a clone of `base` with its own connection pool, the
 * same TLS roots and pool tuning, and {@linkcode crossHostPeerGuard} applied before dialing (IP
 * literals and every address a name resolves to) and again to the remote address actually
 * connected, before any request byte is written. `base` itself is not modified. The clone is
 * created on the first request, so a transfer that never leaves the registry never has one.
 *
 * @example A private address is refused before dialing
 * ```ts
 * import { guardedExternalTransport, HttpTransport } from "@ocipart/ocipart/transport";
 * const base = new HttpTransport();
 * const external = guardedExternalTransport(base);
 * const refused = await external.fetch(new Request("http://10.0.0.1/")).catch((err) => err);
 * console.log(refused.code); // "ERR_PEER_REFUSED"
 * external.close();
 * base.close();
 * ```
 */
export function guardedExternalTransport(base: HttpTransport): GuardedTransport {
  let clone: HttpTransport | undefined;
  let closed = false;
  return {
    fetch: (request: Request) => {
      if (closed) return Promise.reject(new TypeError("transport is closed"));
      clone ??= base.clone({ peerGuard: crossHostPeerGuard, site: "storage" });
      return clone.fetch(request);
    },
    close() {
      closed = true;
      clone?.close();
    },
  };
}
