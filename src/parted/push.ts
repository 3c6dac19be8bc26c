/**
 * The push procedure: plan, one hashing read feeding concurrent part uploads, the empty config
 * blob, and the manifest written last.
 *
 * @module
 */
import { basename } from "node:path";
import { InvalidReferenceError, SourceChangedError } from "../errors/kinds.ts";
import {
  EMPTY_CONFIG_BYTES,
  EMPTY_CONFIG_DESCRIPTOR,
  OCI_MANIFEST_MEDIA_TYPE,
} from "../registry/media_types.ts";
import type { Descriptor } from "../registry/media_types.ts";
import { ShortFileError } from "../hashing/hash_range.ts";
import { sha256Digest } from "../hashing/sha256.ts";
import type { Clock } from "../transport/clock.ts";
import { retry, type RetryPolicy } from "../remote/retry.ts";
import { AsyncQueue } from "./async_queue.ts";
import type { Connection } from "./connection.ts";
import { isPlainFileName, PARTED_ARTIFACT_TYPE } from "./format.ts";
import { checkReadable, sameStamp, type SourceStamp, statSource } from "./fs_source.ts";
import { encodeManifest, layerLimitFailure, type PartDescriptor } from "./manifest.ts";
import { uploadPart } from "./part_upload.ts";
import { planParts } from "./plan.ts";
import { ProgressTracker } from "./progress.ts";
import { putManifest } from "../remote/manifests.ts";
import type { RemoteRepository } from "../remote/repository.ts";
import { completeUpload, openUpload } from "../remote/uploads.ts";
import type { TransferJob } from "./transfer_job.ts";
import { PushHashing } from "./push_hashing.ts";
import { FirstFailure, nextPart } from "./part_workers.ts";
import { PushTokens } from "./push_tokens.ts";

/** What the push procedure needs, already validated. */
export interface PushJob extends TransferJob {
  /** The source file. */
  path: string;
  /** Part size in bytes. */
  partSize: number;
  /** The caller's manifest annotations (keys already checked). */
  annotations?: Readonly<Record<string, string>>;
}

/**
 * Pushes the file of `job` through `connect()`'s transports and returns the manifest's
 * descriptor. The procedure, step by step: docs/protocol.md#push.
 *
 * @example
 * ```ts ignore
 * import { runPush } from "./push.ts";
 * const descriptor = await runPush(job, () => connect(stack, reference));
 * ```
 */
export async function runPush(job: PushJob, connect: () => Connection): Promise<Descriptor> {
  job.signal?.throwIfAborted();
  const stamp = await statSource(job.path);
  await checkReadable(job.path);
  const plan = planParts(stamp.size, job.partSize);
  const connection = connect();
  const latch = new FirstFailure(job.signal);
  const { signal } = latch;
  const progress = new ProgressTracker(stamp.size, plan.length, "hashing", job.onProgress);
  progress.onFailure = (err) => latch.stop(err);
  const hashing = new PushHashing(job, { path: job.path, size: stamp.size, plan }, signal);
  const push: PushRun = { job, connection, plan, stamp, signal, progress, hashing, latch };
  try {
    const hashed = await pushParts(push);
    return await pushManifest(push, hashed);
  } catch (err) {
    throw latch.publicError(err);
  } finally {
    progress.close();
    hashing.close();
  }
}

/** One push under way: what it reads, where it writes, and how it reports and stops. */
interface PushRun {
  readonly job: PushJob;
  readonly connection: Connection;
  readonly plan: ReturnType<typeof planParts>;
  readonly stamp: SourceStamp;
  readonly signal: AbortSignal;
  readonly progress: ProgressTracker;
  readonly hashing: PushHashing;
  readonly latch: FirstFailure;
}

/** The digests the hashing read found. */
interface HashedFile {
  fileDigest: string;
  partDigests: string[];
}

/**
 * The hashing read feeding the part uploads: each part is queued as soon as its digest is known
 * and uploaded by the first free worker unless the registry has it.
 */
async function pushParts(push: PushRun): Promise<HashedFile> {
  const { job, connection, plan, stamp, signal, progress, latch } = push;
  const queue = new AsyncQueue<PartDescriptor>();
  const hashed: HashedFile = { fileDigest: "", partDigests: new Array(plan.length) };
  const onPart = (part: PartDescriptor) => {
    hashed.partDigests[part.index] = part.digest;
    queue.push(part);
  };
  // The next digest is wanted soon: a worker waits for a part, or none is ready for the next
  // worker to take. Otherwise hashing is a part ahead, and the file digest may take its turn.
  const hashing = hashFile(push, onPart, () => queue.waiting > 0 || queue.length === 0).then(
    (digest) => {
      hashed.fileDigest = digest;
      queue.close();
    },
    (err) => {
      queue.close();
      latch.fail(err);
    },
  );
  const count = Math.min(job.workers, plan.length);
  const tokens = new PushTokens(connection.tokens, job.reference.repository, job.clock, count);
  const beforeUpload = (part: PartDescriptor, signal: AbortSignal) => {
    // A part is missing: uploads now wait for part digests, so they overtake the file digest.
    push.hashing.uploading();
    return tokens.renewFor(part.size, progress.snapshot.wireBytes, signal);
  };
  const context = {
    repo: connection.repo,
    path: job.path,
    fileSize: stamp.size,
    partSize: job.partSize,
    progress,
    signal,
    policy: job.policy,
    clock: job.clock,
    beforeUpload,
    tokenLifetimeMs: () => tokens.lifetimeMs(),
  };
  const work = async (part: PartDescriptor) => {
    progress.setPhase("uploading");
    const outcome = await uploadPart(context, part);
    // A present part: the push now waits for hashing more than for the link.
    if (outcome === "skipped") push.hashing.present();
    progress.completePart(part.index, part.size, outcome === "skipped" ? "exists" : "uploaded");
  };
  const workers = Array.from({ length: count }, async () => {
    for (let part; (part = await nextPart(queue, signal)) !== undefined;) {
      await work(part).catch((err) => latch.fail(err, part!.index));
    }
  });
  await latch.settle([hashing, ...workers], progress);
  return hashed;
}

