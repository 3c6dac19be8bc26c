/**
 * `ocipart copy <src-ref> <dst-ref>`: a parted artifact to another repository or registry,
 * without a local file. Prints the manifest digest (the source's), or with `--json` the
 * descriptor and how many parts were copied, mounted and already present.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { PartedClient, type ProgressSnapshot } from "../../parted/mod.ts";
import { causeCodes } from "../../transport/failure.ts";
import { startDeadline } from "../deadline.ts";
import { debugLine } from "../debug_log.ts";
import { parseLimit } from "../duration.ts";
import { errorLine, EXIT_CODES, exitOutcome } from "../exit_code.ts";
import { createProgressRenderer } from "../progress.ts";
import { parseProgressMode, parseWorkers, type ProgressMode } from "../args.ts";
import { trapStopSignals } from "../signals.ts";
import { parseRate } from "../rate.ts";

/** Where a command writes, and what it knows about the terminal. */
export interface CommandIo {
  /** Writes to standard output. */
  stdout(text: string): void;
  /** Writes to standard error. */
  stderr(text: string): void;
  /** Writes progress to standard error, never throwing. */
  progress(text: string): void;
  /** The terminal's width in columns. */
  columns(): number;
  /** Whether standard error is a terminal. */
  isTerminal: boolean;
}

/** A parsed `copy` command line. */
export interface CopyCommandLine {
  /** The artifact to copy, as typed. */
  source: string;
  /** Where the copy goes, as typed. */
  target: string;
  /** Concurrent part copies, or undefined for the library's default. */
  workers: number | undefined;
  /** Overall time limit in milliseconds; 0 means none. */
  timeoutMs: number;
  /** The `--timeout` value as typed, for messages. */
  timeoutText: string;
  /** Milliseconds an exchange may move no bytes; undefined for the default. */
  stallTimeoutMs: number | undefined;
  /** Talk HTTP instead of HTTPS to both registries. */
  plainHttp: boolean;
  /** Path of a PEM file with extra CA certificates. */
  caFile: string | undefined;
  /** How progress is shown. */
  progress: ProgressMode;
  /** One line per HTTP exchange on standard error. */
  debug: boolean;
  /** Print the result as JSON. */
  json: boolean;
  /** One bandwidth cap over the whole copy, bytes per second; undefined for none. */
  limitRate: number | undefined;
}

const PROGRAM = "ocipart";

/** The usage block of `copy`. */
export const COPY_USAGE = `Usage: ${PROGRAM} copy [flags] <src-ref> <dst-ref>

Copy the parted artifact <src-ref> to <dst-ref> (another repository, or another registry)
without a local file. On one registry every part is mounted (no bytes move); across registries
parts stream from one registry to the other, verified by digest, a few chunks in memory at a
time. Parts the target already has are skipped. The copy keeps the manifest digest, which is
the only line on standard output. Credentials of each registry come from the docker
configuration ($DOCKER_CONFIG/config.json, default ~/.docker/config.json).

Flags:
  --json                 print {"descriptor", "copied", "mounted", "skipped"} as JSON
  --workers N            concurrent part copies (default 8)
  --timeout DURATION     give up after DURATION, e.g. 90s, 10m, 1h30m; 0 = no limit (default)
  --stall-timeout DURATION
                         fail an attempt that moves no bytes for DURATION (it is retried)
  --plain-http           talk HTTP instead of HTTPS to both registries
  --ca-file PEM          trust the CA certificates in PEM in addition to the system roots
  --progress MODE        auto|bar|plain|json|none (default auto: bar when stderr is a terminal)
  --debug                one line per HTTP exchange on stderr (no URL, host or credential)
  --limit-rate RATE      cap the bandwidth of the whole copy (all workers, download and
                         upload together), e.g. 512KiB/s or 10MiB/s
  -h, --help             show this help

Exit codes:
  0 success            1 failure (no sentinel)  2 usage error          3 not found
  4 not a parted artifact                       5 digest mismatch      6 unauthorized
  7 part too large     130 interrupted (SIGINT) 143 terminated (SIGTERM)`;

