/**
 * `ocipart pull <ref> <dest>`: pulls a parted artifact into a file, resumably.
 *
 * @module
 */
import { toFile } from "../../parted/fs_partial.ts";
import { PartedClient } from "../../parted/client.ts";
import type { PullCommand } from "../args.ts";
import { EXIT_CODES } from "../exit_code.ts";
import { stdout } from "../io.ts";
import { runRegistryCommand } from "../session.ts";
import { transferProgress } from "../transfer_progress.ts";
import { UsageError } from "../usage_error.ts";

/**
 * Runs `pull` and resolves to the exit code.
 *
 * @throws {UsageError} When the destination is a directory (spec: Library API rule 4).
 *
 * @example
 * ```ts ignore
 * import { runPull } from "./pull.ts";
 * const code = await runPull(parseCommandLine(["pull", ref, "model.bin"]) as PullCommand);
 * ```
 */
export async function runPull(command: PullCommand): Promise<number> {
  await checkDestination(command.destination);
  const progress = transferProgress(command.progress);
  return await runRegistryCommand({
    label: "ocipart pull",
    flags: command,
    localPath: command.destination,
    onFailure: progress.finish,
    run: async ({ clientOptions, signal }) => {
      using client = new PartedClient(clientOptions);
      await client.pull(command.reference, toFile(command.destination), {
        ...(command.workers === undefined ? {} : { workers: command.workers }),
        onProgress: progress.onProgress,
        signal,
      });
      progress.finish(EXIT_CODES.success);
      if (command.json) {
        const result = { reference: command.reference, destination: command.destination };
        stdout(`${JSON.stringify(result)}\n`);
      }
      return EXIT_CODES.success;
    },
  });
}

async function checkDestination(destination: string): Promise<void> {
  let isDirectory = false;
  try {
    isDirectory = (await Deno.stat(destination)).isDirectory;
  } catch {
    // Absent (the normal case) or not inspectable: the library reports what matters.
  }
  if (isDirectory) throw new UsageError("<dest> is a directory; name a file to write", "pull");
}
