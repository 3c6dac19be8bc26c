/**
 * `ocipart pull <ref> <dest>`: pulls a parted artifact into a file, resumably.
 *
 * @module
 */
import { findError } from "../../errors/find_error.ts";
import { NotPartedArtifactError } from "../../errors/sentinels.ts";
import { BLOB_PARTIAL_SUFFIX } from "../blob_file.ts";
import { pullFileArtifact } from "./pull_file.ts";
import { DestinationExistsError } from "../../parted/destination_exists_error.ts";
import { toDirectory, toFile } from "../../parted/fs_partial.ts";
import type { PullResult } from "../../parted/pull.ts";
import type { PullCommand } from "../args.ts";
import { EXIT_CODES } from "../exit_code.ts";
import { noticeWrite, stdout } from "../io.ts";
import { pullWaiting } from "../pull_wait.ts";
import { jsonText, terminalText } from "../../registry/untrusted_text.ts";
import { openSession } from "../session.ts";
import { transferProgress } from "../transfer_progress.ts";

/**
 * Runs `pull` and resolves to the exit code. On success the path written is the only line on
 * standard output (with `--json`, one JSON object: the reference, the destination as typed,
 * and the library's result).
 *
 * A destination that is a directory receives the file under the artifact's recorded name; a
 * file of that name is replaced only with `--overwrite`. With `--wait`, another pull of the
 * destination is waited for (`src/cli/pull_wait.ts`).
 *
 * @example
 * ```ts ignore
 * import { runPull } from "./pull.ts";
 * const code = await runPull(parseCommandLine(["pull", ref, "model.bin"]) as PullCommand);
 * ```
 */
export async function runPull(command: PullCommand): Promise<number> {
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
        partialSuffix = BLOB_PARTIAL_SUFFIX;
        const code = await pullFileArtifact({
          command,
          intoDirectory,
          session,
          progress,
          onPath: (path) => localPath = path,
        }).catch((other) => {
          localPath = findError(other, DestinationExistsError)?.path ?? localPath;
          throw other;
        });
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
