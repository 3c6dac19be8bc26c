/**
 * Text a registry chose (titles, annotation keys and values, media types, error codes) is
 * untrusted: a terminal obeys control characters and reorders text around bidirectional
 * controls, and invisible or blank-looking characters make two different names look alike
 * (`notes\u200d.txt` lists as `notes.txt`). Such text must never reach a terminal raw, nor name
 * a file. This module owns the set of characters that are never passed through, the one
 * exception for display, and the ways of showing them escaped.
 *
 * The set:
 * - every control character (C0, DEL, C1, so ESC and the one-byte CSI U+009B too), every format
 *   character (bidirectional embeddings, overrides and isolates U+202A–U+202E, U+2066–U+2069,
 *   the marks U+200E, U+200F, U+061C, zero-width space U+200B, word joiner, U+FEFF, soft
 *   hyphen, tag characters …), the line and paragraph separators U+2028 and U+2029, and lone
 *   surrogates;
 * - every default-ignorable code point, which fonts draw as nothing: the joiners U+200C and
 *   U+200D, the combining grapheme joiner U+034F, variation selectors, the Hangul fillers
 *   U+115F, U+1160, U+3164 and U+FFA0 …;
 * - symbols that show as a blank or a placeholder: the Braille blank U+2800, the object
 *   replacement U+FFFC, the musical null notehead U+1D159;
 * - noncharacters (U+FFFF, U+FDD0 …), private-use characters (their glyph depends on the font)
 *   and unassigned code points;
 * - white space other than U+0020: no-break spaces, U+2000–U+200A, U+3000 ….
 *
 * A file name taken from a registry holds none of them ({@linkcode hasUnsafeNameText}). Shown
 * text keeps a few where they are visible: the zero-width non-joiner and joiner between two
 * letters of a script they shape (Persian `می‌خواهم`, Hindi `क्‍ष`) and the joiner between two
 * emoji (`👩‍💻`), and a variation selector U+FE0E/U+FE0F right after an emoji, whose
 * presentation it picks. Anywhere else (`notes\u200d.txt`) they change nothing a reader sees, so
 * they are escaped like the rest.
 *
 * @module
 */

// What fonts draw as nothing, as a blank, or as whatever the font likes.
const UNSAFE_CLASSES = [
  "\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Cs}", // controls, format, U+2028/U+2029, lone surrogates
  "\\p{Default_Ignorable_Code_Point}", // the joiners, variation selectors, Hangul fillers …
  "\\u2800\\ufffc\\u{1d159}", // Braille blank, object replacement, null notehead
  "\\p{Co}\\p{Cn}", // private use; unassigned, noncharacters included
].join("");
// Also white space other than U+0020 (a negated class: not non-space, and not U+0020).
const UNSAFE = new RegExp(`[${UNSAFE_CLASSES}]|[^\\P{White_Space} ]`, "gu");
const ANY_UNSAFE = new RegExp(UNSAFE.source, "u");

const ZWNJ = "\u200c";
const ZWJ = "\u200d";
const PRESENTATION_SELECTORS = new Set(["\ufe0e", "\ufe0f"]);
const PICTOGRAPH = /^\p{Extended_Pictographic}$/u;
const EMOJI_MODIFIER = /^\p{Emoji_Modifier}$/u;
const LETTER_OR_MARK = /^[\p{L}\p{M}]$/u;
// Scripts whose letters the joiners shape: the cursive-joining scripts and the Brahmic ones.
const JOINING_SCRIPTS = (
  "Arab Syrc Nkoo Mong Mand Mani Phlp Rohg Sogd Ougr Adlm Phag " +
  "Deva Beng Guru Gujr Orya Taml Telu Knda Mlym Sinh Tibt Mymr Khmr"
).split(" ");
const JOINING_SCRIPT = new RegExp(
  `^[${JOINING_SCRIPTS.map((s) => `\\p{scx=${s}}`).join("")}]$`,
  "u",
);

/**
 * Whether `text` holds a character that must never be shown raw where it stands (see the module
 * documentation for the set and the joiners' exception).
 *
 * @example A right-to-left override and an emoji
 * ```ts
 * import { hasUnsafeText } from "@ocipart/ocipart/parted";
 * console.log(hasUnsafeText("weights.bin"), hasUnsafeText("\u202egnp.exe")); // false true
 * console.log(hasUnsafeText("👩‍💻"), hasUnsafeText("notes\u200d.txt")); // false true
 * ```
 */
export function hasUnsafeText(text: string): boolean {
  for (const match of text.matchAll(UNSAFE)) {
    if (!shownRaw(text, match[0], match.index)) return true;
  }
  return false;
}

/**
 * Whether `text` holds a character a file name taken from a registry may not hold: any of the
 * set in the module documentation, wherever it stands (a joiner or variation selector too).
 *
 * @example A name that lists like another, and one that looks blank
 * ```ts
 * import { hasUnsafeNameText } from "./untrusted_text.ts";
 * console.log(hasUnsafeNameText("notes.txt"), hasUnsafeNameText("notes\u200d.txt")); // false true
 * console.log(hasUnsafeNameText("\u3164"), hasUnsafeNameText("a\u00a0b.bin")); // true true
 * ```
 */
export function hasUnsafeNameText(text: string): boolean {
  return ANY_UNSAFE.test(text);
}

