/**
 * The reference command-line tool, `ocipart`: pushes one file to an OCI registry as a parted
 * artifact and pulls it back, mapping the library's error contract to exit codes.
 *
 * ```sh
 * ocipart push [flags] <ref> <file>   # prints the manifest digest
 * ocipart pull [flags] <ref> <dest>   # prints nothing
 * ```
 *
 * Exit codes: 0 success, 1 failure with no sentinel (including an expired `--timeout`), 2 usage
 * error, 3 not found, 4 not a parted artifact, 5 digest mismatch, 6 unauthorized, 7 part too
 * large, 130 SIGINT, 143 SIGTERM. On failure standard error carries the library's error on one
 * line, then a line naming the matched sentinel class and code, stating that none matched, or
 * naming the signal.
 *
 * Permissions (the narrowest set that works; `deno task compile` bakes in the general form):
 * - `--allow-net`: the registry and its token endpoint (`--allow-net=<host>` when known).
 * - `--allow-read`: the source file, `--ca-file`, and the docker configuration
 *   (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`).
 * - `--allow-write`: the destination's directory, where `<dest>.parted-partial` is written and
 *   renamed onto `<dest>`.
 * - `--allow-sys=statfs`: to compare a pull's size with the destination's free space before
 *   sizing the partial file (without it that check is skipped).
 * - `--allow-env=HOME,DOCKER_CONFIG`: to find the docker configuration; without it the tool
 *   runs anonymously or with `--username`. Add `HTTP_PROXY,HTTPS_PROXY,NO_PROXY` (and their
 *   lowercase forms) to go through a forward proxy; unreadable, they count as unset.
 * - `--allow-run=docker-credential-<name>`: only when the docker configuration names a
 *   credential helper; helpers then also need the whole environment readable (`--allow-env`),
 *   because the helper process inherits it.
 *
 * @module
 */
import denoJson from "./deno.json" with { type: "json" };
import { fromFile, PartedClient, type ProgressSnapshot, toFile } from "./src/parted/mod.ts";
import {
  type CliCommand,
  parseCommandLine,
  type PullCommand,
  type PushCommand,
} from "./src/cli/args.ts";
import { startDeadline } from "./src/cli/deadline.ts";
import { errorLine, EXIT_CODES, exitOutcome } from "./src/cli/exit_code.ts";
import { causeCodes } from "./src/transport/failure.ts";
import { debugLine } from "./src/cli/debug_log.ts";
import { LocalFileError } from "./src/errors/kinds.ts";
import { findError } from "./src/errors/find_error.ts";
import { createProgressRenderer } from "./src/cli/progress.ts";
import { readPasswordFromStdin } from "./src/cli/read_password.ts";
import { trapStopSignals } from "./src/cli/signals.ts";
import { usageText } from "./src/cli/usage.ts";
import { UsageError } from "./src/cli/usage_error.ts";
import { type CommandIo, copyCommand } from "./src/cli/commands/copy.ts";

const PROGRAM = "ocipart";
const encoder = new TextEncoder();

