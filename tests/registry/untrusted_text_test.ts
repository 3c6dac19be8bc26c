/**
 * The characters registry-chosen text may not show raw nor hold in a file name: one row per
 * class, each with what `terminalText` and `jsonText` show, and whether `isPlainFileName`
 * accepts it; then the places where the joiners and emoji selectors stay raw on display.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import {
  hasUnsafeNameText,
  hasUnsafeText,
  jsonText,
  replaceUnsafeText,
  terminalText,
} from "../../src/registry/untrusted_text.ts";
import { isPlainFileName } from "../../src/parted/format.ts";
import { shellWord } from "../../src/cli/words/shell_word.ts";

/** [class, a name holding one, how the terminal shows it, how --json writes it]. */
const CLASSES: [string, string, string, string][] = [
  ["C0 control", "a\x1bb.bin", String.raw`a\x1bb.bin`, String.raw`a\u001bb.bin`],
  ["DEL", "a\x7fb.bin", String.raw`a\x7fb.bin`, String.raw`a\u007fb.bin`],
  ["C1 control (one-byte CSI)", "a\x9bb.bin", String.raw`a\x9bb.bin`, String.raw`a\u009bb.bin`],
  ["bidirectional override", "\u202egnp.exe", String.raw`\u202egnp.exe`, String.raw`\u202egnp.exe`],
  ["zero-width space", "a\u200bb.bin", String.raw`a\u200bb.bin`, String.raw`a\u200bb.bin`],
  ["soft hyphen", "a\u00adb.bin", String.raw`a\xadb.bin`, String.raw`a\u00adb.bin`],
  ["tag character", "a\u{e0041}.bin", String.raw`a\u{e0041}.bin`, String.raw`a\udb40\udc41.bin`],
  ["line separator", "a\u2028b.bin", String.raw`a\u2028b.bin`, String.raw`a\u2028b.bin`],
  ["lone surrogate", "a\udc41.bin", String.raw`a\udc41.bin`, String.raw`a\udc41.bin`],
  [
    "zero-width joiner between Latin",
    "notes\u200d.txt",
    String.raw`notes\u200d.txt`,
    String.raw`notes\u200d.txt`,
  ],
  [
    "zero-width non-joiner between Latin",
    "a\u200cb.bin",
    String.raw`a\u200cb.bin`,
    String.raw`a\u200cb.bin`,
  ],
  ["combining grapheme joiner", "a\u034fb.bin", String.raw`a\u034fb.bin`, String.raw`a\u034fb.bin`],
  [
    "variation selector after a letter",
    "a\ufe0f.bin",
    String.raw`a\ufe0f.bin`,
    String.raw`a\ufe0f.bin`,
  ],
  ["Hangul choseong filler", "\u115f.bin", String.raw`\u115f.bin`, String.raw`\u115f.bin`],
  ["Hangul jungseong filler", "a\u1160.bin", String.raw`a\u1160.bin`, String.raw`a\u1160.bin`],
  ["Hangul filler", "\u3164", String.raw`\u3164`, String.raw`\u3164`],
  ["halfwidth Hangul filler", "a\uffa0.bin", String.raw`a\uffa0.bin`, String.raw`a\uffa0.bin`],
  ["Braille blank", "\u2800.bin", String.raw`\u2800.bin`, String.raw`\u2800.bin`],
  ["object replacement", "a\ufffc.bin", String.raw`a\ufffc.bin`, String.raw`a\ufffc.bin`],
  ["noncharacter", "a\uffff.bin", String.raw`a\uffff.bin`, String.raw`a\uffff.bin`],
  ["noncharacter (U+FDD0)", "a\ufdd0.bin", String.raw`a\ufdd0.bin`, String.raw`a\ufdd0.bin`],
  ["private use", "a\ue000.bin", String.raw`a\ue000.bin`, String.raw`a\ue000.bin`],
  [
    "supplementary private use",
    "a\u{f0000}.bin",
    String.raw`a\u{f0000}.bin`,
    String.raw`a\udb80\udc00.bin`,
  ],
  ["unassigned", "a\u0378.bin", String.raw`a\u0378.bin`, String.raw`a\u0378.bin`],
  ["no-break space", "a\u00a0b.bin", String.raw`a\xa0b.bin`, String.raw`a\u00a0b.bin`],
  ["en quad (U+2000–U+200A)", "a\u2000b.bin", String.raw`a\u2000b.bin`, String.raw`a\u2000b.bin`],
  ["hair space", "a\u200ab.bin", String.raw`a\u200ab.bin`, String.raw`a\u200ab.bin`],
  ["narrow no-break space", "a\u202fb.bin", String.raw`a\u202fb.bin`, String.raw`a\u202fb.bin`],
  [
    "ideographic space",
    "日本\u3000語.bin",
    String.raw`日本\u3000語.bin`,
    String.raw`日本\u3000語.bin`,
  ],
];