/**
 * `text` with every character {@linkcode hasUnsafeText} reports replaced by `escape(char)`:
 * the one loop behind {@linkcode terminalText}, {@linkcode jsonText} and the CLI's shell
 * quoting, which differ only in how a character is written.
 *
 * @example Escaping as code points
 * ```ts
 * import { replaceUnsafeText } from "@ocipart/ocipart/parted";
 * const hex = (char: string) => `<${char.codePointAt(0)!.toString(16)}>`;
 * console.log(replaceUnsafeText("a\u00a0b \u202ec", hex)); // "a<a0>b <202e>c"
 * ```
 */
export function replaceUnsafeText(text: string, escape: (char: string) => string): string {
  return text.replace(
    UNSAFE,
    (char: string, at: number) => shownRaw(text, char, at) ? char : escape(char),
  );
}

/**
 * `text` with every unsafe character shown as an escape (`\x1b`, `\x9b`, `\u202e`,
 * `\u{e0041}`): the one function the CLI passes registry-chosen text through before printing
 * it. A backslash is doubled where what follows it would read as one of those escapes (before
 * `x`, `u`, another backslash, or an escaped character), so a literal `\x1b` in a title shows as
 * `\\x1b`, never like an escaped ESC; everything else is left as it is.
 *
 * @example A title that would set the window title and clear the screen
 * ```ts
 * import { terminalText } from "@ocipart/ocipart/parted";
 * console.log(terminalText("\x1b]0;pwned\x07\x1b[2Jw.bin")); // "\x1b]0;pwned\x07\x1b[2Jw.bin"
 * console.log(terminalText("\u202egnp.exe") === "\\u202egnp.exe"); // true
 * console.log(terminalText("notes\u200d.txt") === "notes\\u200d.txt"); // true
 * console.log(terminalText("a\\x1b.bin") === "a\\\\x1b.bin"); // true: a literal backslash
 * ```
 */
export function terminalText(text: string): string {
  const told = text.replace(/\\/g, (slash, at: number) => {
    const next = charAt(text, at + 1);
    return /^[xu\\]$/.test(next) || hasUnsafeText(next) ? "\\\\" : slash;
  });
  return replaceUnsafeText(told, escapeCodePoint);
}

/**
 * `JSON.stringify(value)` with every unsafe character written as `\u` escapes, which
 * `JSON.stringify` leaves raw: the one serializer of the CLI's `--json` output. Parsing gives
 * back the same strings.
 *
 * @example A one-byte CSI and a right-to-left override stay escaped
 * ```ts
 * import { jsonText } from "@ocipart/ocipart/parted";
 * const line = jsonText({ title: "\u009b31m\u202egnp.exe" });
 * console.log(line); // {"title":"\u009b31m\u202egnp.exe"}
 * console.log(JSON.parse(line).title === "\u009b31m\u202egnp.exe"); // true
 * ```
 */
export function jsonText(value: unknown): string {
  // These characters only ever occur inside JSON strings, where an escape means the same; the
  // characters JSON.stringify itself escapes (quote, backslash, C0) are never joining letters,
  // so the joiners' exception judges the same neighbours as in the string.
  return replaceUnsafeText(JSON.stringify(value), jsonEscape);
}

/** Whether the unsafe `char` at `at` in `text` is one of the exceptions shown raw. */
function shownRaw(text: string, char: string, at: number): boolean {
  if (char === ZWNJ || char === ZWJ) return joins(text, char, at);
  if (PRESENTATION_SELECTORS.has(char)) return PICTOGRAPH.test(charBefore(text, at));
  return false;
}

/** A joiner between two letters of a script it shapes, or a joiner between two emoji. */
function joins(text: string, joiner: string, at: number): boolean {
  const before = charBefore(text, at);
  const after = charAt(text, at + joiner.length);
  if (isJoiningLetter(before) && isJoiningLetter(after)) return true;
  return joiner === ZWJ && endsEmoji(text, at) && PICTOGRAPH.test(after);
}

function isJoiningLetter(char: string): boolean {
  return LETTER_OR_MARK.test(char) && JOINING_SCRIPT.test(char);
}

/** An emoji ends at `at`: a pictograph, with a skin tone or a presentation selector after it. */
function endsEmoji(text: string, at: number): boolean {
  const last = charBefore(text, at);
  if (PICTOGRAPH.test(last)) return true;
  if (!EMOJI_MODIFIER.test(last) && !PRESENTATION_SELECTORS.has(last)) return false;
  return PICTOGRAPH.test(charBefore(text, at - last.length));
}

/** The code point that ends at UTF-16 index `at`, or "". */
function charBefore(text: string, at: number): string {
  if (at <= 0) return "";
  const low = text.charCodeAt(at - 1);
  const isLow = low >= 0xdc00 && low <= 0xdfff;
  const high = at >= 2 ? text.charCodeAt(at - 2) : 0;
  const paired = isLow && high >= 0xd800 && high <= 0xdbff;
  return text.slice(paired ? at - 2 : at - 1, at);
}

/** The code point that starts at UTF-16 index `at`, or "". */
function charAt(text: string, at: number): string {
  const code = text.codePointAt(at);
  return code === undefined ? "" : String.fromCodePoint(code);
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
