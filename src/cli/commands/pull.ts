/**
 * `ocipart pull <ref> <dest>`: pulls a parted artifact into a file, resumably.
 *
 * @module
 */
import { findError, LocalFileError, NotPartedArtifactError } from "../../errors/mod.ts";
import {
  DestinationExistsError,
  isPlainFileName,
  jsonText,
  type PullResult,
  terminalText,
  toDirectory,
  toFile,
} from "../../parted/mod.ts";
import type { PullCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { noticeWrite, stderr, stdout } from "../session/io.ts";
import { usageFailureJson } from "../words/failure_json.ts";
import { usagePointer } from "../arguments/usage.ts";
import { UsageError } from "../arguments/usage_error.ts";
import { pullWaiting } from "../session/pull_wait.ts";
import { openSession, type Session } from "../session/session.ts";
import { type TransferProgress, transferProgress } from "../progress/transfer_progress.ts";
import { runPullToStdout } from "./pull_stdout.ts";
import { BLOB_PARTIAL_SUFFIX } from "../session/blob_file.ts";
import { pullFileArtifact } from "./pull_file.ts";
import { seedFromLocal } from "../session/reuse_local.ts";

/**
 * Runs `pull` and resolves to the exit code. On success the path written is the only line on
 * standard output (with `--json`, one JSON object: the reference, the destination as typed,
 * and the library's result).
 *
 * A destination that is a directory receives the file under the artifact's recorded name; a
 * file of that name is replaced only with `--overwrite`. With `--wait`, another pull of the
 * destination is waited for (`src/cli/session/pull_wait.ts`).
 *
 * @example
 * ```ts ignore
 * import { runPull } from "./pull.ts";
 * const code = await runPull(parseCommandLine(["pull", ref, "model.bin"]) as PullCommand);
 * ```
 */
export async function runPull(command: PullCommand): Promise<number> {
  if (command.destination === "-") return await runPullToStdout(command);
  const intoDirectory = await isDirectory(command.destination);
  const destination = intoDirectory
    ? toDirectory(command.destination, { overwrite: command.overwrite })
    : toFile(command.destination);
  // An artifact of one file per layer is pulled by the blob engine, into its own partial file.
  let partialSuffix = ".parted-partial";
  const progress = transferProgress(command.progress, {
    kind: "pull",
    destination: command.destination,
    intoDirectory,
    get partialSuffix() {
      return partialSuffix;
    },
  });
  // A refusal names the file the pull would have written, inside the directory typed.
  let localPath = command.destination;
  const session = await openSession({
    label: "ocipart pull",
    flags: { ...command, intoDirectory },
    reads: { flags: command, reference: command.reference },
    get localPath() {
      return localPath;
    },
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  try {
    const pull = () =>
      session.client.pull(command.reference, destination, {
        ...(command.workers === undefined ? {} : { workers: command.workers }),
        verifyFileDigest: command.verifyFileDigest,
        onProgress: progress.onProgress,
        signal: session.signal,
      });
    // An artifact of one file per layer: its file through the blob engine, into its own partial.
    const pullFile = () => {
      partialSuffix = BLOB_PARTIAL_SUFFIX;
      return pullFileArtifact({
        command,
        intoDirectory,
        session,
        progress,
        onPath: (path) => localPath = path,
      }).catch((err) => {
        localPath = findError(err, DestinationExistsError)?.path ?? localPath;
        throw err;
      });
    };
    if (command.layerFile !== undefined) {
      // --file names a layer's file: only an artifact of one file per layer has one.
      const code = await pullFile();
      if (code !== undefined) return code;
      progress.finish(EXIT_CODES.usage);
      return noLayerFiles(command);
    }
    const reused = await reuseLocal(command, intoDirectory, session, progress).catch((err) => {
      // The file to reuse could not be read: the report names it, not the destination.
      if (command.reuse !== undefined && findError(err, LocalFileError) !== undefined) {
        localPath = command.reuse;
      }
      throw err;
    });
    if (reused.upToDate !== undefined) {
      const { size, parts } = reused.upToDate;
      progress.onProgress({
        phase: "done",
        completedBytes: size,
        transferredBytes: size,
        wireBytes: 0,
        totalBytes: size,
        partsDone: parts,
        partsSkipped: parts,
        partsTotal: parts,
        partsActive: 0,
        events: [],
      });
      progress.finish(EXIT_CODES.success);
      return upToDate(command, reused.upToDate.path);
    }
    const parted = command.waitMs === undefined ? pull() : pullWaiting(pull, {
      waitMs: command.waitMs,
      signal: session.signal,
      notice: (text) => noticeWrite(`ocipart pull: ${text}`),
      path: () => intoDirectory ? progress.pulledFile() : command.destination,
      reference: command.reference,
      client: session.client,
    });
    const result = await parted.catch(async (err) => {
      if (findError(err, NotPartedArtifactError) !== undefined) {
        const code = await pullFile();
        if (code !== undefined) return code;
      }
      localPath = findError(err, DestinationExistsError)?.path ?? localPath;
      throw err;
    });
    if (typeof result === "number") return result;
    progress.finish(EXIT_CODES.success);
    stdout(resultLine(command, result));
    return EXIT_CODES.success;
  } catch (err) {
    return await session.failed(err);
  }
}

/**
 * Before the pull: with `--reuse FILE`, or with `--overwrite` and the destination's file present,
 * copies the parts of that file that match into the partial file (`src/cli/reuse_local.ts`);
 * says when the destination is already identical.
 */
async function reuseLocal(
  command: PullCommand,
  intoDirectory: boolean,
  session: Session,
  progress: TransferProgress,
): Promise<{ upToDate?: { path: string; size: number; parts: number } }> {
  if (command.reuse === undefined && !command.overwrite) return {};
  if (command.reuse !== undefined && !await isFile(command.reuse)) {
    // Named as typed (the report escapes it): the user gave this path.
    throw new Error(`--reuse: ${command.reuse} is not a regular file`);
  }
  let path = command.destination;
  if (intoDirectory) {
    let title: string | undefined;
    try {
      title = (await session.client.inspect(command.reference, { signal: session.signal })).title;
    } catch (err) {
      // An artifact of another kind: the pull itself says what it is.
      if (findError(err, NotPartedArtifactError) !== undefined) return {};
      throw err;
    }
    // A title the pull refuses: the pull says so.
    if (title === undefined || !isPlainFileName(title)) return {};
    path = `${command.destination.replace(/\/+$/, "")}/${title}`;
  }
  const source = command.reuse ?? (await isFile(path) ? path : undefined);
  if (source === undefined) return {};
  try {
    const found = await seedFromLocal({
      client: session.client,
      reference: command.reference,
      source,
      destination: path,
      partial: `${path}.parted-partial`,
      workers: command.workers,
      signal: session.signal,
      // Shown as the check of a partial file: a stop during it keeps nothing new.
      // (never "done": the pull goes on), without per-part events of its own.
      onProgress: (snapshot) =>
        progress.onProgress({
          ...snapshot,
          phase: "verifying",
          events: [],
          resumeChecked: false,
        }),
    });
    return found.identical && source === path
      ? { upToDate: { path, size: found.size, parts: found.parts } }
      : {};
  } catch (err) {
    if (findError(err, NotPartedArtifactError) !== undefined) return {};
    throw err;
  }
}

/** `--file` for an artifact whose layers name no file (a parted artifact is one file). */
function noLayerFiles(command: PullCommand): number {
  const sentence = "--file: the layers of this artifact name no file; a parted artifact is " +
    "pulled whole, without --file";
  const err = new UsageError(sentence, "pull");
  if (command.json) stderr(usageFailureJson(err, usagePointer("pull")));
  else stderr(`ocipart pull: ${sentence}\nocipart pull: ${usagePointer("pull")}\n`);
  return EXIT_CODES.usage;
}

/** The destination was already identical: its path, and a line that says nothing was fetched. */
function upToDate(command: PullCommand, path: string): number {
  noticeWrite(
    `ocipart pull: ${
      terminalText(path)
    } is up to date (identical to the artifact; nothing fetched)\n`,
  );
  if (command.json) {
    const { reference, destination } = command;
    stdout(`${jsonText({ reference, destination, path, upToDate: true, bytesFetched: 0 })}\n`);
  } else {
    stdout(`${terminalText(path)}\n`);
  }
  return EXIT_CODES.success;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.lstat(path)).isFile;
  } catch {
    return false;
  }
}

/** The path written; with `--json`, the reference and destination typed and the result. */
function resultLine(command: PullCommand, result: PullResult): string {
  // Inside a directory the file's name is the registry's title: escaped like any of its text.
  if (!command.json) return `${terminalText(result.path)}\n`;
  const { reference, destination } = command;
  return `${jsonText({ reference, destination, ...result })}\n`;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    // Absent (the normal case) or not inspectable: the library reports what matters.
    return false;
  }
}
