/**
 * One question a failure report may ask the registry after a 404 on a manifest: does the
 * repository exist at all? Distribution answers `MANIFEST_UNKNOWN` both for a tag a repository
 * lacks and for a repository it has never seen, while its tag list answers `NAME_UNKNOWN` for the
 * latter, so "no such tag" and "no such repository" can be told apart.
 *
 * @module
 */
import { findError, HttpStatusError, NotFoundError } from "../../errors/mod.ts";
import {
  distributionErrorCodes,
  parseReference,
  type PartedClient,
  type Reference,
} from "../../parted/mod.ts";

// The report waits at most this long for the answer; without one it says "tag or repository".
const PROBE_LIMIT_MS = 5_000;

/**
 * The reference whose manifest the registry reported missing without saying that the repository
 * is unknown (no `NAME_UNKNOWN`), so a probe can tell; undefined for any other failure.
 *
 * @example
 * ```ts
 * import { manifestMissing } from "./repository_probe.ts";
 * console.log(manifestMissing(new Error("other"), "127.0.0.1:5000/a/b:v1")); // undefined
 * ```
 */
export function manifestMissing(err: unknown, typed: string | undefined): Reference | undefined {
  const http = findError(err, HttpStatusError);
  if (findError(err, NotFoundError) === undefined || http === undefined || typed === undefined) {
    return undefined;
  }
  if (!/^(GET|HEAD) manifest$/.test(http.operation)) return undefined;
  if (distributionErrorCodes(http).some((code) => code !== "MANIFEST_UNKNOWN")) return undefined;
  try {
    return parseReference(typed);
  } catch {
    return undefined;
  }
}

/**
 * Asks the registry for one tag of `reference`'s repository through the command's `client`:
 * true when it answers (the repository exists), false when it says `NAME_UNKNOWN`, undefined
 * when it says anything else or nothing within five seconds.
 *
 * @example
 * ```ts ignore
 * import { repositoryKnown } from "./repository_probe.ts";
 * const known = await repositoryKnown(reference, client, signal);
 * ```
 */
export async function repositoryKnown(
  reference: Reference,
  client: PartedClient,
  signal: AbortSignal,
): Promise<boolean | undefined> {
  try {
    await client.listTags(`${reference.registry}/${reference.repository}`, {
      limit: 1,
      signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_LIMIT_MS)]),
    });
    return true;
  } catch (err) {
    const http = findError(err, HttpStatusError);
    if (http?.status === 404 && distributionErrorCodes(http).includes("NAME_UNKNOWN")) return false;
    return undefined;
  }
}
