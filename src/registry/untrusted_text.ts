/**
 * Text a registry chose (titles, annotation keys and values, media types, error codes) is
 * untrusted: a terminal obeys control characters and reorders text around bidirectional
 * controls, so such text must never reach one raw, nor name a file. This module owns the set of
 * characters that are never passed through, and the two ways of showing them escaped.
 *
 * The set: every control character (C0, DEL, C1, so ESC and the one-byte CSI U+009B too), every
 * invisible format character (bidirectional embeddings, overrides and isolates U+202A–U+202E,
 * U+2066–U+2069, the marks U+200E, U+200F, U+061C, zero-width space U+200B, word joiner, U+FEFF,
 * soft hyphen, tag characters …), the line and paragraph separators U+2028 and U+2029, and lone
 * surrogates. Kept: the zero-width non-joiner and joiner (U+200C, U+200D), which ordinary Persian
 * and Indic words and emoji sequences need and which move nothing on a terminal.
 *
 * @module
 */

// Cc: C0, DEL, C1. Cf: format characters (bidi controls, marks, zero-width, tags).
// Zl/Zp: U+2028/U+2029. Cs: a lone surrogate (a string from JSON may hold one).
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
const JOINERS = new Set(["\u200c", "\u200d"]);

function unsafe(char: string): boolean {
  return !JOINERS.has(char);
}

/**
 * Whether `text` holds a character that must never be shown raw or name a file (see the module
 * documentation for the set).
 *
 * @example
 * ```ts
 * import { hasUnsafeText } from "./untrusted_text.ts";
 * console.log(hasUnsafeText("weights.bin"), hasUnsafeText("\u202egnp.exe")); // false true
 * ```
 */
export function hasUnsafeText(text: string): boolean {
  for (const match of text.matchAll(UNSAFE)) if (unsafe(match[0])) return true;
  return false;
}

/**
 * `text` with every unsafe character shown as an escape (`\x1b`, `\x9b`, `\u202e`,
 * `\u{e0041}`): the one function the CLI passes registry-chosen text through before printing
 * it. Everything else, backslashes included, is left as it is.
 *
 * @example A title that would set the window title and clear the screen
 * ```ts
 * import { terminalText } from "./untrusted_text.ts";
 * console.log(terminalText("\x1b]0;pwned\x07\x1b[2Jw.bin")); // "\x1b]0;pwned\x07\x1b[2Jw.bin"
 * console.log(terminalText("\u202egnp.exe") === "\\u202egnp.exe"); // true
 * ```
 */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, (char) => unsafe(char) ? escapeCodePoint(char) : char);
}

/**
 * `JSON.stringify(value)` with every unsafe character written as `\u` escapes, which
 * `JSON.stringify` leaves raw for DEL, C1, format characters and U+2028/U+2029: the one
 * serializer of the CLI's `--json` output. Parsing gives back the same strings.
 *
 * @example A one-byte CSI and a right-to-left override stay escaped
 * ```ts
 * import { jsonText } from "./untrusted_text.ts";
 * const line = jsonText({ title: "\u009b31m\u202egnp.exe" });
 * console.log(line); // {"title":"\u009b31m\u202egnp.exe"}
 * console.log(JSON.parse(line).title === "\u009b31m\u202egnp.exe"); // true
 * ```
 */
export function jsonText(value: unknown): string {
  // These characters only ever occur inside JSON strings, where an escape means the same.
  return JSON.stringify(value).replace(UNSAFE, (char) => unsafe(char) ? jsonEscape(char) : char);
}

function escapeCodePoint(char: string): string {
  const code = char.codePointAt(0)!;
  if (code < 0x100) return `\\x${hex(code, 2)}`;
  if (code < 0x10000) return `\\u${hex(code, 4)}`;
  return `\\u{${code.toString(16)}}`;
}

function jsonEscape(char: string): string {
  let escaped = "";
  for (let i = 0; i < char.length; i++) escaped += `\\u${hex(char.charCodeAt(i), 4)}`;
  return escaped;
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, "0");
}
