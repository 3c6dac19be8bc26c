/**
 * What every command that talks to a registry shares: reading its inputs (CA file, password,
 * docker configuration), the client options, the time limit and stop signals, and the report
 * of a failure on standard error with its exit code.
 *
 * @module
 */
import { dockerConfigCredentials, InputFileError, readInputFile } from "../../auth/mod.ts";
import { causeChain, findError, LocalFileError } from "../../errors/mod.ts";
import {
  errnoCode,
  errnoMeaning,
  type MirrorTable,
  PartedClient,
  type PartedClientOptions,
  terminalText,
} from "../../parted/mod.ts";
import type { TransferProgress } from "../progress/transfer_progress.ts";
import { causeCodes } from "../../transport/mod.ts";
import type { ReadFlags, RegistryFlags, TransferFlags } from "../arguments/args.ts";
import { commandMirrors } from "./mirrors.ts";
import { shellsOf } from "../words/shell_word.ts";
import { startDeadline } from "./deadline.ts";
import { debugLine } from "./debug_log.ts";
import {
  errorLine,
  exitOutcome,
  type FailureContext,
  matchedSentinel,
} from "../words/exit_code.ts";
import { failureJsonLine, namedError } from "../words/failure_json.ts";
import type { TypedInput } from "../words/failure_subject.ts";
import { failureWords } from "../words/failure_words.ts";
import { manifestMissing, repositoryKnown } from "./repository_probe.ts";
import { noticeWrite, stderr } from "./io.ts";
import { readPasswordFromStdin } from "./read_password.ts";
import { findTrust, type FoundTrust, trustLines, typedRegistries } from "./registry_trust.ts";
import { trapStopSignals } from "./signals.ts";

/** One run of a registry command: what its failure report needs to know. */
export interface RegistryJob {
  /** `ocipart <command>`, the prefix of every line written. */
  readonly label: string;
  /**
   * The command's registry flags (with a transfer's, its bandwidth cap), and what else the user
   * typed (references, paths) that a failure report names: commands pass their command object.
   */
  readonly flags: (RegistryFlags | TransferFlags) & TypedInput;
  /** The local path the user gave, named when a local-file error fails the command. */
  readonly localPath?: string;
  /** A command that reads `reference` may read it through mirrors (`--mirror`, the config). */
  readonly reads?: { readonly flags: ReadFlags; readonly reference: string };
  /** Told the exit code of a failure before it is reported (e.g. to end a progress bar). */
  readonly onFailure?: (code: number) => void;
  /**
   * After a stop signal, what was kept and how to go on (a transfer's progress knows it); the
   * report says it in place of the library's line when the failure is only the stop.
   */
  readonly stoppedLine?: () => string;
  /** The file a pull writes, once known (inside a directory, the artifact's): a report names it. */
  readonly pulledFile?: () => string | undefined;
  /** The command creates the `--registry-config` file (login), so it may be missing. */
  readonly createsConfig?: boolean;
  /** A credential the command already has (typed at login's prompt), in place of stdin's. */
  readonly credential?: { readonly username: string; readonly password: string };
}

/**
 * A command's run under the time limit and the stop-signal trap: its `signal` aborts on SIGINT,
 * SIGTERM or an expired `--timeout` (whatever the command started, requests and helper programs,
 * must end with it), and {@linkcode StopScope.failed} reports a failure by the exit-code
 * contract. Given the command's client, a missing manifest makes it ask the registry once whether the
 * repository exists (`src/cli/session/repository_probe.ts`), to say which of the two is missing.
 *
 * @example
 * ```ts ignore
 * import { StopScope } from "./session.ts";
 * using scope = new StopScope({ label: "ocipart logout" }, command);
 * try { await work(scope.signal); return 0; } catch (err) { return await scope.failed(err); }
 * ```
 */
