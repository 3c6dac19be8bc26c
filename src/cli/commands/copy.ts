/**
 * `ocipart copy <src-ref> <dst-ref>`: a parted artifact to another repository or registry,
 * without a local file. Prints the manifest digest (the source's), or with `--json` the
 * descriptor and how many parts were copied, mounted and already present.
 *
 * @module
 */
import { PartedClient } from "../../parted/client.ts";
import type { CopyCommand } from "../args.ts";
import { EXIT_CODES } from "../exit_code.ts";
import { stdout } from "../io.ts";
import { runRegistryCommand } from "../session.ts";
import { transferProgress } from "../transfer_progress.ts";

/**
 * Runs `copy` and resolves to the exit code.
 *
 * @example
 * ```ts ignore
 * import { runCopy } from "./copy.ts";
 * const code = await runCopy(parseCommandLine(["copy", src, dst]) as CopyCommand);
 * ```
 */
export function runCopy(command: CopyCommand): Promise<number> {
  const progress = transferProgress(command.progress, { kind: "copy" });
  return runRegistryCommand({
    label: "ocipart copy",
    flags: command,
    onFailure: progress.finish,
    run: async ({ clientOptions, signal }) => {
      progress.watch(signal);
      // Closed when the command ends, so no pooled connection outlives it.
      using client = new PartedClient(clientOptions);
      const result = await client.copy(command.source, command.target, {
        ...(command.workers === undefined ? {} : { workers: command.workers }),
        onProgress: progress.onProgress,
        signal,
      });
      progress.finish(EXIT_CODES.success);
      stdout(command.json ? `${JSON.stringify(result)}\n` : `${result.descriptor.digest}\n`);
      return EXIT_CODES.success;
    },
  });
}
