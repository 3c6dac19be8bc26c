/**
 * The resume pass of a pull: what a partial file of the full length already holds, part by
 * part, from the bytes on disk alone (no journal, no saved hash state).
 *
 * @module
 */
import type { RangeScan, Sha256Threads } from "../hashing/sha256_threads.ts";
import type { PartDescriptor } from "./manifest.ts";

/**
 * What the disk holds of one part: all of it (its range matches the digest), or a written
 * beginning to continue from (`prefix`: the scan, whose hash the download continues), or
 * nothing worth keeping.
 */
export type PartOnDisk =
  | { kind: "complete" }
  | { kind: "prefix"; scan: RangeScan }
  | { kind: "none" };

/**
 * Hashes every part range of the partial file at `path` (at most the pool's thread count at
 * once) and reports each part as it is known, so failed parts are fetched while others are
 * still being hashed. The same read finds, for a part that does not match, the prefix that was
 * written: bytes up to its first all-zero block (parts are written in order, and the partial's
 * unwritten bytes are zeros), without the zeros that end the block before. A prefix that is
 * empty or the whole part is not worth continuing: such a part is fetched whole.
 *
 * @example
 * ```ts ignore
 * import { scanPartial } from "./resume_scan.ts";
 * await scanPartial(manifest.parts, partial.path, threads, signal, (part, found) => {});
 * ```
 */
export async function scanPartial(
  parts: readonly PartDescriptor[],
  path: string,
  threads: Sha256Threads,
  signal: AbortSignal,
  onPart: (part: PartDescriptor, found: PartOnDisk) => void,
): Promise<void> {
  await Promise.all(parts.map(async (part) => {
    const scan = await threads.scanRange(path, part.offset, part.size, signal);
    if (scan.digest === part.digest) {
      scan.release();
      onPart(part, { kind: "complete" });
    } else if (scan.prefix > 0 && scan.prefix < part.size) {
      onPart(part, { kind: "prefix", scan });
    } else {
      scan.release();
      onPart(part, { kind: "none" });
    }
  }));
}
