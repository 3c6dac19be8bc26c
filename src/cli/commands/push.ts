/**
 * `ocipart push <ref> <file>`: pushes a file as a parted artifact and prints the manifest
 * digest (or its descriptor with `--json`). When a registry limit refuses the part size, the
 * failure report ends its advice with the command to run (`src/cli/words/part_size_words.ts`,
 * from the arguments the command object carries).
 *
 * `<file>` `-` is standard input, of a length known only at its end: parts are cut as bytes
 * arrive, each waits in a temporary file while it is hashed and uploaded, at most `--workers` of
 * them at a time (workers × part size on disk); the manifest is written last, so input that
 * breaks off with an error leaves none.
 *
 * @module
 */
import { fromFile, fromStream, jsonText } from "../../parted/mod.ts";
import type { PushCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { stdout } from "../session/io.ts";
import { openSession } from "../session/session.ts";
import { transferProgress } from "../progress/transfer_progress.ts";

/**
 * Runs `push` and resolves to the exit code.
 *
 * @example
 * ```ts ignore
 * import { runPush } from "./push.ts";
 * const code = await runPush(parseCommandLine(["push", ref, "model.bin"]) as PushCommand);
 * ```
 */
export async function runPush(command: PushCommand): Promise<number> {
  const fromStdin = command.file === "-";
  const progress = transferProgress(command.progress, { kind: "push", fromStdin });
  const session = await openSession({
    label: "ocipart push",
    flags: command,
    localPath: fromStdin ? "standard input" : command.file,
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  try {
    const source = fromStdin
      ? fromStream(Deno.stdin.readable, {
        ...(command.name === undefined ? {} : { name: command.name }),
        ...(command.tempDir === undefined ? {} : { spillDirectory: command.tempDir }),
      })
      : fromFile(command.file);
    const descriptor = await session.client.push(command.reference, source, {
      ...(command.workers === undefined ? {} : { workers: command.workers }),
      ...(command.partSize === undefined ? {} : { partSize: command.partSize }),
      annotations: command.annotations,
      onProgress: progress.onProgress,
      signal: session.signal,
    });
    progress.finish(EXIT_CODES.success);
    stdout(command.json ? `${jsonText(descriptor)}\n` : `${descriptor.digest}\n`);
    return EXIT_CODES.success;
  } catch (err) {
    return await session.failed(err);
  }
}