export class StopScope implements Disposable {
  /** Aborted by SIGINT, SIGTERM or an expired `--timeout`. */
  readonly signal: AbortSignal;
  readonly #job: Pick<
    RegistryJob,
    "label" | "localPath" | "onFailure" | "stoppedLine" | "pulledFile"
  >;
  readonly #limits: Pick<RegistryFlags, "timeoutMs" | "timeoutText"> & TypedInput;
  #probeClient: (() => PartedClient) | undefined;
  readonly #controller = new AbortController();
  readonly #deadline: ReturnType<typeof startDeadline> | undefined;
  readonly #trap: ReturnType<typeof trapStopSignals>;

  /** Arms the time limit of `limits` and the stop-signal trap. */
  constructor(
    job: Pick<RegistryJob, "label" | "localPath" | "onFailure" | "stoppedLine" | "pulledFile">,
    limits: Pick<RegistryFlags, "timeoutMs" | "timeoutText"> & TypedInput,
  ) {
    this.#job = job;
    this.#limits = limits;
    this.#deadline = limits.timeoutMs > 0 ? startDeadline(limits.timeoutMs) : undefined;
    const timeout = this.#deadline?.signal;
    this.signal = timeout
      ? AbortSignal.any([this.#controller.signal, timeout])
      : this.#controller.signal;
    this.#trap = trapStopSignals(this.#controller, noticeWrite);
  }

  /** The command's client, which a missing manifest's probe asks, once the inputs are read. */
  probeWith(client: () => PartedClient): void {
    this.#probeClient = client;
  }

  /** Reports `err` on standard error by the exit-code contract; resolves to the exit code. */
  async failed(err: unknown): Promise<number> {
    const delivered = this.#trap.delivered;
    const timeout = this.#deadline?.signal;
    const context: FailureContext = {
      signal: delivered,
      timeout: timeout?.aborted && delivered === undefined ? this.#limits.timeoutText : undefined,
      stopReason: delivered === undefined ? undefined : this.#controller.signal.reason,
    };
    const outcome = exitOutcome(err, context);
    this.#job.onFailure?.(outcome.code);
    // A missing manifest: ask whether the repository exists, to say which of the two is missing.
    const probe = this.#probeClient;
    const missing = this.signal.aborted || probe === undefined
      ? undefined
      : manifestMissing(err, this.#limits.reference ?? this.#limits.source);
    const known = missing && probe && await repositoryKnown(missing, probe(), this.signal);
    return reportFailure(this.#job, err, outcome.explanation, outcome.code, context, known);
  }

  /** Disarms the time limit and the trap. */
  [Symbol.dispose](): void {
    this.#trap.dispose();
    this.#deadline?.[Symbol.dispose]();
  }
}

/** A registry command under way: its inputs read, its client options, its stop scope. */
export interface Session extends Disposable {
  /** The options of the command's `PartedClient`. */
  readonly clientOptions: PartedClientOptions;
  /** The command's client on those options, made on first use and closed with the session. */
  readonly client: PartedClient;
  /** Aborted by SIGINT, SIGTERM or an expired `--timeout`. */
  readonly signal: AbortSignal;
  /** The credential of `--username`/`--password-stdin`, if given. */
  readonly credential: { username: string; password: string } | undefined;
  /** Reports `err`; resolves to the exit code. */
  failed(err: unknown): Promise<number>;
}

/**
 * Starts `job`: reads its inputs, builds the client options and arms its stop scope (with a
 * transfer's `progress`, which then ends with a failure, says what a stop kept and watches the
 * signal). Resolves to the session the command runs in, or to an exit code when an input could
 * not be read (that failure already reported on standard error).
 *
 * @example
 * ```ts ignore
 * import { openSession } from "./session.ts";
 * const session = await openSession({ label: "ocipart inspect", flags });
 * if (typeof session === "number") return session;
 * using _ = session;
 * ```
 */
export async function openSession(
  job: RegistryJob,
  progress?: TransferProgress,
): Promise<Session | number> {
  if (progress !== undefined) {
    // The job stays the prototype: its getters (a path known only later) stay live.
    const own = { onFailure: progress.finish, stoppedLine: progress.stoppedLine };
    job = Object.assign(Object.create(job), own, { pulledFile: progress.pulledFile });
  }
  const { flags } = job;
  // Armed first: `--timeout` and a stop signal also end the reading of the inputs.
  const scope = new StopScope(job, flags);
  let inputs: Inputs;
  try {
    inputs = await readInputs(flags, job, scope.signal);
  } catch (err) {
    const code = await scope.failed(err);
    scope[Symbol.dispose]();
    return code;
  }
  if (flags.insecure) {
    noticeWrite(`${job.label}: warning: --insecure: the registry's certificate is not verified\n`);
  }
  if (flags.debug) { for (const line of trustLines(inputs.trust)) noticeWrite(`${line}\n`); }
  const clientOptions = clientOptionsOf(flags, inputs, job.label);
  // Closed when the command ends, so no pooled connection outlives it.
  let client: PartedClient | undefined;
  scope.probeWith(() => client ??= new PartedClient(clientOptions));
  progress?.watch(scope.signal);
  return {
    clientOptions,
    get client() {
      return client ??= new PartedClient(clientOptions);
    },
    signal: scope.signal,
    credential: inputs.credential,
    failed: (err) => scope.failed(err),
    [Symbol.dispose]: () => {
      client?.close();
      scope[Symbol.dispose]();
    },
  };
}

/** What a command stopped by a signal says when it has no transfer to account for. */
const STOPPED = "stopped before it finished; run the same command again";

/**
 * Writes a failure on standard error and returns `code`. In order: one sentence in plain words
 * naming what the user typed (the reference, the registry's host and port, the file) and, for
 * the common cases, a `hint:` line, and when the hint says to run a command, that command on an
 * indented line of its own, ready to paste (`src/cli/words/failure_words.ts`); then, as the exit-code
 * contract says, the library's error on one line (with the local path when the error is about
 * it), the safe cause codes when there are any, and the explanation of the exit code. After a
 * stop signal, the error line says what was kept and how to go on (`job.stoppedLine`), and the
 * library's own line follows only when the failure was more than the CLI's abort (whose reason
 * the signal line already names). `repositoryKnown` is what a probe after a missing manifest
 * learnt (`src/cli/session/repository_probe.ts`). With `--json`, the same report is one JSON object on
 * one line instead (`src/cli/words/failure_json.ts`): what a script reads.
 *
 * @example
 * ```ts ignore
 * import { reportFailure } from "./session.ts";
 * return reportFailure(job, err, "matched DigestMismatchError (exit 5)", 5);
 * ```
 */
export function reportFailure(
  job:
    & Pick<RegistryJob, "label" | "localPath" | "stoppedLine" | "pulledFile">
    & { readonly flags?: TypedInput & { readonly json?: boolean } },
  err: unknown,
  explanation: string,
  code: number,
  context: FailureContext = {},
  repositoryKnown?: boolean,
): number {
  const subject = {
    command: job.label.replace(/^\S+\s+/, ""),
    input: job.flags ?? {},
    repositoryKnown,
    pulledFile: job.pulledFile?.(),
  };
  const words = failureWords(err, subject, context);
  const lines: string[] = [];
  if (words !== undefined) lines.push(words.sentence);
  const shells = words?.command === undefined ? undefined : shellsOf(words.command);
  const run = words?.command === undefined
    ? ""
    : shells === undefined
    ? ". Run:"
    : `. Run (${shells}):`;
  if (words?.hint !== undefined) lines.push(`hint: ${words.hint}${run}`);
  if (context.signal !== undefined) lines.push(job.stoppedLine?.() ?? STOPPED);
  const codes = causeCodes(err);
  let detail: string | null = null;
  if (!onlyTheStop(err, context)) {
    const path = job.localPath !== undefined && findError(err, LocalFileError) !== undefined
      ? ` (${terminalText(job.localPath)})`
      : "";
    detail = `${errorLine(err)}${path}`;
    lines.push(detail);
    // The safe reason codes (errno, TLS kind, permission) of the chain, after the message.
    if (codes.length > 0) lines.push(`cause: ${codes.join(", ")}`);
  }
  lines.push(explanation);
  if (job.flags?.json === true) {
    const stopped = context.signal !== undefined || context.timeout !== undefined;
    stderr(failureJsonLine({
      exitCode: code,
      ...(stopped ? { code: null, class: null } : namedError(err, matchedSentinel(err))),
      message: lines[0],
      detail,
      hint: words?.hint ?? null,
      run: words?.command ?? null,
      causes: codes,
      signal: context.signal ?? null,
    }));
    return code;
  }
  const prefix = `${job.label}: `;
  const text = lines.map((line) => `${prefix}${line}\n`);
  // Indented, without the prefix: the whole line can be copied and pasted as it is.
  if (words?.command !== undefined) {
    text.splice(words.hint === undefined ? 1 : 2, 0, `  ${words.command}\n`);
  }
  stderr(text.join(""));
  return code;
}

/** The failure is the CLI's own abort after a signal, which the signal line names. */
function onlyTheStop(err: unknown, context: FailureContext): boolean {
  if (context.signal === undefined || context.stopReason === undefined) return false;
  return [...causeChain(err)].includes(context.stopReason);
}

/** The inputs read before any request. */
interface Inputs {
  caCerts: string[] | undefined;
  credential: { username: string; password: string } | undefined;
  mirrors: MirrorTable | undefined;
  trust: FoundTrust;
}

async function readInputs(
  flags: RegistryFlags & TypedInput,
  { createsConfig, reads, credential: typed }: Pick<
    RegistryJob,
    "createsConfig" | "reads" | "credential"
  >,
  signal: AbortSignal,
): Promise<Inputs> {
  if (flags.registryConfig !== undefined) {
    await requireRegistryConfig(flags.registryConfig, createsConfig === true);
  }
  if (flags.tempDir !== undefined) await requireDirectory(flags.tempDir, "--temp-dir", false);
  if (flags.cacheDir !== undefined) await requireDirectory(flags.cacheDir, "--cache-dir", true);
  const caCerts = flags.caFile === undefined
    ? undefined
    : [await readCaFile(flags.caFile, "--ca-file", signal)];
  const trust = await findTrust(
    typedRegistries([flags.reference, flags.source, flags.target, flags.registry]),
  );
  const mirrors = reads === undefined
    ? undefined
    : await commandMirrors(reads.flags, reads.reference, signal);
  const credential = typed ?? (flags.username === undefined ? undefined : {
    username: flags.username,
    password: await readPasswordFromStdin(Deno.stdin.readable, signal),
  });
  return { caCerts, credential, mirrors, trust };
}

function clientOptionsOf(
  flags: RegistryFlags | TransferFlags,
  inputs: Inputs,
  label: string,
): PartedClientOptions {
  const limitRate = "limitRate" in flags ? flags.limitRate : undefined;
  const hashThreads = "hashThreads" in flags ? flags.hashThreads : undefined;
  // --ca-file, SSL_CERT_FILE and DENO_CERT for every registry; certs.d's for its registry.
  const shared = [...(inputs.caCerts ?? []), ...inputs.trust.shared.map((file) => file.pem)];
  const registries = Object.fromEntries(
    [...inputs.trust.registries].map(([host, files]) => [
      host,
      { caCerts: [...shared, ...files.map((file) => file.pem)] },
    ]),
  );
  const useRegistries = !flags.plainHttp && !flags.insecure && inputs.trust.registries.size > 0;
  return {
    plainHttp: flags.plainHttp,
    ...(flags.insecure ? { insecureTls: true } : {}),
    ...(shared.length > 0 ? { caCerts: shared } : {}),
    ...(useRegistries ? { registries } : {}),
    ...(flags.debug ? { onExchange: (r) => noticeWrite(`${debugLine(r)}\n`) } : {}),
    ...(inputs.credential
      ? { credential: inputs.credential }
      : flags.registryConfig !== undefined
      ? { credentials: dockerConfigCredentials({ configPath: flags.registryConfig }) }
      : {}),
    ...(flags.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: flags.stallTimeoutMs }),
    ...(hashThreads === undefined ? {} : { hashThreads }),
    ...(limitRate === undefined ? {} : { rateLimit: { bytesPerSecond: limitRate } }),
    ...(inputs.mirrors === undefined
      ? {}
      : { mirrors: inputs.mirrors, onMirrorTag: mirrorTagNotice(label) }),
  };
}

/** The line that says a mirror, not the registry, decided what a tag names. */
function mirrorTagNotice(label: string): (mirror: string, tag: string) => void {
  return (mirror, tag) =>
    noticeWrite(
      `${label}: warning: the registry cannot be reached; mirror ${terminalText(mirror)} ` +
        `chose what the tag ${terminalText(tag)} names\n`,
    );
}

/**
 * Refuses a `--registry-config` path that does not exist (unless the command creates it): the
 * user named a file, and reading nothing there as "no credentials" would hide the typo. Refuses
 * a path that is not a regular file (a named pipe, a device), which would block or never end.
 * Other failures (a permission) are left to the reader, which names them.
 *
 * @example
 * ```ts ignore
 * import { requireRegistryConfig } from "./session.ts";
 * await requireRegistryConfig("ci/config.json"); // throws when there is no such file
 * ```
 */
export async function requireRegistryConfig(path: string, mayCreate = false): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound) || mayCreate) return;
    throw new Error(`--registry-config: ${path} does not exist (only login creates it)`, {
      cause: err,
    });
  }
  if (!info.isFile && !info.isDirectory) {
    throw new Error(`--registry-config: ${path} is ${notRegular(info)}`);
  }
}