const OPTIONS = {
  json: { type: "boolean" },
  workers: { type: "string" },
  timeout: { type: "string" },
  "stall-timeout": { type: "string" },
  "plain-http": { type: "boolean" },
  "ca-file": { type: "string" },
  progress: { type: "string" },
  debug: { type: "boolean" },
  "limit-rate": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Parses the arguments after `copy`: `"help"` for `-h`/`--help`, else the command line.
 *
 * @throws {RangeError} An unknown flag, an unparseable value, or not exactly two operands;
 * the message names the problem.
 *
 * @example
 * ```ts
 * import { parseCopyArgs } from "./copy.ts";
 * const line = parseCopyArgs(["--workers", "4", "a.example/x:v1", "b.example/y:v1"]);
 * if (line !== "help") console.log(line.workers, line.target); // 4 "b.example/y:v1"
 * ```
 */
export function parseCopyArgs(args: readonly string[]): CopyCommandLine | "help" {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    const text = err instanceof Error ? err.message.split("\n")[0].split(". ")[0] : String(err);
    throw new RangeError(text.replace(/\.$/, ""));
  }
  const values = parsed.values;
  if (values.help) return "help";
  if (parsed.positionals.length !== 2) {
    throw new RangeError(
      `expected 2 operands, <src-ref> and <dst-ref>; got ${parsed.positionals.length}`,
    );
  }
  const [source, target] = parsed.positionals;
  if (source === "" || target === "") throw new RangeError("a reference must not be empty");
  const flag = <T>(name: keyof typeof OPTIONS, parse: (text: string) => T): T | undefined => {
    const value = values[name];
    if (typeof value !== "string") return undefined;
    try {
      return parse(value);
    } catch (err) {
      throw new RangeError(`--${name}: ${err instanceof Error ? err.message : err}`);
    }
  };
  if (values["ca-file"] === "") throw new RangeError("--ca-file: must not be empty");
  return {
    source,
    target,
    workers: flag("workers", parseWorkers),
    timeoutMs: flag("timeout", parseLimit) ?? 0,
    timeoutText: typeof values.timeout === "string" ? values.timeout.trim() : "0",
    stallTimeoutMs: flag("stall-timeout", parseLimit),
    plainHttp: values["plain-http"] === true,
    caFile: values["ca-file"],
    progress: flag("progress", parseProgressMode) ?? "auto",
    debug: values.debug === true,
    json: values.json === true,
    limitRate: flag("limit-rate", parseRate),
  };
}

/**
 * Runs `ocipart copy` with the arguments after `copy`; resolves to the exit code.
 *
 * @example
 * ```ts ignore
 * import { copyCommand } from "./copy.ts";
 * const code = await copyCommand(["a.example/x:v1", "b.example/y:v1"], io);
 * ```
 */
export async function copyCommand(args: readonly string[], io: CommandIo): Promise<number> {
  let line: CopyCommandLine | "help";
  try {
    line = parseCopyArgs(args);
  } catch (err) {
    io.stderr(`${PROGRAM}: ${(err as Error).message}\n\n${COPY_USAGE}\n`);
    return EXIT_CODES.usage;
  }
  if (line === "help") {
    io.stdout(`${COPY_USAGE}\n`);
    return EXIT_CODES.success;
  }
  return await runCopyCommand(line, io);
}

async function runCopyCommand(line: CopyCommandLine, io: CommandIo): Promise<number> {
  const label = `${PROGRAM} copy`;
  const fail = (err: unknown, explanation: string, code: number): number => {
    const codes = causeCodes(err);
    const cause = codes.length > 0 ? `${label}: cause: ${codes.join(", ")}\n` : "";
    io.stderr(`${label}: ${errorLine(err)}\n${cause}${label}: ${explanation}\n`);
    return code;
  };
  let caCerts: string[] | undefined;
  try {
    if (line.caFile !== undefined) caCerts = [await readCaFile(line.caFile)];
  } catch (err) {
    return fail(err, "no sentinel matched (exit 1)", EXIT_CODES.failure);
  }
  const renderer = createProgressRenderer(
    line.progress,
    { write: io.progress, columns: io.columns },
    io.isTerminal,
  );
  const onProgress = renderer ? (s: ProgressSnapshot) => renderer.update(s) : undefined;
  const controller = new AbortController();
  using deadline = line.timeoutMs > 0 ? startDeadline(line.timeoutMs) : undefined;
  const timeout = deadline?.signal;
  const signal = timeout ? AbortSignal.any([controller.signal, timeout]) : controller.signal;
  const trap = trapStopSignals(controller, io.progress);
  try {
    using client = new PartedClient({
      plainHttp: line.plainHttp,
      ...(caCerts ? { caCerts } : {}),
      ...(line.debug ? { onExchange: (r) => io.progress(`${debugLine(r)}\n`) } : {}),
      ...(line.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: line.stallTimeoutMs }),
      ...(line.limitRate === undefined ? {} : { rateLimit: { bytesPerSecond: line.limitRate } }),
    });
    const result = await client.copy(line.source, line.target, {
      ...(line.workers === undefined ? {} : { workers: line.workers }),
      onProgress,
      signal,
    });
    renderer?.finish(EXIT_CODES.success);
    io.stdout(line.json ? `${JSON.stringify(result)}\n` : `${result.descriptor.digest}\n`);
    return EXIT_CODES.success;
  } catch (err) {
    const outcome = exitOutcome(err, {
      signal: trap.delivered,
      timeout: timeout?.aborted && trap.delivered === undefined ? line.timeoutText : undefined,
    });
    renderer?.finish(outcome.code);
    return fail(err, outcome.explanation, outcome.code);
  } finally {
    trap.dispose();
  }
}

async function readCaFile(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    const kind = err instanceof Error ? err.name : "error";
    throw new Error(`--ca-file: cannot read the file (${kind})`, { cause: err });
  }
}