/** The config blob, then the manifest, written last and only if the file did not change. */
async function pushManifest(push: PushRun, hashed: HashedFile): Promise<Descriptor> {
  const { job, stamp } = push;
  await checkUnchanged(job.path, stamp);
  return await writePartedManifest({
    job,
    connection: push.connection,
    signal: push.signal,
    progress: push.progress,
    fileSize: stamp.size,
    fileDigest: hashed.fileDigest,
    partDigests: hashed.partDigests,
    title: recordedTitle(job.path),
    beforePut: () => checkUnchanged(job.path, stamp),
  });
}

/** What {@linkcode writePartedManifest} writes and how it reports. */
export interface ManifestWrite {
  job: TransferJob & { partSize: number; annotations?: Readonly<Record<string, string>> };
  connection: Connection;
  signal: AbortSignal;
  progress: ProgressTracker;
  fileSize: number;
  fileDigest: string;
  partDigests: string[];
  title: string | undefined;
  /** Runs after the config and before the manifest's PUT (a file push checks its source). */
  beforePut?: () => Promise<void>;
}

/**
 * The config blob, then the parted manifest under the reference's tag (or its digest): the last
 * step of every push, from a file or a stream.
 */
export async function writePartedManifest(write: ManifestWrite): Promise<Descriptor> {
  const { job, connection, signal, progress, partDigests } = write;
  progress.setPhase("config");
  await ensureConfig(connection.repo, signal, job.policy, job.clock);
  const manifest = encodeManifest({
    partSize: job.partSize,
    fileSize: write.fileSize,
    fileDigest: write.fileDigest,
    partDigests,
    title: write.title,
    annotations: job.annotations,
  });
  const digest = sha256Digest(manifest);
  if (job.reference.digest !== undefined && job.reference.digest !== digest) {
    throw new InvalidReferenceError("digest differs from the pushed manifest's digest");
  }
  progress.setPhase("manifest");
  await write.beforePut?.();
  const target = job.reference.tag ?? digest;
  const retries = { policy: job.policy, signal, clock: job.clock };
  await retry("PUT manifest", () => putManifest(connection.repo, target, manifest, signal), retries)
    .catch((err) => {
      throw layerLimitFailure(err, job.partSize, partDigests.length) ?? err;
    });
  progress.setPhase("done");
  if (progress.failure !== undefined) throw progress.failure;
  return {
    mediaType: OCI_MANIFEST_MEDIA_TYPE,
    digest,
    size: manifest.byteLength,
    artifactType: PARTED_ARTIFACT_TYPE,
  };
}

/**
 * The source's base name in NFC form (a macOS name arrives decomposed), when a pull into a
 * directory could use it (else no title).
 */
export function recordedTitle(path: string): string | undefined {
  const name = basename(path).normalize("NFC");
  return isPlainFileName(name) ? name : undefined;
}

/**
 * The hashing read (see `push_hashing.ts`), then a check that the file did not change while it
 * was read.
 */
async function hashFile(
  push: PushRun,
  onPart: (part: PartDescriptor) => void,
  partWanted: () => boolean,
): Promise<string> {
  try {
    const digest = await push.hashing.run(onPart, partWanted);
    await checkUnchanged(push.job.path, push.stamp);
    return digest;
  } catch (err) {
    if (err instanceof ShortFileError) {
      throw new SourceChangedError("file ended before its planned size", { cause: err });
    }
    throw err;
  }
}

async function checkUnchanged(path: string, stamp: SourceStamp): Promise<void> {
  let now: SourceStamp;
  try {
    now = await statSource(path);
  } catch (err) {
    throw new SourceChangedError("file can no longer be read", { cause: err });
  }
  if (!sameStamp(stamp, now)) throw new SourceChangedError("file was modified");
}

/**
 * Puts the empty config blob unless the registry has it.
 *
 * @example
 * ```ts ignore
 * await ensureConfig(repo, signal, policy, clock);
 * ```
 */
export async function ensureConfig(
  repo: RemoteRepository,
  signal: AbortSignal,
  policy: RetryPolicy,
  clock: Clock,
): Promise<void> {
  const digest = EMPTY_CONFIG_DESCRIPTOR.digest;
  await retry("config blob", async () => {
    if (await repo.exists(digest, signal)) return;
    const session = await openUpload(repo, signal);
    await completeUpload(repo, session, digest, EMPTY_CONFIG_BYTES.byteLength, {
      make: () => EMPTY_CONFIG_BYTES.slice(),
      replayable: true,
    }, signal);
  }, { policy, signal, clock });
}
