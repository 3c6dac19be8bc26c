/**
 * The words of a push that ran into a registry's limit on its part size (a chain carrying
 * `PartSizeError`): a sentence naming the registry as typed and the limit; and, when the library
 * names a size that fits, the hint to push again with it and the command to run: the user's own
 * arguments after `push`, spelled as typed, with `--part-size` replaced or added, quoted for a
 * POSIX shell (`src/cli/words/shell_word.ts`). The size itself is the library's
 * (`src/parted/part_size_advice.ts`); nothing here computes one.
 *
 * @module
 */
import { findError, HttpStatusError } from "../../errors/mod.ts";
import { distributionErrorCodes, PartSizeError, wholeBinaryUnit } from "../../parted/mod.ts";
import type { Place, Words } from "./cause_words.ts";
import type { FailureSubject } from "./failure_subject.ts";
import { shellLine } from "./shell_word.ts";
import { statusAnswer } from "./status_words.ts";

const WHY: Readonly<Record<PartSizeError["limit"], string>> = {
  "request-time": "(a part then fits the time limit at the speed measured)",
  "body-size": "(a guess: the registry did not state its limit, so this is at most half the " +
    "size it refused; if it is refused too, the next report names a smaller one)",
  "layer-count": "(half as many parts)",
  "token-lifetime": "(a part then arrives within a token's lifetime)",
};

/** `(413 Content Too Large)`: the refusal's status and listed codes, when the chain has one. */
function said(err: unknown): string {
  const http = findError(err, HttpStatusError);
  return http === undefined ? "" : ` (${statusAnswer(http.status, distributionErrorCodes(http))})`;
}

/** The sentence of each limit: the registry as typed, and what it refused. */
function sentence(limit: PartSizeError, err: unknown, where: string): string {
  const part = sizeText(limit.partSize);
  switch (limit.limit) {
    case "body-size":
      return `${where} refused a part of ${sizeText(limit.facts.refusedBytes ?? limit.partSize)} ` +
        `as too large${said(err)}`;
    case "request-time":
      return `${where} cut every upload of a ${part} part after about the same time: it, or a ` +
        "proxy in front of it, limits how long a request may take";
    case "token-lifetime":
      return `${where} refused the token once a whole ${part} part had arrived: a part must ` +
        "arrive within a token's lifetime";
    case "layer-count":
      return `${where} refused a manifest of ${limit.facts.partCount ?? 0} parts${said(err)}: ` +
        "it may limit the layers of a manifest";
  }
}

/**
 * The words of a failure whose chain carries a {@linkcode PartSizeError}, or `undefined`. With
 * a suggested size, the hint says to push again with it, and `command` is the line to run when
 * the subject has the push's typed arguments (`input.args`).
 *
 * @example A 413 on a 512 MiB part
 * ```ts
 * import { partSizeWords } from "./part_size_words.ts";
 * import { PartSizeError } from "../../parted/part_size_error.ts";
 * const err = new PartSizeError("PUT blob upload: status 413", {
 *   limit: "body-size",
 *   partSize: 2 ** 29,
 *   refusedBytes: 2 ** 29,
 *   suggestedPartSize: 2 ** 28,
 * });
 * const input = { reference: "reg.example/a/b:v1", args: ["reg.example/a/b:v1", "w.bin"] };
 * const place = { where: "reg.example", port: "443", plainHttp: false };
 * const words = partSizeWords({ command: "push", input }, err, place);
 * console.log(words?.sentence); // "reg.example refused a part of 512MiB as too large"
 * console.log(words?.command); // "ocipart push --part-size 256MiB reg.example/a/b:v1 w.bin"
 * ```
 */
export function partSizeWords(
  subject: FailureSubject,
  err: unknown,
  place: Place,
): Words | undefined {
  const limit = findError(err, PartSizeError);
  if (limit === undefined) return undefined;
  const words = { sentence: sentence(limit, err, place.where) };
  const size = limit.suggestedPartSize;
  if (size === undefined) {
    // No size the format allows fits: the library's line says why; only speed would help.
    const timed = limit.limit === "request-time" || limit.limit === "token-lifetime";
    return timed ? { ...words, hint: "push over a faster link to the registry" } : words;
  }
  const { args } = subject.input;
  return {
    ...words,
    hint: `push again with --part-size ${sizeFlag(size)} ${WHY[limit.limit]}; no part ` +
      `already uploaded at ${sizeText(limit.partSize)} is reused (a new part size makes a new ` +
      "artifact)",
    ...(args === undefined ? {} : { command: rerunCommand(args, size) }),
  };
}

/**
 * `ocipart push` with `args` (as typed after `push`) whose every `--part-size` flag before a
 * `--` is replaced by one `--part-size` of `partSize`, first; each word quoted for a POSIX
 * shell when it needs it. The arguments passed the strict parse of `src/cli/arguments/args.ts`, where no
 * flag's value given as the next argument may begin with `-`: so a `--part-size` word before
 * `--` is always the flag, and the word after it its value.
 *
 * @example
 * ```ts
 * import { rerunCommand } from "./part_size_words.ts";
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
  return shellLine(["ocipart", "push", "--part-size", sizeFlag(partSize), ...kept]);
}

/** A size in a sentence: as `--part-size` takes it (`2MiB`), or `1000 bytes`. */
function sizeText(bytes: number): string {
  const flag = sizeFlag(bytes);
  return flag === String(bytes) ? `${bytes} bytes` : flag;
}

/** A size as `--part-size` takes it: `256MiB` for a whole number of a binary unit, else bytes. */
function sizeFlag(bytes: number): string {
  const whole = wholeBinaryUnit(bytes);
  return whole === undefined ? String(bytes) : `${whole.value}${whole.unit}`;
}
