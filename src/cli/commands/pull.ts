/**
 * `ocipart pull <ref> <dest>`: pulls a parted artifact into a file, resumably.
 *
 * @module
 */
import { findError } from "../../errors/mod.ts";
import {
  DestinationExistsError,
  jsonText,
  type PullResult,
  terminalText,
  toDirectory,
  toFile,
} from "../../parted/mod.ts";
import type { PullCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { noticeWrite, stdout } from "../session/io.ts";
import { pullWaiting } from "../session/pull_wait.ts";
import { openSession } from "../session/session.ts";
import { transferProgress } from "../progress/transfer_progress.ts";
import { runPullToStdout } from "./pull_stdout.ts";

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
  const progress = transferProgress(command.progress, {
    kind: "pull",
    destination: command.destination,
    intoDirectory,
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
    const result = await (command.waitMs === undefined ? pull() : pullWaiting(pull, {
      waitMs: command.waitMs,
      signal: session.signal,
      notice: (text) => noticeWrite(`ocipart pull: ${text}`),
      path: () => intoDirectory ? progress.pulledFile() : command.destination,
      reference: command.reference,
      client: session.client,
    })).catch((err) => {
      localPath = findError(err, DestinationExistsError)?.path ?? localPath;
      throw err;
    });
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