/**
 * Reads the PEM file given with `flag` (`--ca-file`, or one side's of `copy`): a regular file of
 * at most 4 MiB, stopped by `signal`; a failure names the flag and the kind of error.
 *
 * @example
 * ```ts ignore
 * import { readCaFile } from "./session.ts";
 * const pem = await readCaFile("corp-ca.pem", "--dest-ca-file");
 * ```
 */
export async function readCaFile(
  path: string,
  flag = "--ca-file",
  signal?: AbortSignal,
): Promise<string> {
  try {
    return await readInputFile(path, { signal });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (err instanceof InputFileError) throw new Error(`${flag}: ${path} is ${err.message}`);
    const code = errnoCode(err);
    const meaning = code === undefined ? undefined : errnoMeaning(code);
    const why = code === undefined
      ? ""
      : meaning === undefined
      ? ` (${code})`
      : `: ${meaning} (${code})`;
    throw new Error(`${flag}: cannot read ${path}${why}`, { cause: err });
  }
}

/**
 * Checks that `flag` (`--temp-dir`, `--cache-dir`) names a directory before the transfer
 * starts (one that `mayCreate` need not exist yet): parts go there only when they do not fit
 * in memory or once fetched, which may be minutes in, or never for a small artifact, so a typo
 * would otherwise surface late or not at all. Other failures (a permission) are left to the
 * transfer, which names them.
 */
async function requireDirectory(path: string, flag: string, mayCreate: boolean): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound) || mayCreate) return;
    throw new Error(`${flag}: ${path} does not exist`, { cause: err });
  }
  if (!info.isDirectory) throw new Error(`${flag}: ${path} is not a directory`);
}

/** What a path that is not a regular file is, for a sentence naming its flag. */
function notRegular(info: Deno.FileInfo): string {
  if (info.isFifo) return "not a regular file but a named pipe (FIFO)";
  if (info.isCharDevice || info.isBlockDevice) return "not a regular file but a device";
  return "not a regular file";
}
