/**
 * The copy procedure: resolve and verify the source manifest, bring every part and the config
 * to the target repository (present, mounted or streamed) with concurrent workers, then write
 * the source manifest's exact bytes, so the copy has the same digest.
 *
 * @module
 */
import { InvalidReferenceError } from "../errors/kinds.ts";
import {
  type Descriptor,
  EMPTY_CONFIG_DESCRIPTOR,
  OCI_MANIFEST_MEDIA_TYPE,
} from "../registry/media_types.ts";
import type { Reference } from "../registry/reference.ts";
import { putManifest } from "../remote/manifests.ts";
import { retry } from "../remote/retry.ts";
import { AsyncQueue } from "./async_queue.ts";
import type { Connection } from "./connection.ts";
import { PARTED_ARTIFACT_TYPE } from "./format.ts";
import type { PartDescriptor } from "./manifest.ts";
import { resolveManifest } from "./resolve_manifest.ts";
import { type BlobCopyContext, type BlobCopyOutcome, copyBlob } from "./part_copy.ts";
import { FirstFailure, nextPart } from "./part_workers.ts";
import { ProgressTracker } from "./progress.ts";
import type { TransferJob } from "./transfer_job.ts";

/** What the copy procedure needs, already validated; `reference` is the source. */
export interface CopyJob extends TransferJob {
  /** Where the copy goes (a tag, or a digest that must be the source manifest's). */
  target: Reference;
}

/**
 * What a copy did.
 *
 * @example Reporting a copy
 * ```ts
 * import type { CopyResult } from "@ocipart/ocipart";
 * const report = (r: CopyResult) =>
 *   `${r.descriptor.digest}: ${r.copied} copied, ${r.mounted} mounted, ${r.skipped} present`;
 * console.log(report({
 *   descriptor: { mediaType: "m", digest: "sha256:…", size: 1 },
 *   copied: 2,
 *   mounted: 0,
 *   skipped: 1,
 * }));
 * // "sha256:…: 2 copied, 0 mounted, 1 present"
 * ```
 */
export interface CopyResult {
  /** The copied manifest's descriptor; its digest is the source manifest's. */
  descriptor: Descriptor;
  /** Parts streamed from the source registry to the target. */
  copied: number;
  /** Parts mounted from the source repository (same registry; no bytes moved). */
  mounted: number;
  /** Parts the target already held. */
  skipped: number;
}

/** What a part's copy outcome is called in progress events. */
const PART_EVENT: Record<BlobCopyOutcome, "exists" | "uploaded" | "mounted"> = {
  skipped: "exists",
  copied: "uploaded",
  mounted: "mounted",
};

/**
 * Copies the artifact of `job.reference` to `job.target`. `connect(reference)` gives the
 * connection of either side; each registry authenticates with its own credentials.
 *
 * @example
 * ```ts ignore
 * import { runCopy } from "./copy.ts";
 * const result = await runCopy(job, (reference) => connect(stack, reference));
 * ```
 */
export async function runCopy(
  job: CopyJob,
  connect: (reference: Reference) => Connection,
): Promise<CopyResult> {
  job.signal?.throwIfAborted();
  const sourceConnection = connect(job.reference);
  const source = sourceConnection.repo;
  const target = connect(job.target).repo;
  const latch = new FirstFailure(job.signal);
  const { signal } = latch;
  const { policy, clock } = job;
  try {
    const fetched = await resolveManifest(sourceConnection, job.reference, {
      signal,
      policy,
      clock,
    });
    const manifest = fetched.manifest;
    if (job.target.digest !== undefined && job.target.digest !== fetched.digest) {
      throw new InvalidReferenceError("target digest differs from the source manifest's digest");
    }
    const progress = new ProgressTracker(
      manifest.fileSize,
      manifest.parts.length,
      "resolving",
      job.onProgress,
    );
    progress.onFailure = (err) => latch.stop(err);
    const context: BlobCopyContext = {
      source,
      target,
      sameRegistry: source.origin.origin === target.origin.origin,
      onWire: (n) => progress.addWire(n),
      signal,
      policy,
      clock,
    };
    const counts: Record<BlobCopyOutcome, number> = { copied: 0, mounted: 0, skipped: 0 };
    const queue = new AsyncQueue<PartDescriptor>();
    for (const part of manifest.parts) queue.push(part);
    queue.close();
    const count = Math.min(job.workers, manifest.parts.length);
    const work = async (part: PartDescriptor) => {
      progress.setPhase("uploading");
      const outcome = await copyBlob(context, { label: `part ${part.index}`, ...part });
      counts[outcome]++;
      progress.completePart(part.index, part.size, PART_EVENT[outcome]);
    };
    const workers = Array.from({ length: count }, async () => {
      for (let part; (part = await nextPart(queue, signal)) !== undefined;) {
        await work(part).catch((err) => latch.fail(err, part!.index));
      }
    });
    await latch.settle(workers, progress);
    progress.setPhase("config");
    await copyBlob(context, { label: "config", ...EMPTY_CONFIG_DESCRIPTOR });
    progress.setPhase("manifest");
    const at = job.target.tag ?? fetched.digest;
    await retry("PUT manifest", () => putManifest(target, at, fetched.bytes, signal), {
      policy,
      signal,
      clock,
    });
    progress.setPhase("done");
    if (progress.failure !== undefined) throw progress.failure;
    const descriptor = {
      mediaType: OCI_MANIFEST_MEDIA_TYPE,
      digest: fetched.digest,
      size: fetched.bytes.byteLength,
      artifactType: PARTED_ARTIFACT_TYPE,
    };
    return { descriptor, ...counts };
  } catch (err) {
    throw latch.publicError(err);
  }
}
