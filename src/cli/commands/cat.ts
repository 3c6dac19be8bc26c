/**
 * `ocipart cat <ref> [--range START-END]`: the file, or a range of it, on standard output.
 * Only the parts the range touches are fetched, each verified whole before any of its bytes is
 * written; with `--cache-dir` verified parts are kept there, so the next read of nearby bytes
 * fetches nothing.
 *
 * @module
 */
import type { CatCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { pipeToStdout, stderr } from "../session/io.ts";
import { openSession } from "../session/session.ts";

/**
 * Runs `cat` and resolves to the exit code. Nothing but the bytes is written to standard output.
 *
 * @example
 * ```ts ignore
 * import { runCat } from "./cat.ts";
 * const code = await runCat(parseCommandLine(["cat", "--range", "0-7", ref]) as CatCommand);
 * ```
 */
export async function runCat(command: CatCommand): Promise<number> {
  const session = await openSession({
    label: "ocipart cat",
    flags: command,
    reads: { flags: command, reference: command.reference },
  });
  if (typeof session === "number") return session;
  using _ = session;
  let reader;
  try {
    reader = await session.client.open(command.reference, {
      signal: session.signal,
      ...(command.cacheDir === undefined ? {} : { cacheDirectory: command.cacheDir }),
      ...(command.tempDir === undefined ? {} : { spillDirectory: command.tempDir }),
    });
    const { offset, length } = command.range ?? { offset: 0, length: undefined };
    const count = length ?? Math.max(0, reader.size - offset);
    if (offset + count > reader.size) {
      stderr(
        `ocipart cat: --range ${command.rangeText}: goes past the end of the file ` +
          `(${reader.size} bytes; the last byte is ${reader.size - 1})\n`,
      );
      return EXIT_CODES.usage;
    }
    await pipeToStdout(reader.stream(offset, count), session.signal);
    return EXIT_CODES.success;
  } catch (err) {
    return await session.failed(err);
  } finally {
    await reader?.close();
  }
}
