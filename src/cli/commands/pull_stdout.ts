/**
 * `ocipart pull <ref> -`: the file, in order, on standard output. Each part goes out once the
 * whole part has verified; a part that fails its digest ends the output at the end of the part
 * before it (exit 5). A reader that goes away (`| head -c 1M`) ends the pull quietly with exit
 * 0: every request is stopped and the temporary directory removed.
 *
 * @module
 */
import { toStream } from "../../parted/mod.ts";
import type { PullCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { openSession } from "../session/session.ts";
import { transferProgress } from "../progress/transfer_progress.ts";
import { readerGone } from "../session/io.ts";

/**
 * Runs `pull <ref> -` and resolves to the exit code. Nothing but the file is written to
 * standard output; progress and failures go to standard error.
 *
 * @example
 * ```ts ignore
 * import { runPullToStdout } from "./pull_stdout.ts";
 * const code = await runPullToStdout(parseCommandLine(["pull", ref, "-"]) as PullCommand);
 * ```
 */
export async function runPullToStdout(command: PullCommand): Promise<number> {
  const progress = transferProgress(command.progress, {
    kind: "pull",
    destination: "standard output",
    intoDirectory: false,
    toStdout: true,
  });
  const session = await openSession({
    label: "ocipart pull",
    flags: { ...command, intoDirectory: false },
    reads: { flags: command, reference: command.reference },
    localPath: "standard output",
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  try {
    await session.client.pull(
      command.reference,
      toStream(Deno.stdout.writable, {
        // Standard output has written each chunk out once its write resolves.
        reuseChunks: true,
        ...(command.tempDir === undefined ? {} : { spillDirectory: command.tempDir }),
      }),
      {
        ...(command.workers === undefined ? {} : { workers: command.workers }),
        onProgress: progress.onProgress,
        signal: session.signal,
      },
    );
    progress.finish(EXIT_CODES.success);
    return EXIT_CODES.success;
  } catch (err) {
    if (readerGone(err)) {
      // The reader took what it wanted (`| head`): not a failure of the pull.
      progress.finish(EXIT_CODES.success);
      return EXIT_CODES.success;
    }
    return await session.failed(err);
  }
}
