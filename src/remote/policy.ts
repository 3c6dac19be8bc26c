/**
 * The one policy value of the engine: how many redirects a read follows and whether a write's
 * redirect is followed, which peers a request for another host may reach, where credentials
 * come from, and the retry policy. Both clients run on it; the default is the parted
 * specification's, and the blob specification's differences are one named preset beside it
 * (docs/protocol.md#redirects, docs/protocol.md#peer-guard).
 *
 * @module
 */
import type { RetryPolicy } from "./retry.ts";

/** How redirects are followed. */
export interface RedirectPolicy {
  /** How many redirects a read (GET, HEAD) follows; the next one is refused. */
  readonly readHops: number;
  /**
   * `"refuse"`: every redirect of a write is refused before its target is contacted;
   * `"follow"`: a 307 or 308 of a write with a replayable body is followed.
   */
  readonly writes: "refuse" | "follow";
  /**
   * Every redirect target of a read answers like storage (its 401, 403, 404 and 410 are
   * retryable and match no sentinel), even one on the registry's origin; else only other
   * origins do.
   */
  readonly targetsAreStorage: boolean;
}

/**
 * Which peers a request for another host than the registry's may reach:
 *
 * - `"registry-hostname"`: the registry's own hostname on any port goes through the registry's
 *   pool without credentials; other hosts through the storage transport, by default the
 *   library's peer-guarded pool; with a caller's `transport` and no `storageTransport`, other
 *   hosts are refused (the caller's transport hides the peer).
 * - `"storage-transport"`: every other origin goes through the storage transport, by default
 *   the library's peer-guarded pool, whatever transport the registry's requests take.
 */
export type PeerRule = "registry-hostname" | "storage-transport";

/**
 * Where a registry's credentials come from when the client is given none: `"docker-config"`
 * (the docker configuration and its helpers), or `"caller"` (none: the caller's transport
 * authenticates, or the registry is anonymous).
 */
export type CredentialRule = "docker-config" | "caller";

/** The engine's policy: one value, read by the stack and the repository. */
export interface EnginePolicy {
  /** Redirect hops and the write-redirect rule. */
  readonly redirects: RedirectPolicy;
  /** Which peers a cross-host request may reach. */
  readonly peers: PeerRule;
  /** Where credentials come from by default. */
  readonly credentials: CredentialRule;
  /** Attempts and backoff of every operation. */
  readonly retry: Readonly<RetryPolicy>;
}

/**
 * The default of both clients (the parted specification, docs/protocol.md#redirects): reads
 * follow 3 redirects, every redirect target is storage, writes are never redirected; the registry's hostname is the
 * registry; credentials from the docker configuration; 4 attempts, full jitter from 1 s, 30 s
 * cap.
 *
 * @example The default policy
 * ```ts
 * import { DEFAULT_POLICY } from "./policy.ts";
 * console.log(DEFAULT_POLICY.redirects.readHops, DEFAULT_POLICY.retry.baseDelayMs); // 3 1000
 * ```
 */
export const DEFAULT_POLICY: EnginePolicy = freeze({
  redirects: { readHops: 3, writes: "refuse", targetsAreStorage: true },
  peers: "registry-hostname",
  credentials: "docker-config",
  retry: { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000 },
});

/**
 * The blob specification's preset (docs/protocol.md#blob-operations): 10 redirect hops, writes'
 * 307/308 followed, only other origins answer like storage, every other origin through the storage transport, credentials
 * only when given, backoff from 250 ms.
 *
 * @example The blob preset
 * ```ts
 * import { BLOB_SPEC_POLICY } from "./policy.ts";
 * console.log(BLOB_SPEC_POLICY.redirects.readHops, BLOB_SPEC_POLICY.retry.baseDelayMs); // 10 250
 * ```
 */
export const BLOB_SPEC_POLICY: EnginePolicy = freeze({
  redirects: { readHops: 10, writes: "follow", targetsAreStorage: false },
  peers: "storage-transport",
  credentials: "caller",
  retry: { ...DEFAULT_POLICY.retry, baseDelayMs: 250 },
});

/**
 * `policy` with its redirects changed by `redirects`.
 *
 * @example A policy that follows no redirect
 * ```ts
 * import { DEFAULT_POLICY, withRedirects } from "./policy.ts";
 * console.log(withRedirects(DEFAULT_POLICY, { readHops: 0 }).redirects.readHops); // 0
 * ```
 */
export function withRedirects(
  policy: EnginePolicy,
  redirects: Partial<RedirectPolicy>,
): EnginePolicy {
  return freeze({ ...policy, redirects: { ...policy.redirects, ...redirects } });
}

function freeze(policy: EnginePolicy): EnginePolicy {
  Object.freeze(policy.redirects);
  Object.freeze(policy.retry);
  return Object.freeze(policy);
}
