/**
 * `ocipart push <ref> -`: pushes standard input, of a length known only at its end, as a
 * parted artifact. Parts are cut as bytes arrive; each waits in a temporary file while it is
 * hashed and uploaded, at most `--workers` of them at a time (workers × part size on disk).
 * The manifest is written last: input that breaks off with an error leaves none.
 *
 * @module
 */
import { fromStream, jsonText } from "../../parted/mod.ts";
import type { PushCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { stdout } from "../session/io.ts";
import { openSession } from "../session/session.ts";
import { transferProgress } from "../progress/transfer_progress.ts";

/**
 * Runs `push <ref> -` and resolves to the exit code; prints the manifest digest (or its
 * descriptor with `--json`), as a push of a file does.
 *
 * @example
 * ```ts ignore
 * import { runPushFromStdin } from "./push_stdin.ts";
 * const code = await runPushFromStdin(parseCommandLine(["push", ref, "-"]) as PushCommand);
 * ```
 */
export async function runPushFromStdin(command: PushCommand): Promise<number> {
  const progress = transferProgress(command.progress, { kind: "push" });
  const session = await openSession({
    label: "ocipart push",
    flags: command,
    localPath: "standard input",
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  try {
    const source = fromStream(
      Deno.stdin.readable,
      {
        ...(command.name === undefined ? {} : { name: command.name }),
        ...(command.tempDir === undefined ? {} : { spillDirectory: command.tempDir }),
      },
    );
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
