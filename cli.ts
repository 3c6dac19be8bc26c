/**
 * The reference command-line tool, `ocipart`: moves one file through an OCI registry as a
 * parted artifact (push, pull), describes and verifies artifacts (inspect, verify), and saves
 * credentials (login, logout), mapping the library's error contract to exit codes. This file
 * only parses and dispatches; each command lives in `src/cli/commands/`.
 *
 * ```sh
 * ocipart push [flags] <ref> <file>     # prints the manifest digest
 * ocipart pull [flags] <ref> <dest>     # prints nothing
 * ocipart inspect [flags] <ref>         # prints the artifact's parts
 * ocipart cat [--range S-E] <ref>       # the file or a byte range of it, verified per part
 * ocipart verify [flags] <ref> <file>   # exit 0 identical, 5 different
 * ocipart login --username U --password-stdin <registry>
 * ocipart logout <registry>
 * ocipart blob pull|push|exists|mount …   # single blobs
 * ```
 *
 * Exit codes: 0 success, 1 failure with no sentinel (including an expired `--timeout`), 2 usage
 * error, 3 not found, 4 not a parted artifact, 5 digest mismatch, 6 unauthorized, 7 part too
 * large, 130 SIGINT, 143 SIGTERM. A usage error prints its message (with a suggestion or a hint)
 * and a line pointing at `ocipart <command> --help`. On failure standard error starts with a
 * sentence naming what was typed (reference, registry, file) and, for the common cases, a
 * `hint:` line; then the library's error on one line (after a stop signal, what was kept and
 * how to resume), its safe cause codes, and a line naming the matched sentinel class and code,
 * stating that none matched, or naming the signal. With `--json`, a failure (a usage error too)
 * is one JSON object on the last line of standard error instead: `exitCode`, `code`, `class`,
 * `message`, `hint`, `run`, `causes`, `signal`. A closed
 * standard output or error (`ocipart inspect … | head -1`) ends nothing: what cannot be written
 * is dropped without a word and the exit code is the command's own.
 *
 * Permissions (the narrowest set that works; `deno task compile` bakes in the general form):
 * - `--allow-net`: the registry and its token endpoint (`--allow-net=<host>` when known).
 * - `--allow-read`: the source file, `--ca-file`, the `certs.d` CA files (`src/cli/session/registry_trust.ts`),
 *   and the docker configuration
 *   (`--registry-config`, `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`).
 * - `--allow-write`: the destination's directory, where `<dest>.parted-partial` is written and
 *   renamed onto `<dest>`; for `login`/`logout`, the docker configuration's directory.
 * - `--allow-sys=statfs`: to compare a pull's size with the destination's free space before
 *   sizing the partial file (without it that check is skipped).
 * - `--allow-env=HOME,DOCKER_CONFIG`: to find the docker configuration; without it the tool
 *   runs anonymously or with `--username`. Add `HTTP_PROXY,HTTPS_PROXY,NO_PROXY` (and their
 *   lowercase forms) to go through a forward proxy; unreadable, they count as unset.
 * - `--insecure` and `--ca-file` need nothing more.
 * - `--allow-run=docker-credential-<name>`: only when the docker configuration names a
 *   credential helper; helpers then also need the whole environment readable (`--allow-env`),
 *   because the helper process inherits it.
 *
 * @module
 */
import { VERSION } from "./mod.ts";
import { type CliCommand, parseCommandLine, type RunCommand } from "./src/cli/arguments/args.ts";
import { runCat } from "./src/cli/commands/cat.ts";
import { runBlobExists, runBlobMount, runBlobPull, runBlobPush } from "./src/cli/commands/blob.ts";
import { runCopy } from "./src/cli/commands/copy.ts";
import { runInspect } from "./src/cli/commands/inspect.ts";
import { runLogin, runLogout } from "./src/cli/commands/login.ts";
import { runPull } from "./src/cli/commands/pull.ts";
import { runPush } from "./src/cli/commands/push.ts";
import { runVerify } from "./src/cli/commands/verify.ts";
import { errorLine, EXIT_CODES } from "./src/cli/words/exit_code.ts";
import { asksForJson, usageFailureJson } from "./src/cli/words/failure_json.ts";
import { noticeWrite, stderr, stdout } from "./src/cli/session/io.ts";
import { usagePointer, usageText } from "./src/cli/arguments/usage.ts";
import { UsageError } from "./src/cli/arguments/usage_error.ts";
import { terminalText } from "./src/parted/mod.ts";

const PROGRAM = "ocipart";

type Handler<K extends RunCommand["kind"]> = (
  command: Extract<RunCommand, { kind: K }>,
) => Promise<number>;

/** Each command's implementation, by name: one entry per file in `src/cli/commands/`. */
const HANDLERS: { [K in RunCommand["kind"]]: Handler<K> } = {
  push: runPush,
  pull: runPull,
  copy: runCopy,
  inspect: runInspect,
  cat: runCat,
  verify: runVerify,
  login: runLogin,
  logout: runLogout,
  "blob-pull": runBlobPull,
  "blob-push": runBlobPush,
  "blob-exists": runBlobExists,
  "blob-mount": runBlobMount,
};

/**
 * Runs the CLI with `args` (without the program name) and resolves to the exit code. It writes
 * to standard output and standard error and listens for SIGINT/SIGTERM while a command runs.
 *
 * @example Running a command from a program
 * ```ts
 * import { main } from "@ocipart/ocipart/cli";
 * const code = await main(["--version"]); // writes "ocipart 0.1.0" on standard output
 * console.log(code); // 0
 * // Deno.exit(await main(["pull", "127.0.0.1:5000/models/llm:v1", "weights.bin"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  try {
    const command: CliCommand = parseCommandLine(args);
    switch (command.kind) {
      case "help":
        stdout(`${usageText(command.command)}\n`);
        return EXIT_CODES.success;
      case "version":
        stdout(`${PROGRAM} ${VERSION}\n`);
        return EXIT_CODES.success;
      default:
        return await (HANDLERS[command.kind] as Handler<typeof command.kind>)(command);
    }
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (asksForJson(args)) {
      stderr(usageFailureJson(err, usagePointer(err.command)));
      return EXIT_CODES.usage;
    }
    // The error and where the usage is, not the usage itself: the error stays on screen.
    // Usage errors repeat what was typed: escaped like registry text.
    const message = terminalText(err.message);
    stderr(`${PROGRAM}: ${message}\n${PROGRAM}: ${usagePointer(err.command)}\n`);
    return EXIT_CODES.usage;
  }
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (err) {
    // A bug or a broken stdout/stderr: still one line and a defined exit code.
    noticeWrite(`${PROGRAM}: internal error: ${errorLine(err)}\n`);
    code = EXIT_CODES.failure;
  }
  Deno.exit(code);
}
