/**
 * `ocipart blob pull|push|exists|mount`: single blobs through the blob library, with the
 * session (credentials, TLS, proxies, `--limit-rate`, `--timeout`, stop signals, failure
 * reports and exit codes) of the other commands.
 *
 * @module
 */
import { LocalFileError, NotFoundError } from "../../errors/mod.ts";
import { jsonText, terminalText } from "../../parted/mod.ts";
import { openRunningSha256 } from "../session/running_sha256.ts";
import type {
  BlobExistsCommand,
  BlobMountCommand,
  BlobPullCommand,
  BlobPushCommand,
} from "../arguments/args.ts";
import { blobClientOf } from "../session/blob_client.ts";
import { BLOB_PARTIAL_SUFFIX, defaultChunkSize, pullBlobFile } from "../session/blob_file.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { pipeToStdout, stderr, stdout } from "../session/io.ts";
import { openSession } from "../session/session.ts";
import { transferProgress } from "../progress/transfer_progress.ts";

/** Ranged reads at once when `--workers` is not given. */
const DEFAULT_WORKERS = 8;
/** Bytes per ranged read when `--chunk-size` is not given. */
const DEFAULT_CHUNK_SIZE = 8 << 20;

/**
 * Runs `blob pull` and resolves to the exit code: the file written is the only line on standard
 * output (nothing with `-`, whose bytes are the output).
 *
 * @example
 * ```ts ignore
 * const code = await runBlobPull(parseCommandLine(["blob", "pull", ref, "data.bin"]) as BlobPullCommand);
 * ```
 */
