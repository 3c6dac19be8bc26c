/**
 * Parses the command line of the reference CLI into a command to run.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseLimit } from "./duration.ts";
import { parseSize } from "./size.ts";
import { parseRate } from "./rate.ts";
import { type CommandName, UsageError } from "./usage_error.ts";

/** How transfer progress is shown on standard error. */
export type ProgressMode = "auto" | "bar" | "plain" | "json" | "none";

const PROGRESS_MODES: readonly ProgressMode[] = ["auto", "bar", "plain", "json", "none"];

/** The flags shared by `push` and `pull`. */
export interface TransferFlags {
  /** Concurrent part transfers, or undefined for the library's default. */
  workers: number | undefined;
  /** Overall time limit in milliseconds; 0 means none. */
  timeoutMs: number;
  /** The `--timeout` value as typed (trimmed), for messages; "0" when none was given. */
  timeoutText: string;
  /** Milliseconds an exchange may move no bytes; 0 disables; undefined for the default. */
  stallTimeoutMs: number | undefined;
  /** Talk HTTP instead of HTTPS to the registry. */
  plainHttp: boolean;
  /** Path of a PEM file with extra CA certificates. */
  caFile: string | undefined;
  /** User name of an explicit credential whose password arrives on standard input. */
  username: string | undefined;
  /** How progress is shown. */
  progress: ProgressMode;
  /** Print one line per HTTP exchange on standard error. */
  debug: boolean;
  /** One bandwidth cap over the whole transfer, bytes per second; undefined for none. */
  limitRate: number | undefined;
}

/** A parsed `push` command line. */
export interface PushCommand extends TransferFlags {
  /** Discriminant. */
  kind: "push";
  /** The reference to push to, as typed. */
  reference: string;
  /** The file to push. */
  file: string;
  /** Part size in bytes, or undefined for the library's default. */
  partSize: number | undefined;
  /** Print the descriptor as JSON instead of the digest. */
  json: boolean;
}

/** A parsed `pull` command line. */
export interface PullCommand extends TransferFlags {
  /** Discriminant. */
  kind: "pull";
  /** The reference to pull, as typed. */
  reference: string;
  /** The destination file. */
  destination: string;
}

/** A request for help (`-h`, `--help`, `help [command]`) or for the version. */
export type InfoCommand =
  | { kind: "help"; command: CommandName | undefined }
  | { kind: "version" };

/** Everything the command line can ask for. */
export type CliCommand = PushCommand | PullCommand | InfoCommand;