function writeAll(stream: { writeSync(p: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.byteLength > 0) bytes = bytes.subarray(stream.writeSync(bytes));
}

function stderr(text: string): void {
  writeAll(Deno.stderr, text);
}

function stdout(text: string): void {
  writeAll(Deno.stdout, text);
}

/** Progress is best effort: a closed or broken stderr must not fail the transfer. */
function progressWrite(text: string): void {
  try {
    writeAll(Deno.stderr, text);
  } catch {
    // Nowhere to report it; the exit code still tells.
  }
}

function terminalColumns(): number {
  try {
    // A pseudo-terminal nobody sized reports 0 columns.
    return Deno.consoleSize().columns || 80;
  } catch {
    return 80;
  }
}

/**
 * Runs the CLI with `args` (without the program name) and resolves to the exit code. It writes
 * to standard output and standard error and listens for SIGINT/SIGTERM while a transfer runs.
 *
 * @example
 * ```ts ignore
 * import { main } from "./cli.ts";
 * Deno.exit(await main(["pull", "127.0.0.1:5000/models/llm:v1", "weights.bin"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  if (args[0] === "copy") return await copyCommand(args.slice(1), commandIo());
  let command: CliCommand;
  try {
    command = parseCommandLine(args);
    if (command.kind === "pull") await checkDestination(command);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    stderr(`${PROGRAM}: ${err.message}\n\n${usageText(err.command)}\n`);
    return EXIT_CODES.usage;
  }
  switch (command.kind) {
    case "help":
      stdout(`${usageText(command.command)}\n`);
      return EXIT_CODES.success;
    case "version":
      stdout(`${PROGRAM} ${denoJson.version}\n`);
      return EXIT_CODES.success;
    default:
      return await transfer(command);
  }
}

/** The process's standard streams, for a command. */
function commandIo(): CommandIo {
  return {
    stdout,
    stderr,
    progress: progressWrite,
    columns: terminalColumns,
    isTerminal: Deno.stderr.isTerminal(),
  };
}

/** A destination that is a directory is a usage error (spec: Library API rule 4). */
async function checkDestination(command: PullCommand): Promise<void> {
  let isDirectory = false;
  try {
    isDirectory = (await Deno.stat(command.destination)).isDirectory;
  } catch {
    // Absent (the normal case) or not inspectable: the library reports what matters.
  }
  if (isDirectory) throw new UsageError("<dest> is a directory; name a file to write", "pull");
}

async function transfer(command: PushCommand | PullCommand): Promise<number> {
  const label = `${PROGRAM} ${command.kind}`;
  const fail = (err: unknown, explanation: string, code: number): number => {
    // The safe reason codes (errno, TLS kind, permission) of the chain, after the message.
    const codes = causeCodes(err);
    const cause = codes.length > 0 ? `${label}: cause: ${codes.join(", ")}\n` : "";
    stderr(
      `${label}: ${errorLine(err)}${localPath(err, command)}\n${cause}${label}: ${explanation}\n`,
    );
    return code;
  };

  // Inputs that are not part of the transfer: failures here have no sentinel.
  let caCerts: string[] | undefined;
  let credential: { username: string; password: string } | undefined;
  try {
    if (command.caFile !== undefined) caCerts = [await readCaFile(command.caFile)];
    if (command.username !== undefined) {
      credential = {
        username: command.username,
        password: await readPasswordFromStdin(Deno.stdin.readable),
      };
    }
  } catch (err) {
    return fail(err, "no sentinel matched (exit 1)", EXIT_CODES.failure);
  }

  const renderer = createProgressRenderer(
    command.progress,
    { write: progressWrite, columns: terminalColumns },
    Deno.stderr.isTerminal(),
  );
  const onProgress = renderer
    ? (snapshot: ProgressSnapshot) => renderer.update(snapshot)
    : undefined;
  const controller = new AbortController();
  using deadline = command.timeoutMs > 0 ? startDeadline(command.timeoutMs) : undefined;
  const timeout = deadline?.signal;
  const signal = timeout ? AbortSignal.any([controller.signal, timeout]) : controller.signal;
  const trap = trapStopSignals(controller, progressWrite);
  try {
    // Closed when the command ends, so no pooled connection outlives it.
    using client = new PartedClient({
      plainHttp: command.plainHttp,
      ...(caCerts ? { caCerts } : {}),
      ...(command.debug ? { onExchange: (r) => progressWrite(`${debugLine(r)}\n`) } : {}),
      ...(credential ? { credential } : {}),
      ...(command.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: command.stallTimeoutMs }),
      ...(command.limitRate === undefined
        ? {}
        : { rateLimit: { bytesPerSecond: command.limitRate } }),
    });
    const workers = command.workers === undefined ? {} : { workers: command.workers };
    if (command.kind === "push") {
      const descriptor = await client.push(command.reference, fromFile(command.file), {
        ...workers,
        ...(command.partSize === undefined ? {} : { partSize: command.partSize }),
        onProgress,
        signal,
      });
      renderer?.finish(EXIT_CODES.success);
      stdout(command.json ? `${JSON.stringify(descriptor)}\n` : `${descriptor.digest}\n`);
    } else {
      await client.pull(command.reference, toFile(command.destination), {
        ...workers,
        onProgress,
        signal,
      });
      renderer?.finish(EXIT_CODES.success);
    }
    return EXIT_CODES.success;
  } catch (err) {
    const outcome = exitOutcome(err, {
      signal: trap.delivered,
      timeout: timeout?.aborted && trap.delivered === undefined ? command.timeoutText : undefined,
    });
    renderer?.finish(outcome.code);
    return fail(err, outcome.explanation, outcome.code);
  } finally {
    trap.dispose();
  }
}

/** The path the user gave, when `err` is about that local file (the library's message is not). */
function localPath(err: unknown, command: PushCommand | PullCommand): string {
  if (findError(err, LocalFileError) === undefined) return "";
  return ` (${command.kind === "push" ? command.file : command.destination})`;
}

async function readCaFile(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    const kind = err instanceof Error ? err.name : "error";
    throw new Error(`--ca-file: cannot read the file (${kind})`, { cause: err });
  }
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (err) {
    // A bug or a broken stdout/stderr: still one line and a defined exit code.
    progressWrite(`${PROGRAM}: internal error: ${errorLine(err)}\n`);
    code = EXIT_CODES.failure;
  }
  Deno.exit(code);
}
