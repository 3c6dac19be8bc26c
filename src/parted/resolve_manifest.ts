/**
 * Resolving a reference to its parted manifest: GET with the retry budget, verified, decoded.
 *
 * @module
 */
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { PartTooLargeError } from "../errors/sentinels.ts";
import type { Reference } from "../registry/reference.ts";
import { getManifest } from "../remote/manifests.ts";
import type { Clock } from "../transport/clock.ts";
import { retry, type RetryPolicy } from "../remote/retry.ts";
import type { Connection } from "./connection.ts";
import { decodeManifest, type PartedManifest } from "./manifest.ts";

/** A resolved parted manifest. */
export interface ResolvedManifest {
  /** What the manifest says about the file. */
  readonly manifest: PartedManifest;
  /** The manifest's own digest. */
  readonly digest: string;
  /** The manifest's exact bytes. */
  readonly bytes: Uint8Array;
}

/**
 * Fetches the manifest of `reference` (by digest when it has one, else by tag) under the retry
 * budget and decodes it. Failures carry the sentinel of their status (404 `NotFoundError`,
 * 401/403 `UnauthorizedError`); a manifest of another kind is `NotPartedArtifactError`.
 *
 * @example Resolving (internal)
 * ```ts ignore
 * import { resolveManifest } from "./resolve_manifest.ts";
 * const { manifest } = await resolveManifest(connection, reference, { signal });
 * ```
 */
export async function resolveManifest(
  connection: Connection,
  reference: Reference,
  options: { signal?: AbortSignal; policy: RetryPolicy; clock: Clock },
): Promise<ResolvedManifest> {
  const { signal } = options;
  try {
    const fetched = await retry(
      "GET manifest",
      () =>
        getManifest(connection.repo, reference.digest ?? reference.tag!, reference.digest, signal),
      {
        policy: options.policy,
        signal,
        clock: options.clock,
      },
    );
    return {
      manifest: decodeManifest(fetched.bytes),
      digest: fetched.digest,
      bytes: fetched.bytes,
    };
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw attachSentinel(err, { tooLarge: PartTooLargeError });
  }
}
