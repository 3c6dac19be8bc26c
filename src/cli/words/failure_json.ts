/**
 * A failure as one JSON object, for scripts that ran a command with `--json`: the last line of
 * standard error, in place of the lines written for a person.
 *
 * @module
 */
import { causeChain } from "../../errors/mod.ts";
import { jsonText } from "../../parted/mod.ts";

/** What a failed command tells a script. */
export interface FailureFields {
  /** The process exit code. */
  exitCode: number;
  /**
   * The stable code of the matched sentinel (`ERR_NOT_FOUND`), else of the outermost error that
   * has one (`ERR_PART_SIZE`, `ERR_USAGE`); null when none has, and after a stop signal.
   */
  code: string | null;
  /** The class of that error (`NotFoundError`, `PartSizeError`, `UsageError`), or null. */
  class: string | null;
  /** The report's first sentence, as a person reads it on standard error. */
  message: string;
  /**
   * The library's error line of the report (what failed, and the reason the error gives, such as
   * `--reuse: dl is not a regular file`), escaped as on standard error; null after a stop signal,
   * when the signal is the whole story.
   */
  detail: string | null;
  /** What to do about it, when the report has a hint. */
  hint: string | null;
  /** The command the hint says to run, ready to pass to a shell, when it names one. */
  run: string | null;
  /** The safe cause codes of the chain (`ECONNREFUSED`, `CERT_UNKNOWN_ISSUER`). */
  causes: string[];
  /** The stop signal that ended the command (`SIGINT`, `SIGTERM`), or null. */
  signal: string | null;
}

/**
 * The error that names a failure: the sentinel `matched` when one did, else the outermost error
 * of the chain with a string `code` (its `name`, which the library sets to its class).
 *
 * @example
 * ```ts
 * import { namedError } from "./failure_json.ts";
 * const err = new Error("pull", { cause: Object.assign(new RangeError("x"), { code: "ERR_X" }) });
 * console.log(namedError(err, undefined)); // { code: "ERR_X", class: "RangeError" }
 * ```
 */
export function namedError(
  err: unknown,
  matched: { error: Error; className: string } | undefined,
): Pick<FailureFields, "code" | "class"> {
  if (matched !== undefined) {
    const code = (matched.error as { code?: unknown }).code;
    return { code: typeof code === "string" ? code : null, class: matched.className };
  }
  const named = [...causeChain(err)].find((e): e is Error & { code: string } =>
    e instanceof Error && typeof (e as { code?: unknown }).code === "string"
  );
  if (named === undefined) return { code: null, class: null };
  return { code: named.code, class: named.name || named.constructor.name };
}

/**
 * The failure as one line of JSON (every unsafe character escaped), ending with a line break.
 *
 * @example
 * ```ts
 * import { failureJsonLine } from "./failure_json.ts";
 * const line = failureJsonLine({
 *   exitCode: 2, code: "ERR_USAGE", class: "UsageError", message: "unknown flag --x",
 *   detail: null, hint: null, run: null, causes: [], signal: null,
 * });
 * console.log(JSON.parse(line).exitCode); // 2
 * ```
 */
export function failureJsonLine(fields: FailureFields): string {
  return `${jsonText(fields)}\n`;
}

/**
 * Whether a command line asks for JSON (`--json`, `--format json`), read from the words as
 * typed: a usage error is reported before the command line is understood.
 *
 * @example
 * ```ts
 * import { asksForJson } from "./failure_json.ts";
 * console.log(asksForJson(["pull", "--format=json", "--bogus"])); // true
 * ```
 */
export function asksForJson(args: readonly string[]): boolean {
  for (const [i, arg] of args.entries()) {
    if (arg === "--") return false;
    if (arg === "--json" || arg === "--format=json") return true;
    if (arg === "--format" && args[i + 1] === "json") return true;
  }
  return false;
}

/**
 * A usage error as the JSON line of exit 2; the hint is where the command's usage is.
 *
 * @example
 * ```ts
 * import { usageFailureJson } from "./failure_json.ts";
 * const line = usageFailureJson(new Error("unknown flag --x"), "see: ocipart pull --help");
 * console.log(JSON.parse(line).code); // "ERR_USAGE"
 * ```
 */
export function usageFailureJson(err: Error, pointer: string): string {
  return failureJsonLine({
    exitCode: 2,
    code: "ERR_USAGE",
    class: "UsageError",
    message: err.message,
    detail: null,
    hint: pointer,
    run: null,
    causes: [],
    signal: null,
  });
}
