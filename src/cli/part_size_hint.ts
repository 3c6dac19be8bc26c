/**
 * What to do after a push ran into a registry's limit on its part size: push again with the
 * size the library suggests. The hint names that size, says that nothing uploaded at the old
 * size is reused, and gives the command to run: the user's own arguments with `--part-size`
 * replaced or added, quoted for a POSIX shell.
 *
 * @module
 */
import { findError } from "../errors/find_error.ts";
import { PartSizeError } from "../parted/part_size_error.ts";

const WHY: Readonly<Record<PartSizeError["limit"], string>> = {
  "request-time": "(a part then fits the time limit at the speed measured)",
  "body-size": "(the registry refused the size of a part)",
  "layer-count": "(half as many parts)",
  "token-lifetime": "(a part then arrives within a token's lifetime)",
};

/** What to do after a part-size limit: the advice in words, and the command to run. */
export interface PartSizeAdvice {
  /** One sentence: the size to push with, why, and that nothing is reused. */
  readonly hint: string;
  /** The command line to run (the user's arguments with `--part-size` replaced). */
  readonly command: string;
}

/**
 * The advice after a failed push whose chain carries a {@linkcode PartSizeError} with a
 * suggested size, or `undefined`. `args` are the push command's arguments as typed (after
 * `push`). A failure report can show `hint` as its hint and `command` on a line of its own.
 *
 * @example
 * ```ts ignore
 * import { partSizeAdvice } from "./part_size_hint.ts";
 * const advice = partSizeAdvice(err, ["--plain-http", "127.0.0.1:5000/a/b:v1", "big.bin"]);
 * ```
 */
export function partSizeAdvice(
  err: unknown,
  args: readonly string[],
): PartSizeAdvice | undefined {
  const limit = findError(err, PartSizeError);
  const size = limit?.suggestedPartSize;
  if (limit === undefined || size === undefined) return undefined;
  return {
    hint: `push again with --part-size ${sizeFlag(size)} ${WHY[limit.limit]}; no part already ` +
      `uploaded at ${sizeFlag(limit.partSize)} is reused (a new part size makes a new artifact)`,
    command: rerunCommand(args, size),
  };
}

/**
 * The advice as the end of a failure report: `ocipart push: hint: …. Run:` and the command,
 * indented, on the next line; empty without advice.
 *
 * @example
 * ```ts ignore
 * import { partSizeHint } from "./part_size_hint.ts";
 * stderr(partSizeHint(err, ["--plain-http", "127.0.0.1:5000/a/b:v1", "big.bin"]));
 * ```
 */
export function partSizeHint(err: unknown, args: readonly string[]): string {
  const advice = partSizeAdvice(err, args);
  return advice === undefined
    ? ""
    : `ocipart push: hint: ${advice.hint}. Run:\n  ${advice.command}\n`;
}

/**
 * `ocipart push` with `args` (as typed after `push`) whose every `--part-size` flag before a
 * `--` is replaced by one `--part-size` of `partSize`, first; each word quoted for a POSIX
 * shell when it needs it.
 *
 * @example
 * ```ts
 * import { rerunCommand } from "./part_size_hint.ts";
 * console.log(rerunCommand(["--part-size=1GiB", "reg.example/a/b:v1", "my file.bin"], 2 ** 28));
 * // ocipart push --part-size 256MiB reg.example/a/b:v1 'my file.bin'
 * ```
 */
export function rerunCommand(args: readonly string[], partSize: number): string {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      kept.push(...args.slice(i));
      break;
    }
    if (arg === "--part-size") i++; // its value is the next argument
    else if (!arg.startsWith("--part-size=")) kept.push(arg);
  }
  const words = ["ocipart", "push", "--part-size", sizeFlag(partSize), ...kept];
  return words.map(shellWord).join(" ");
}

const UNITS = ["KiB", "MiB", "GiB", "TiB"];

/** A size as `--part-size` takes it: `256MiB` for a whole number of a binary unit, else bytes. */
function sizeFlag(bytes: number): string {
  let unit = -1;
  let value = bytes;
  while (unit < UNITS.length - 1 && value >= 1024 && value % 1024 === 0) {
    value /= 1024;
    unit++;
  }
  return unit < 0 ? String(bytes) : `${value}${UNITS[unit]}`;
}

/** `text` as one POSIX shell word: as it is when plain, else quoted; control bytes escaped. */
function shellWord(text: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(text)) return text;
  // deno-lint-ignore no-control-regex
  if (!/[\u0000-\u001f\u007f]/.test(text)) return `'${text.replaceAll("'", `'\\''`)}'`;
  // ANSI-C quoting (bash, zsh, ksh): nothing the terminal would act on is written raw.
  const escaped = [...text].map((c) => {
    const code = c.codePointAt(0)!;
    if (c === "\\" || c === "'") return `\\${c}`;
    return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, "0")}` : c;
  });
  return `$'${escaped.join("")}'`;
}
