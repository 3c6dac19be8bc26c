/**
 * The words for a local file (or standard output) the command could not use: the path as typed and what the
 * operating system said, in the words of `src/parted/fs_reason.ts`, with advice for the codes a
 * person can act on.
 *
 * @module
 */
import { causeChain, findError, LocalFileError } from "../../errors/mod.ts";
import {
  DestinationExistsError,
  errnoCode,
  errnoMeaning,
  type ExistingEntry,
  terminalText,
} from "../../parted/mod.ts";
import type { Words } from "./cause_words.ts";
import type { FailureSubject } from "./failure_subject.ts";

function firstErrno(err: unknown): string | undefined {
  for (const link of causeChain(err)) {
    const code = errnoCode(link);
    if (code !== undefined) return code;
  }
  return undefined;
}

/** `: meaning (CODE)` for a code with a known meaning, ` (CODE)` for another, or nothing. */
function reason(err: unknown): string {
  const code = firstErrno(err);
  if (code === undefined) return "";
  const meaning = errnoMeaning(code);
  return meaning === undefined ? ` (${code})` : `: ${meaning} (${code})`;
}

function advice(code: string | undefined, subject: FailureSubject): string | undefined {
  const pull = subject.command === "pull";
  switch (code) {
    case "ENOSPC":
    case "EDQUOT":
      return pull
        ? "free some space and run it again: the pull resumes where it stopped"
        : undefined;
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return "check the permissions of the file and of its directory";
    case "ENOENT":
      return pull ? "does the destination's directory exist?" : "check the path";
    case "ELOOP":
      return pull ? "a pull never writes through a symbolic link: give the real path" : undefined;
    case "EMFILE":
      return "too many files are open: use fewer --workers, or raise the limit (ulimit -n)";
    default:
      return undefined;
  }
}

/** The local path the user gave, escaped, as a failure report names it. */
function pathOf(subject: FailureSubject): string {
  const { input } = subject;
  return terminalText(
    (subject.command === "pull" ? input.destination : input.file) ?? "the local file",
  );
}

/**
 * The words of a path Deno lets no program use without every permission (`ALL_PERMISSION`:
 * under /proc, /sys and /dev). Granting every permission is not the advice: a pull cannot make
 * its partial file in /proc or /sys even then, and a transfer has no business in /dev.
 *
 * @example A pull into /proc
 * ```ts
 * import { restrictedPathWords } from "./local_file_words.ts";
 * const words = restrictedPathWords({ command: "pull", input: { destination: "/proc/x" } });
 * console.log(words.sentence);
 * // "cannot use /proc/x: Deno's permissions keep a program out of /proc, /sys and /dev"
 * console.log(words.hint); // "choose a path outside /proc, /sys and /dev"
 * ```
 */
export function restrictedPathWords(subject: FailureSubject): Words {
  return {
    sentence: `cannot use ${pathOf(subject)}: Deno's permissions keep a program out of /proc, ` +
      "/sys and /dev",
    hint: "choose a path outside /proc, /sys and /dev",
  };
}

/**
 * Whether `err` is about the directory where parts wait (the temporary directory of a pipe or
 * of cat, or cat's cache directory: the library's message says so), not about the file the
 * user named.
 */
function inPartsDirectory(err: unknown): boolean {
  const local = findError(err, LocalFileError);
  return local !== undefined &&
    /^(temporary (directory|part file)|cache directory):/.test(local.message);
}

/**
 * The words of an error in the directory where parts wait (a pipe's or cat's temporary
 * directory, cat's `--cache-dir`): which it is, the system's reason and what to do; `undefined`
 * for another error.
 *
 * @example A full disk under the parts of `pull -`
 * ```ts
 * import { temporaryDirectoryWords } from "./local_file_words.ts";
 * import { LocalFileError } from "../../errors/mod.ts";
 * const err = new LocalFileError("temporary part file: cannot be created", {
 *   cause: Object.assign(new Error("os"), { code: "ENOSPC" }),
 * });
 * const subject = { command: "pull", input: { destination: "-", tempDir: "/big" } };
 * console.log(temporaryDirectoryWords(subject, err)?.sentence);
 * // "cannot keep parts in --temp-dir /big: no space left on the device (ENOSPC)"
 * ```
 */