const COMMON_OPTIONS = {
  workers: { type: "string" },
  timeout: { type: "string" },
  "stall-timeout": { type: "string" },
  "plain-http": { type: "boolean" },
  "ca-file": { type: "string" },
  username: { type: "string" },
  "password-stdin": { type: "boolean" },
  progress: { type: "string" },
  debug: { type: "boolean" },
  "limit-rate": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const PUSH_OPTIONS = {
  ...COMMON_OPTIONS,
  "part-size": { type: "string" },
  json: { type: "boolean" },
} as const;

/**
 * Parses `args` (without the program name). The first argument selects the command: `push`,
 * `pull`, `help [command]`, or the global flags `-h`/`--help` and `--version`. Every flag value is
 * checked here, so a command that parses only fails for reasons outside the command line.
 *
 * @throws {UsageError} For an unknown command or flag, a missing or unparseable value, a
 * negative duration or one past 8760h, a non-positive worker count or part size, `--username` without
 * `--password-stdin` (or the reverse), or a wrong operand count.
 *
 * @example
 * ```ts
 * import { parseCommandLine } from "./args.ts";
 * const command = parseCommandLine(["pull", "--workers", "4", "127.0.0.1:5000/a/b:v1", "out.bin"]);
 * if (command.kind === "pull") console.log(command.workers, command.destination); // 4 "out.bin"
 * ```
 */
export function parseCommandLine(args: readonly string[]): CliCommand {
  const [first, ...rest] = args;
  if (first === undefined) throw new UsageError("missing command");
  if (first === "-h" || first === "--help") return { kind: "help", command: undefined };
  if (first === "--version") return { kind: "version" };
  if (first === "help") {
    if (rest.length === 0) return { kind: "help", command: undefined };
    if (rest.length === 1 && (rest[0] === "push" || rest[0] === "pull")) {
      return { kind: "help", command: rest[0] };
    }
    throw new UsageError("help takes at most one command: push or pull");
  }
  if (first !== "push" && first !== "pull") {
    throw new UsageError(
      first.startsWith("-") ? `unknown global flag ${first}` : `unknown command "${first}"`,
    );
  }
  return parseTransfer(first, rest);
}

function parseTransfer(command: CommandName, args: string[]): CliCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: command === "push" ? PUSH_OPTIONS : COMMON_OPTIONS,
      strict: true,
      allowPositionals: true,
    });
  } catch (err) {
    // node:util appends multi-line hints; the first sentence names the flag and the problem.
    const text = err instanceof Error ? err.message.split("\n")[0].split(". ")[0] : String(err);
    throw new UsageError(text.replace(/\.$/, ""), command);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) return { kind: "help", command };

  const operandName = command === "push" ? "<file>" : "<dest>";
  if (parsed.positionals.length !== 2) {
    throw new UsageError(
      `expected 2 operands, <ref> and ${operandName}; got ${parsed.positionals.length}`,
      command,
    );
  }
  const [reference, path] = parsed.positionals;
  if (reference === "") throw new UsageError("<ref> must not be empty", command);
  if (path === "") throw new UsageError(`${operandName} must not be empty`, command);

  const flag = <T>(name: string, parse: (text: string) => T): T | undefined => {
    const value = values[name];
    if (typeof value !== "string") return undefined;
    try {
      return parse(value);
    } catch (err) {
      throw new UsageError(`--${name}: ${err instanceof Error ? err.message : err}`, command);
    }
  };

  const username = values.username as string | undefined;
  const passwordStdin = values["password-stdin"] === true;
  if (username !== undefined && !passwordStdin) {
    throw new UsageError("--username needs --password-stdin (passwords are never flags)", command);
  }
  if (passwordStdin && username === undefined) {
    throw new UsageError("--password-stdin needs --username", command);
  }
  if (username === "") throw new UsageError("--username: must not be empty", command);

  const caFile = values["ca-file"] as string | undefined;
  if (caFile === "") throw new UsageError("--ca-file: must not be empty", command);

  const common: TransferFlags = {
    workers: flag("workers", parseWorkers),
    timeoutMs: flag("timeout", parseLimit) ?? 0,
    timeoutText: typeof values.timeout === "string" ? values.timeout.trim() : "0",
    stallTimeoutMs: flag("stall-timeout", parseLimit),
    plainHttp: values["plain-http"] === true,
    caFile,
    username,
    progress: flag("progress", parseProgressMode) ?? "auto",
    debug: values.debug === true,
    limitRate: flag("limit-rate", parseRate),
  };
  if (command === "push") {
    return {
      kind: "push",
      ...common,
      reference,
      file: path,
      partSize: flag("part-size", parseSize),
      json: values.json === true,
    };
  }
  return { kind: "pull", ...common, reference, destination: path };
}

/**
 * Parses a `--workers` value: a positive integer.
 *
 * @example
 * ```ts
 * import { parseWorkers } from "./args.ts";
 * console.log(parseWorkers("4")); // 4
 * ```
 */
export function parseWorkers(text: string): number {
  if (!/^\d+$/.test(text.trim())) throw new RangeError("must be a positive integer");
  const workers = Number(text.trim());
  if (!Number.isSafeInteger(workers) || workers < 1) {
    throw new RangeError("must be a positive integer");
  }
  return workers;
}

/**
 * Parses a `--progress` value.
 *
 * @example
 * ```ts
 * import { parseProgressMode } from "./args.ts";
 * console.log(parseProgressMode("plain")); // "plain"
 * ```
 */
export function parseProgressMode(text: string): ProgressMode {
  const mode = PROGRESS_MODES.find((m) => m === text);
  if (mode === undefined) throw new RangeError(`must be one of ${PROGRESS_MODES.join(", ")}`);
  return mode;
}