for (const [what, name, shown, json] of CLASSES) {
  Deno.test(`untrusted text: ${what} is escaped and names no file`, () => {
    assertEquals(terminalText(name), shown);
    assertEquals(jsonText({ title: name }), `{"title":"${json}"}`);
    assertEquals(JSON.parse(jsonText({ title: name })).title, name, "parses back the same");
    assert(hasUnsafeText(name) && hasUnsafeNameText(name), what);
    assertEquals(isPlainFileName(name), false, what);
    assert(!shellWord(name).startsWith("'"), `${what}: written with escapes for a shell`);
  });
}

Deno.test("untrusted text: joiners and emoji selectors stay raw where they join; names refuse them", () => {
  const joined = [
    "می‌خواهم.bin", // Persian: a non-joiner between two Arabic letters
    "क्‍ष.bin", // Devanagari: a joiner after a virama
    "👩‍💻.bin", // an emoji sequence
    "👩🏽‍💻.bin", // with a skin tone before the joiner
    "🏳️‍🌈.bin", // with a presentation selector before the joiner
    "❤️.bin", // a presentation selector after an emoji
  ];
  for (const name of joined) {
    assertEquals(terminalText(name), name);
    assertEquals(jsonText(name), JSON.stringify(name));
    assertEquals(hasUnsafeText(name), false, name);
    assertEquals(shellWord(name), `'${name}'`);
    // A file name holds no default-ignorable character at all.
    assertEquals([hasUnsafeNameText(name), isPlainFileName(name)], [true, false], name);
  }
  // Where they join nothing they are escaped: at either end, doubled, between other scripts.
  const loose: [string, string][] = [
    ["\u200dمی", String.raw`\u200dمی`],
    ["می\u200c", String.raw`می\u200c`],
    ["م\u200c\u200cی", String.raw`م\u200c\u200cی`],
    ["a\u200dم", String.raw`a\u200dم`],
    ["👩\u200da", String.raw`👩\u200da`],
    ["a\u200c👩", String.raw`a\u200c👩`],
    ["\ufe0f❤", String.raw`\ufe0f❤`],
  ];
  for (const [text, shown] of loose) assertEquals(terminalText(text), shown);
});

Deno.test("untrusted text: ordinary names of every script are plain and shown as they are", () => {
  for (const name of ["模型 v1.bin", "Grüße-2024.tar.gz", "модель.bin", "🚀.bin", "a b.bin"]) {
    assertEquals(terminalText(name), name);
    assertEquals(jsonText(name), JSON.stringify(name));
    assertEquals([hasUnsafeText(name), hasUnsafeNameText(name)], [false, false]);
    assert(isPlainFileName(name), name);
  }
  // A backslash is shown as it is, unless what follows would read as an escape: then it is
  // doubled, so a literal `\u200d` never looks like an escaped joiner (a name holding a
  // backslash is refused for its own reason).
  assertEquals(terminalText("a\\b"), "a\\b");
  assertEquals(terminalText("a\\u200d"), "a\\\\u200d");
  assertEquals(terminalText("a\u200d"), "a\\u200d");
  assertEquals(terminalText("a\\\x1b"), "a\\\\\\x1b", "a backslash before an escaped ESC");
});

Deno.test("untrusted text: replaceUnsafeText calls back for each escaped character only", () => {
  const seen: string[] = [];
  const out = replaceUnsafeText("👩‍💻 a\u200db \u3164", (char) => {
    seen.push(char);
    return "?";
  });
  assertEquals(out, "👩‍💻 a?b ?");
  assertEquals(seen, ["\u200d", "\u3164"]);
});
