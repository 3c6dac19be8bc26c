/**
 * `ocipart pull <ref> <dest>`: pulls a parted artifact into a file, resumably.
 *
 * @module
 */
import { toDirectory, toFile } from "../../parted/fs_partial.ts";
import { PartedClient } from "../../parted/client.ts";
import type { PullCommand } from "../args.ts";
import { EXIT_CODES } from "../exit_code.ts";
import { stdout } from "../io.ts";
import { jsonText } from "../../registry/untrusted_text.ts";
import { runRegistryCommand } from "../session.ts";
import { transferProgress } from "../transfer_progress.ts";

/**
 * Runs `pull` and resolves to the exit code.
 *
 * A destination that is a directory receives the file under the artifact's recorded name.
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
    ? toDirectory(command.destination)
    : toFile(command.destination);
  const progress = transferProgress(command.progress, {
    kind: "pull",
    destination: command.destination,
    intoDirectory,
  });
  return await runRegistryCommand({
    label: "ocipart pull",
    flags: command,
    localPath: command.destination,
    onFailure: progress.finish,
    run: async ({ clientOptions, signal }) => {
      progress.watch(signal);
      using client = new PartedClient(clientOptions);
      await client.pull(command.reference, destination, {
        ...(command.workers === undefined ? {} : { workers: command.workers }),
        verifyFileDigest: command.verifyFileDigest,
        onProgress: progress.onProgress,
        signal,
      });
      progress.finish(EXIT_CODES.success);
      if (command.json) {
        const result = { reference: command.reference, destination: command.destination };
        stdout(`${jsonText(result)}\n`);
      }
      return EXIT_CODES.success;
    },
  });
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    // Absent (the normal case) or not inspectable: the library reports what matters.
    return false;
  }
}
