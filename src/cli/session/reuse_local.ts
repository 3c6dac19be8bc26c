/**
 * Pulls that reuse local bytes: before a parted pull, a local file (the destination itself with
 * `--overwrite`, or `--reuse FILE`) is hashed at the artifact's part boundaries, as `verify`
 * does, and every part that matches is copied into the pull's partial file at its place. The
 * pull then resumes from that partial file as from an interrupted pull of its own: its resume
 * pass checks each part again by its digest and fetches only the others. A destination that is
 * already identical is left as it is, with nothing fetched.
 *
 * @module
 */
import { LocalFileError } from "../../errors/mod.ts";
import type { PartedClient, ProgressSnapshot, VerifyReport } from "../../parted/mod.ts";

/** What a reuse pass needs. */
export interface ReuseJob {
  /** The command's client. */
  readonly client: PartedClient;
  /** The reference pulled. */
  readonly reference: string;
  /** The local file whose matching parts are reused. */
  readonly source: string;
  /** The file the pull writes. */
  readonly destination: string;
  /** The partial file the pull resumes from: seeded only when it does not exist yet. */
  readonly partial: string;
  /** Parts hashed at once (`--workers`), or undefined for the library's default. */
  readonly workers: number | undefined;
  /** Stops the pass. */
  readonly signal: AbortSignal;
  /** Told how far the hashing of the local file is. */
  readonly onProgress?: (snapshot: ProgressSnapshot) => void;
}

/** What a reuse pass found. */
export interface ReuseResult {
  /** The source is identical to the artifact, part by part and in size. */
  readonly identical: boolean;
  /** Bytes copied into the partial file (0 when it existed already). */
  readonly copiedBytes: number;
  /** The artifact's file size. */
  readonly size: number;
  /** The artifact's part count. */
  readonly parts: number;
}

const COPY_BUFFER = 1 << 20;

/**
 * Hashes `job.source` by the artifact's parts and, when `job.partial` does not exist, creates it
 * with every matching part in place (the others stay holes of zeros, which the pull fetches).
 *
 * @example
 * ```ts ignore
 * const found = await seedFromLocal({ client, reference, source: "v1.bin",
 *   destination: "v2.bin", partial: "v2.bin.parted-partial", workers: undefined, signal });
 * ```
 */
export async function seedFromLocal(job: ReuseJob): Promise<ReuseResult> {
  const options = {
    signal: job.signal,
    ...(job.workers === undefined ? {} : { workers: job.workers }),
    ...(job.onProgress === undefined ? {} : { onProgress: job.onProgress }),
  };
  const report = await job.client.verify(job.reference, job.source, options);
  const sizes = { size: report.expectedSize, parts: report.parts.length };
  if (report.identical && job.source === job.destination) {
    return { identical: true, copiedBytes: 0, ...sizes };
  }
  const copiedBytes = await seed(job, report);
  return { identical: report.identical, copiedBytes, ...sizes };
}

async function seed(job: ReuseJob, report: VerifyReport): Promise<number> {
  const matching = report.parts.filter((part) => part.matches);
  if (matching.length === 0) return 0;
  let partial: Deno.FsFile;
  try {
    // Never through a link, never over a file already there (an interrupted pull's partial file
    // is resumed as it is).
    partial = await Deno.open(job.partial, { write: true, createNew: true });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return 0;
    throw new LocalFileError("cannot create the partial file", { cause: err });
  }
  using _partial = partial;
  using source = await Deno.open(job.source, { read: true });
  await partial.truncate(report.expectedSize);
  const buffer = new Uint8Array(COPY_BUFFER);
  let copied = 0;
  for (const part of matching) {
    job.signal.throwIfAborted();
    await source.seek(part.offset, Deno.SeekMode.Start);
    await partial.seek(part.offset, Deno.SeekMode.Start);
    let left = part.size;
    while (left > 0) {
      const n = await source.read(buffer.subarray(0, Math.min(left, buffer.length)));
      if (n === null || n === 0) throw new LocalFileError("the file to reuse became shorter");
      let written = 0;
      while (written < n) written += await partial.write(buffer.subarray(written, n));
      left -= n;
      copied += n;
    }
  }
  return copied;
}
