/**
 * Transports and the retry loop: the {@linkcode Fetch} shape, the default
 * {@linkcode HttpTransport} (exact Content-Length framing, keep-alive pools, peer guard),
 * {@linkcode fileBody} for file ranges as request bodies, {@linkcode isForbiddenPeerAddress},
 * {@linkcode guardedExternalTransport} and {@linkcode crossHostFetch} for cross-host requests,
 * {@linkcode retry} with full-jitter backoff and a Retry-After floor, and an injectable
 * {@linkcode Clock}.
 *
 * @example Retrying a request
 * ```ts
 * import { BLOB_RETRY_POLICY, retry } from "./mod.ts";
 * const status = await retry("HEAD blob", () => Promise.resolve(200), { policy: BLOB_RETRY_POLICY });
 * ```
 *
 * @module
 */
export type * from "./fetch.ts";
export * from "./clock.ts";
export * from "../registry/retry_after.ts";
export * from "./retry.ts";
export * from "./http_transport.ts";
export * from "./file_body.ts";
export * from "./peer_policy.ts";
export * from "./stall_guard.ts";
export * from "./peer_guard.ts";
export * from "./cross_host_fetch.ts";
export type { ExchangeObserver, ExchangeRecord } from "./exchange_observer.ts";
export type { ProxySettings } from "./proxy.ts";
