/**
 * What the CLI says about a flag or a command it does not know: a pointed hint for the flags that
 * oras, skopeo and curl users type first, the flag of another command, or the nearest known
 * flag or command.
 *
 * @module
 */
import { terminalText } from "../../parted/mod.ts";
import { didYouMean, nearest } from "./suggest.ts";
import type { CommandName } from "./usage_error.ts";

/** An unknown flag as typed: `-o`, `--tls-verify` (with `false` from `--tls-verify=false`). */
export interface TypedFlag {
  /** The flag as typed, without its inline value: `-k`, `--plain-htpp`. */
  readonly raw: string;
  /** The value given inline (`--tls-verify=false`), if any. */
  readonly value?: string | undefined;
}

const CREDENTIALS_OF_COPY = "each registry's credential comes from the docker configuration " +
  "(run `ocipart login <registry>` once for each)";

const SECRET = "a password never goes on the command line: give --username USER " +
  "--password-stdin and the password on standard input, or run `ocipart login` once";

const INSECURE = "use --insecure to skip certificate verification, or give --ca-file PEM to " +
  "trust the registry's CA instead";

const AUTHFILE = "use --registry-config FILE (a docker config.json)";

function output(command: CommandName): string {
  if (command === "pull") {
    return "the destination is the second operand, as in ocipart pull <ref> <dest>";
  }
  if (command === "push") return "the file is the second operand, as in ocipart push <ref> <file>";
  return `${command} writes its result on standard output; redirect it with > FILE`;
}

function tlsVerify(flag: TypedFlag): string {
  return flag.value === undefined || flag.value === "true"
    ? "certificates are verified by default; drop it"
    : INSECURE;
}

// Flags of other tools, by the spelling typed; each value explains what ocipart takes instead.
const FOREIGN: Readonly<Record<string, (flag: TypedFlag, command: CommandName) => string>> = {
  "-o": (_, command) => output(command),
  "--output": (_, command) => output(command),
  "-k": () => INSECURE,
  "--insecure-skip-tls-verify": () => INSECURE,
  "--tls-verify": tlsVerify,
  "--src-tls-verify": tlsVerify,
  "--dest-tls-verify": tlsVerify,
  "--cert-dir": () => "use --ca-file PEM, a file of CA certificates",
  "--authfile": () => AUTHFILE,
  "--src-authfile": () => AUTHFILE,
  "--dest-authfile": () => AUTHFILE,
  "-p": () => SECRET,
  "--password": () => SECRET,
  "--creds": () => SECRET,
  "--src-creds": () => SECRET,
  "--dest-creds": () => SECRET,
  "-v": () => "use --debug (-d) for one line per HTTP exchange",
  "--verbose": () => "use --debug (-d) for one line per HTTP exchange",
};

// Flags that other commands take but `copy` refuses on purpose.
const COPY_REFUSED = new Set(["-u", "--username", "--password-stdin"]);

/**
 * The usage message of `flag`, unknown to `command`. `known` lists the command's own long flag
 * names (without dashes); `elsewhere` maps the other commands' long flag names to a command
 * that takes them. A flag of another tool is recognised, so it is not called unknown: the
 * message says it is not ocipart's and what to use instead.
 *
 * @example A typo, and a flag from skopeo
 * ```ts
 * import { unknownFlagMessage } from "./unknown_words.ts";
 * const known = ["plain-http", "workers"];
 * console.log(unknownFlagMessage({ raw: "--plain-htpp" }, "pull", known, new Map()));
 * // "unknown flag --plain-htpp (did you mean --plain-http?)"
 * console.log(unknownFlagMessage({ raw: "--authfile" }, "pull", known, new Map()));
 * // "--authfile is not a flag of ocipart: use --registry-config FILE (a docker config.json)"
 * ```
 */
export function unknownFlagMessage(
  flag: TypedFlag,
  command: CommandName,
  known: readonly string[],
  elsewhere: ReadonlyMap<string, CommandName>,
): string {
  const typed = terminalText(flag.raw);
  if (command === "copy" && COPY_REFUSED.has(flag.raw)) {
    return `${typed} is not a flag of copy: ${CREDENTIALS_OF_COPY}`;
  }
  const foreign = Object.hasOwn(FOREIGN, flag.raw) ? FOREIGN[flag.raw] : undefined;
  if (foreign !== undefined) return `${typed} is not a flag of ocipart: ${foreign(flag, command)}`;
  const shown = `unknown flag ${typed}`;
  if (!flag.raw.startsWith("--")) return shown;
  const name = flag.raw.slice(2);
  const other = elsewhere.get(name);
  if (other !== undefined) return `${shown}: it is a flag of ${other}, not of ${command}`;
  return `${shown}${didYouMean(nearest(name, known).map((n) => `--${n}`))}`;
}

// Words typed in place of a command that name one of ours.
const FOREIGN_COMMANDS: Readonly<Record<string, string>> = {
  cp: "copy",
  version: "--version",
  "-v": "--version",
  "-V": "--version",
};

/** The command a mistyped line names after a flag put first, and that command's long flags. */
export interface TypedCommand {
  /** The first command name among the arguments after the flag. */
  readonly command: CommandName;
  /** Its long flag names, without dashes. */
  readonly flags: readonly string[];
}

/**
 * The usage message of `word`, typed where a command belongs. A flag that some command takes
 * (`elsewhere`) is told to go after the command: after the command typed later on the line
 * (`typed`) when that one takes it. A near miss of a command gets a suggestion.
 *
 * @example
 * ```ts
 * import { unknownCommandMessage } from "./unknown_words.ts";
 * const elsewhere = new Map([["plain-http", "push" as const]]);
 * console.log(unknownCommandMessage("pul", ["push", "pull"], elsewhere));
 * // 'unknown command "pul" (did you mean pull?)'
 * const typed = { command: "pull" as const, flags: ["plain-http"] };
 * console.log(unknownCommandMessage("--plain-http", ["push", "pull"], elsewhere, typed));
 * // "unknown global flag --plain-http: flags go after the command, as in ocipart pull --plain-http …"
 * ```
 */
export function unknownCommandMessage(
  word: string,
  commands: readonly string[],
  elsewhere: ReadonlyMap<string, CommandName>,
  typed?: TypedCommand,
): string {
  const foreign = Object.hasOwn(FOREIGN_COMMANDS, word) ? [FOREIGN_COMMANDS[word]] : undefined;
  if (!word.startsWith("-")) {
    const suggestions = foreign ?? nearest(word, [...commands, "help"]);
    return `unknown command "${terminalText(word)}"${didYouMean(suggestions)}`;
  }
  const shown = `unknown global flag ${terminalText(word)}`;
  const name = word.replace(/^--?/, "").split("=")[0];
  const owner = typed?.flags.includes(name) ? typed.command : elsewhere.get(name);
  if (owner !== undefined) {
    return `${shown}: flags go after the command, as in ocipart ${owner} ${terminalText(word)} …`;
  }
  const suggestions = foreign ?? nearest(name, ["help", "version"]).map((n) => `--${n}`);
  return `${shown}${didYouMean(suggestions)}`;
}