export function temporaryDirectoryWords(subject: FailureSubject, err: unknown): Words | undefined {
  if (!inPartsDirectory(err)) return undefined;
  const { tempDir, cacheDir } = subject.input;
  const [place, other] = cacheDir !== undefined
    ? [`--cache-dir ${terminalText(cacheDir)}`, "give --cache-dir another directory"]
    : tempDir !== undefined
    ? [`--temp-dir ${terminalText(tempDir)}`, "give --temp-dir another directory"]
    : ["the system's temporary directory", "give --temp-dir"];
  const sentence = `cannot keep parts in ${place}${reason(err)}`;
  switch (firstErrno(err)) {
    case "ENOSPC":
    case "EDQUOT":
      return { sentence, hint: `free some space, or ${other} on a disk with room` };
    case "ENOENT":
    case "ENOTDIR":
      return { sentence, hint: `${other}: a directory that exists` };
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return { sentence, hint: `check the directory's permissions, or ${other}` };
    default:
      return { sentence };
  }
}

/**
 * The words of a local file error: the path the user gave, the system's reason, and advice.
 *
 * @example A missing source file
 * ```ts
 * import { localFileWords } from "./local_file_words.ts";
 * const err = Object.assign(new Error("open"), { code: "ENOENT" });
 * const subject = { command: "push", input: { file: "weights.bin" } };
 * console.log(localFileWords(subject, err).sentence);
 * // "cannot use weights.bin: no such file or directory (ENOENT)"
 * ```
 */
export function localFileWords(subject: FailureSubject, err: unknown): Words {
  const sentence = `cannot use ${pathOf(subject)}${reason(err)}`;
  const hint = advice(firstErrno(err), subject);
  return hint === undefined ? { sentence } : { sentence, hint };
}

const EXISTING: Readonly<Record<ExistingEntry, string>> = {
  file: "a file",
  directory: "a directory",
  link: "a symbolic link",
  other: "a special file",
};

/**
 * The words of a pull refused because its file's name is taken (`DestinationExistsError`), or
 * `undefined` for another error: the path that is taken (inside a directory, named by the
 * artifact, so escaped like registry text), and whether `--overwrite` would replace it.
 *
 * @example A file of the artifact's name in the directory
 * ```ts
 * import { destinationWords } from "./local_file_words.ts";
 * import { DestinationExistsError } from "../../parted/destination_exists_error.ts";
 * const subject = { command: "pull", input: { destination: "models" } };
 * const words = destinationWords(subject, new DestinationExistsError("models/w.bin", "file"));
 * console.log(words?.sentence); // "cannot pull into models: models/w.bin already exists (a file)"
 * console.log(words?.hint);
 * // "the existing file is kept; add --overwrite to replace it with the pulled file"
 * ```
 */
export function destinationWords(subject: FailureSubject, err: unknown): Words | undefined {
  const taken = findError(err, DestinationExistsError);
  if (taken === undefined) return undefined;
  const into = terminalText(subject.input.destination ?? "the destination");
  const sentence = `cannot pull into ${into}: ${terminalText(taken.path)} already exists ` +
    `(${EXISTING[taken.existing]})`;
  return taken.existing === "file"
    ? {
      sentence,
      hint: "the existing file is kept; add --overwrite to replace it with the pulled file",
    }
    : {
      sentence,
      hint:
        "it is never replaced, even with --overwrite: move it away, or pull into another directory",
    };
}

/**
 * The words of output that standard output would not take (not a closed reader: that ends the
 * command quietly), with the system's reason.
 *
 * @example A full disk behind `> file`
 * ```ts
 * import { outputWords } from "./local_file_words.ts";
 * const err = new Error("x", { cause: Object.assign(new Error("full"), { code: "ENOSPC" }) });
 * console.log(outputWords(err).sentence);
 * // "could not write to standard output: no space left on the device (ENOSPC)"
 * ```
 */
export function outputWords(err: unknown): Words {
  const sentence = `could not write to standard output${reason(err)}`;
  return { sentence, hint: "the command's output is lost: run it again with room for it" };
}
