/**
 * Transports and the retry loop: the {@linkcode Fetch} shape, {@linkcode retry} with
 * full-jitter backoff and a Retry-After floor, and an injectable {@linkcode Clock}.
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
export * from "./retry_after.ts";
export * from "./retry.ts";