export async function runBlobPull(command: BlobPullCommand): Promise<number> {
  const toStdout = command.destination === "-";
  const progress = transferProgress(toStdout ? "none" : command.progress, {
    kind: "pull",
    destination: command.destination,
    intoDirectory: false,
    partialSuffix: BLOB_PARTIAL_SUFFIX,
    toStdout,
  });
  const session = await openSession({
    label: "ocipart blob pull",
    flags: command,
    localPath: command.destination,
    reads: { flags: command, reference: command.reference },
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  const workers = command.workers ?? DEFAULT_WORKERS;
  // For the stream to standard output; a pull into a file sizes its reads by the blob.
  const chunkSize = command.chunkSize ?? DEFAULT_CHUNK_SIZE;
  using blobs = blobClientOf(session, command.repository, {
    parallelPull: { workers, chunkSize },
  });
  const { client } = blobs;
  const { repository, digest } = command;
  const signal = session.signal;
  try {
    if (toStdout) {
      const stream = await client.pull(repository, digest, { signal });
      await pipeToStdout(stream, signal);
      return EXIT_CODES.success;
    }
    if (await isDirectory(command.destination)) {
      throw new LocalFileError("blob pull: the destination is a directory; name the file to write");
    }
    if (!await client.exists(repository, digest, { signal })) {
      throw new NotFoundError("HEAD blob: status 404", { status: 404 });
    }
    const size = await blobs.statedSize(digest, signal);
    if (size === undefined) {
      throw new Error("HEAD blob: the registry states no size, so the pull cannot be split");
    }
    const result = await pullBlobFile({
      client,
      repository,
      digest,
      size,
      path: command.destination,
      workers,
      chunkSize: command.chunkSize ?? defaultChunkSize(size, workers),
      signal,
      onProgress: progress.onProgress,
      registryOnly: blobs.registryOnly,
    });
    progress.finish(EXIT_CODES.success);
    stdout(
      command.json
        ? `${
          jsonText({
            reference: command.reference,
            destination: command.destination,
            digest: result.digest,
            size: result.size,
            bytesFetched: result.fetchedBytes,
            bytesResumed: result.resumedBytes,
          })
        }\n`
        // Typed text shown to a terminal: escaped.
        : `${terminalText(command.destination)}\n`,
    );
    return EXIT_CODES.success;
  } catch (err) {
    return await session.failed(err);
  }
}

/**
 * Runs `blob push` and resolves to the exit code: prints the blob's digest.
 *
 * @example
 * ```ts ignore
 * const code = await runBlobPush(parseCommandLine(["blob", "push", repo, "data.bin"]) as BlobPushCommand);
 * ```
 */
export async function runBlobPush(command: BlobPushCommand): Promise<number> {
  const progress = transferProgress(command.progress, { kind: "push" });
  const session = await openSession({
    label: "ocipart blob push",
    flags: command,
    localPath: command.file,
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  using blobs = blobClientOf(
    session,
    command.reference,
    command.chunkSize === undefined ? {} : { chunkedUpload: { chunkSize: command.chunkSize } },
  );
  try {
    const { digest, size } = await fileDigest(command.file, session.signal);
    let done = 0;
    await blobs.client.push(
      command.reference,
      digest,
      size,
      () => Deno.openSync(command.file).readable,
      {
        signal: session.signal,
        onWireProgress: (delta) => {
          done += delta;
          progress.onProgress({
            phase: "uploading",
            completedBytes: Math.min(done, size),
            wireBytes: done,
            totalBytes: size,
          });
        },
      },
    );
    progress.onProgress({ phase: "done", completedBytes: size, wireBytes: done, totalBytes: size });
    progress.finish(EXIT_CODES.success);
    stdout(command.json ? `${jsonText({ digest, size })}\n` : `${digest}\n`);
    return EXIT_CODES.success;
  } catch (err) {
    return await session.failed(err);
  }
}

/**
 * Runs `blob exists`: prints `present` (exit 0) or `absent` (exit 3).
 *
 * @example
 * ```ts ignore
 * const code = await runBlobExists(parseCommandLine(["blob", "exists", ref]) as BlobExistsCommand);
 * ```
 */
export async function runBlobExists(command: BlobExistsCommand): Promise<number> {
  const session = await openSession({ label: "ocipart blob exists", flags: command });
  if (typeof session === "number") return session;
  using _ = session;
  using blobs = blobClientOf(session, command.repository, {});
  try {
    const exists = await blobs.client.exists(command.repository, command.digest, {
      signal: session.signal,
    });
    stdout(command.json ? `${jsonText({ exists })}\n` : exists ? "present\n" : "absent\n");
    return exists ? EXIT_CODES.success : EXIT_CODES.notFound;
  } catch (err) {
    return await session.failed(err);
  }
}

/**
 * Runs `blob mount`: prints `mounted` (exit 0), or says the registry declined (exit 1).
 *
 * @example
 * ```ts ignore
 * const code = await runBlobMount(parseCommandLine(["blob", "mount", from, to]) as BlobMountCommand);
 * ```
 */
export async function runBlobMount(command: BlobMountCommand): Promise<number> {
  const session = await openSession({ label: "ocipart blob mount", flags: command });
  if (typeof session === "number") return session;
  using _ = session;
  using blobs = blobClientOf(session, command.target, {});
  try {
    const mounted = await blobs.client.mount(command.target, command.from, command.digest, {
      signal: session.signal,
    });
    if (command.json) stdout(`${jsonText({ mounted })}\n`);
    else if (mounted) stdout("mounted\n");
    else {
      stderr(
        "ocipart blob mount: not mounted: the registry declined (the blob is not in the source " +
          "repository, or the registry does not mount); push it with ocipart blob push\n",
      );
    }
    return mounted ? EXIT_CODES.success : EXIT_CODES.failure;
  } catch (err) {
    return await session.failed(err);
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    return false;
  }
}

/** The sha256 digest and size of `path`, read once. */
async function fileDigest(
  path: string,
  signal: AbortSignal,
): Promise<{ digest: string; size: number }> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (err) {
    throw new LocalFileError("cannot open the file", { cause: err });
  }
  using _ = file;
  const info = await file.stat();
  if (!info.isFile) throw new LocalFileError("not a regular file");
  const hash = openRunningSha256();
  try {
    const buffer = new Uint8Array(1 << 20);
    let size = 0;
    for (;;) {
      signal.throwIfAborted();
      const n = await file.read(buffer);
      if (n === null) break;
      await hash.update(buffer.subarray(0, n));
      size += n;
    }
    return { digest: await hash.digest(), size };
  } finally {
    hash.close();
  }
}
