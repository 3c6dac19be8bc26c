/**
 * Copying one blob (a part or the config) from one repository to another: present already
 * (HEAD), mounted from the source repository when both are on one registry, or streamed — the
 * source's GET body piped into the target's PUT, verified by digest as it passes.
 *
 * @module
 */
import { LengthMismatchError, ProtocolError } from "../errors/kinds.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";
import { Sha256 } from "../hashing/sha256.ts";
import { getBlob } from "../remote/blob_reader.ts";
import { DigestCheck } from "../remote/digest_check.ts";
import { mirrorSpoiled } from "../remote/mirror_reads.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import { cancelUpload, completeUpload, mountBlob, openUpload } from "../remote/uploads.ts";
import type { Clock } from "../transport/clock.ts";
import { retry, type RetryPolicy } from "../remote/retry.ts";

/** What a blob copy needs. */
export interface BlobCopyContext {
  /** The repository the blob comes from. */
  source: RemoteRepository;
  /** The repository the blob goes to. */
  target: RemoteRepository;
  /** Both repositories are on one registry: ask for a cross-repository mount first. */
  sameRegistry: boolean;
  /** Told of every blob byte streamed from the source to the target (resends included). */
  onWire: (bytes: number) => void;
  /** Stops the copy. */
  signal: AbortSignal;
  /** Retry budget. */
  policy: RetryPolicy;
  /** Time source of the backoff. */
  clock: Clock;
}

/** A blob to copy. */
export interface CopiedBlob {
  /** What errors name it by, e.g. `part 3`. */
  readonly label: string;
  /** `sha256:<hex>`. */
  readonly digest: string;
  /** Its size in bytes. */
  readonly size: number;
}

/** How a blob reached the target. */
export type BlobCopyOutcome = "skipped" | "mounted" | "copied";

/**
 * Makes sure the target holds `blob`. Each attempt checks the target (HEAD), then asks for a
 * mount on one registry, then streams the blob: never more than a few chunks of it in memory,
 * nothing on disk. Bytes that do not hash to the digest fail with `DigestMismatchError` before
 * the upload is completed, and are not retried; other failures retry within the budget.
 *
 * @example
 * ```ts ignore
 * import { copyBlob } from "./part_copy.ts";
 * await copyBlob(context, { label: "part 0", digest, size });
 * ```
 */
export async function copyBlob(
  context: BlobCopyContext,
  blob: CopiedBlob,
): Promise<BlobCopyOutcome> {
  const { source, target, signal } = context;
  return await retry(`${blob.label}: copy`, async () => {
    if (await target.exists(blob.digest, signal)) return "skipped";
    if (context.sameRegistry && await mountBlob(target, blob.digest, source.name, signal)) {
      return "mounted";
    }
    await streamBlob(context, blob);
    return "copied";
  }, {
    policy: context.policy,
    signal,
    clock: context.clock,
  });
}

/** One attempt of the stream: GET from the source, PUT to a fresh session of the target. */
async function streamBlob(context: BlobCopyContext, blob: CopiedBlob): Promise<void> {
  const { source, target, signal } = context;
  let answer: Awaited<ReturnType<typeof getBlob>>;
  try {
    answer = await getBlob(source, blob.digest, 0, blob.size, signal);
  } catch (err) {
    // A whole-blob answer of another length is another blob: it cannot be had here.
    if (!(err instanceof LengthMismatchError)) throw err;
    throw new DigestMismatchError(blob.label, { cause: err });
  }
  if (answer === "complete") throw new ProtocolError("GET blob: no body for a whole blob");
  let failure: DigestMismatchError | undefined;
  const check = new DigestCheck(blob.digest, blob.label);
  const verifier = check.transform(new Sha256(), blob.size, context.onWire, (err) => failure = err);
  const stopPipe = new AbortController();
  const body = answer.body.pipeThrough(verifier, { signal: stopPipe.signal });
  let session: Awaited<ReturnType<typeof openUpload>> | undefined;
  try {
    session = await openUpload(target, signal);
    await completeUpload(target, session, blob.digest, blob.size, {
      make: () => body,
      replayable: false,
    }, signal);
    session = undefined;
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    // The bytes were wrong: that is the failure, whatever the transport made of it. A
    // mirror's wrong bytes are retried from the registry.
    if (failure !== undefined && answer.mirrored) {
      throw mirrorSpoiled(source, blob.digest, blob.label);
    }
    throw failure ?? err;
  } finally {
    // Releases the source's connection when the upload stopped before reading it all.
    stopPipe.abort();
    if (session !== undefined) await cancelUpload(target, session.location, signal);
  }
}
