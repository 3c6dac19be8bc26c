/**
 * The HTTP transport under both clients, for callers who build their own {@linkcode Fetch}: the
 * {@linkcode HttpTransport} (exact Content-Length framing, keep-alive pools, cancellation by
 * `request.signal`, optional extra CA roots), {@linkcode fileBody} for a file range as a
 * request body, and for storage requests off the registry's origin
 * {@linkcode guardedExternalTransport}, which refuses peers for which
 * {@linkcode isForbiddenPeerAddress} holds (loopback, private, link-local, multicast and every
 * other range that is not globally reachable, also inside an IPv6 address).
 *
 * @example The blob client on a transport the caller owns
 * ```ts
 * import { BlobClient } from "@ocipart/ocipart/blob";
 * import { guardedExternalTransport, HttpTransport } from "@ocipart/ocipart/transport";
 *
 * const transport = new HttpTransport({ maxIdleSocketsPerOrigin: 4 });
 * const storage = guardedExternalTransport(transport);
 * const client = new BlobClient({ transport: transport.fetch, storageTransport: storage.fetch });
 * // … pushes and pulls …
 * client.close();
 * storage.close();
 * transport.close();
 * ```
 *
 * @module
 */
export type { Fetch } from "./fetch.ts";
export { HttpTransport, type HttpTransportOptions } from "./engine/http_transport.ts";
export { fileBody, type FileBodyOptions } from "./file_body.ts";
export { guardedExternalTransport, type GuardedTransport } from "./peer_guard.ts";
export { isForbiddenPeerAddress } from "./peer_policy.ts";
export type { ExchangeObserver, ExchangeRecord } from "./exchange_observer.ts";
export type { ProxySettings } from "./engine/proxy.ts";
export type { RateLimit } from "./layers/rate_limit.ts";
export { causeCodes, ExchangeError, type FailureReason, failureReason } from "./failure.ts";
