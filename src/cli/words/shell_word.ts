/**
 * Command lines the CLI prints for a person to paste into a shell: each word quoted so that a
 * POSIX shell reads back exactly the words given, and nothing a terminal would act on written
 * raw.
 *
 * Which characters must never reach a terminal raw is the rule of
 * `src/registry/untrusted_text.ts` (`hasUnsafeText`, `replaceUnsafeText`); this file only
 * chooses how they are written. It cannot be `terminalText`'s `\x1b` or `\u202e`: pasted, a
 * shell reads those as a backslash and letters (in single quotes), or `\x9b` as the byte 0x9b
 * instead of U+009B (in `$'…'`). So an unsafe character is written as the `\xHH` escapes of its
 * UTF-8 bytes inside `$'…'` (bash, zsh, ksh), which every locale reads back as the same bytes.
 * dash (a common `sh`) cannot read `$'…'`: a line that holds one says which shells read it
 * ({@linkcode shellsOf}). A word starting with `=` is quoted: zsh expands `=ls` to a path.
 *
 * @module
 */
import { hasUnsafeText, replaceUnsafeText } from "../../parted/mod.ts";

// Words made only of these need no quotes: no shell expands, splits or globs them.
const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;

const utf8 = new TextEncoder();

/**
 * `text` as one POSIX shell word: as it is when plain, in single quotes otherwise, and in
 * `$'…'` with escapes when it holds a character a terminal must not receive raw.
 *
 * @example A space, a quote, and an escape sequence
 * ```ts
 * import { shellWord } from "./shell_word.ts";
 * console.log(shellWord("w.bin"), shellWord("my w.bin"), shellWord("it's"));
 * // w.bin 'my w.bin' 'it'\''s'
 * console.log(shellWord("\x1b[2Jw.bin")); // $'\x1b[2Jw.bin'
 * ```
 */
export function shellWord(text: string): string {
  if (PLAIN.test(text) && !text.startsWith("=")) return text;
  if (!hasUnsafeText(text)) return `'${text.replaceAll("'", `'\\''`)}'`;
  // Backslash and quote are never unsafe, so escaping them first leaves the rest as it was.
  const quoted = text.replace(/[\\']/g, (char) => `\\${char}`);
  const escaped = replaceUnsafeText(
    quoted,
    (char) => [...utf8.encode(char)].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join(""),
  );
  return `$'${escaped}'`;
}

/**
 * `words` as one command line, each quoted by {@linkcode shellWord}.
 *
 * @example
 * ```ts
 * import { shellLine } from "./shell_word.ts";
 * console.log(shellLine(["ocipart", "push", "reg.example/a/b:v1", "my file.bin"]));
 * // ocipart push reg.example/a/b:v1 'my file.bin'
 * ```
 */
export function shellLine(words: readonly string[]): string {
  return words.map(shellWord).join(" ");
}

/** The shells that read `$'…'` words; `sh` may be dash, which does not. */
export const DOLLAR_QUOTE_SHELLS = "bash, zsh or ksh";

/**
 * The shells that read `line` (one {@linkcode shellLine} wrote) as written: every POSIX shell
 * (undefined), or {@linkcode DOLLAR_QUOTE_SHELLS} when a word is in `$'…'`.
 *
 * @example
 * ```ts
 * import { shellLine, shellsOf } from "./shell_word.ts";
 * console.log(shellsOf(shellLine(["ocipart", "it's $'x'"]))); // undefined
 * console.log(shellsOf(shellLine(["ocipart", "\x1b.bin"]))); // "bash, zsh or ksh"
 * ```
 */
export function shellsOf(line: string): string | undefined {
  // Outside quotes, `\` takes the next character; inside '…' nothing is special but `'`.
  for (let at = 0; at < line.length; at++) {
    if (line[at] === "\\") at++;
    else if (line[at] === "'") at = line.indexOf("'", at + 1);
    else if (line.startsWith("$'", at)) return DOLLAR_QUOTE_SHELLS;
    if (at < 0) break;
  }
  return undefined;
}
