/**
 * What every command that talks to a registry shares: reading its inputs (CA file, password,
 * docker configuration), the client options, the time limit and stop signals, and the report
 * of a failure on standard error with its exit code.
 *
 * @module
 */
import { dockerConfigCredentials } from "../auth/docker_config.ts";
import { LocalFileError } from "../errors/kinds.ts";
import { findError } from "../errors/find_error.ts";
import type { PartedClientOptions } from "../parted/client.ts";
import { causeCodes } from "../transport/failure.ts";
import type { RegistryFlags, TransferFlags } from "./args.ts";
import { startDeadline } from "./deadline.ts";
import { debugLine } from "./debug_log.ts";
import { errorLine, EXIT_CODES, exitOutcome } from "./exit_code.ts";
import { noticeWrite, stderr } from "./io.ts";
import { readPasswordFromStdin } from "./read_password.ts";
import { trapStopSignals } from "./signals.ts";

/** What a command body works with. */
export interface SessionContext {
  /** The options of the command's `PartedClient`. */
  readonly clientOptions: PartedClientOptions;
  /** Aborted by SIGINT, SIGTERM or an expired `--timeout`. */
  readonly signal: AbortSignal;
  /** The credential of `--username`/`--password-stdin`, if given. */
  readonly credential: { username: string; password: string } | undefined;
}

/** One run of a registry command. */
export interface RegistryJob {
  /** `ocipart <command>`, the prefix of every line written. */
  readonly label: string;
  /** The command's registry flags (with a transfer's, its bandwidth cap). */
  readonly flags: RegistryFlags | TransferFlags;
  /** The local path the user gave, named when a local-file error fails the command. */
  readonly localPath?: string;
  /** The command itself; resolves to the exit code. */
  readonly run: (context: SessionContext) => Promise<number>;
  /** Told the exit code of a failure before it is reported (e.g. to end a progress bar). */
  readonly onFailure?: (code: number) => void;
  /** Text written after the report of a failure, e.g. the command to run instead; "" for none. */
  readonly hint?: (err: unknown) => string;
}

/**
 * Runs `job`: reads its inputs, builds the client options, runs the body under the time limit
 * and the stop-signal trap, and maps a failure to the exit-code contract on standard error
 * (the library's error, the safe cause codes, the explanation line).
 *
 * @example
 * ```ts ignore
 * import { runRegistryCommand } from "./session.ts";
 * const code = await runRegistryCommand({ label: "ocipart inspect", flags, run: async () => 0 });
 * ```
 */
export async function runRegistryCommand(job: RegistryJob): Promise<number> {
  const { flags } = job;
  let inputs: Inputs;
  try {
    inputs = await readInputs(flags);
  } catch (err) {
    return reportFailure(job, err, "no sentinel matched (exit 1)", EXIT_CODES.failure);
  }
  if (flags.insecure) {
    noticeWrite(`${job.label}: warning: --insecure: the registry's certificate is not verified\n`);
  }
  const controller = new AbortController();
  using deadline = flags.timeoutMs > 0 ? startDeadline(flags.timeoutMs) : undefined;
  const timeout = deadline?.signal;
  const signal = timeout ? AbortSignal.any([controller.signal, timeout]) : controller.signal;
  const trap = trapStopSignals(controller, noticeWrite);
  try {
    return await job.run({
      clientOptions: clientOptions(flags, inputs),
      signal,
      credential: inputs.credential,
    });
  } catch (err) {
    const outcome = exitOutcome(err, {
      signal: trap.delivered,
      timeout: timeout?.aborted && trap.delivered === undefined ? flags.timeoutText : undefined,
    });
    job.onFailure?.(outcome.code);
    const code = reportFailure(job, err, outcome.explanation, outcome.code);
    if (trap.delivered === undefined && job.hint !== undefined) stderr(job.hint(err));
    return code;
  } finally {
    trap.dispose();
  }
}

/**
 * Writes a failure as the contract says: the library's error on one line (with the local path
 * when the error is about it), the safe cause codes when there are any, then the explanation.
 * Returns `code`.
 *
 * @example
 * ```ts ignore
 * import { reportFailure } from "./session.ts";
 * return reportFailure(job, err, "matched DigestMismatchError (exit 5)", 5);
 * ```
 */
export function reportFailure(
  job: Pick<RegistryJob, "label" | "localPath">,
  err: unknown,
  explanation: string,
  code: number,
): number {
  // The safe reason codes (errno, TLS kind, permission) of the chain, after the message.
  const codes = causeCodes(err);
  const cause = codes.length > 0 ? `${job.label}: cause: ${codes.join(", ")}\n` : "";
  const path = job.localPath !== undefined && findError(err, LocalFileError) !== undefined
    ? ` (${job.localPath})`
    : "";
  stderr(`${job.label}: ${errorLine(err)}${path}\n${cause}${job.label}: ${explanation}\n`);
  return code;
}

/** The inputs read before any request. */
interface Inputs {
  caCerts: string[] | undefined;
  credential: { username: string; password: string } | undefined;
}

async function readInputs(flags: RegistryFlags): Promise<Inputs> {
  const caCerts = flags.caFile === undefined ? undefined : [await readCaFile(flags.caFile)];
  const credential = flags.username === undefined ? undefined : {
    username: flags.username,
    password: await readPasswordFromStdin(Deno.stdin.readable),
  };
  return { caCerts, credential };
}

function clientOptions(flags: RegistryFlags | TransferFlags, inputs: Inputs): PartedClientOptions {
  const limitRate = "limitRate" in flags ? flags.limitRate : undefined;
  return {
    plainHttp: flags.plainHttp,
    ...(flags.insecure ? { insecureTls: true } : {}),
    ...(inputs.caCerts ? { caCerts: inputs.caCerts } : {}),
    ...(flags.debug ? { onExchange: (r) => noticeWrite(`${debugLine(r)}\n`) } : {}),
    ...(inputs.credential
      ? { credential: inputs.credential }
      : flags.registryConfig !== undefined
      ? { credentials: dockerConfigCredentials({ configPath: flags.registryConfig }) }
      : {}),
    ...(flags.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: flags.stallTimeoutMs }),
    ...(limitRate === undefined ? {} : { rateLimit: { bytesPerSecond: limitRate } }),
  };
}

async function readCaFile(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    const kind = err instanceof Error ? err.name : "error";
    throw new Error(`--ca-file: cannot read the file (${kind})`, { cause: err });
  }
}
