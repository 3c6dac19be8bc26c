/**
 * Names that look like another name: a character drawn like a path separator (`a／b.bin` lists
 * as a path), and a label that mixes scripts whose letters look alike (a Cyrillic `а` among
 * Latin letters: `pаypal.bin`). The script rule is the "highly restrictive" level of Unicode's
 * confusable detection (UTS #39, section 5.2), judged per dot-separated label as domain names
 * are (so `модель.bin` stays a name): a label is written in one script (Common and Inherited
 * characters such as digits, punctuation and combining accents count for any), or in Latin
 * with the scripts of Japanese, Chinese or Korean writing.
 *
 * @module
 */

// Drawn as `/` or `\` (the solidus and reverse solidus entries of Unicode's confusables list,
// symbols only: a letter such as the katakana `ノ` is left to the script rule).
const SEPARATOR_LOOKALIKES = new RegExp(
  "[\\u1735\\u2041\\u2044\\u2215\\u2571\\u27cb\\u29f8\\u2cc6\\u2f03\\u31d3\\uff0f\\u{1d23a}" +
    "\\u2216\\u2572\\u27cd\\u29f5\\u29f9\\u2f02\\u31d4\\ufe68\\uff3c]",
  "u",
);

// The scripts a label is judged by; a letter of any other script counts as "Other".
const SCRIPTS = [
  "Latin",
  "Greek",
  "Cyrillic",
  "Armenian",
  "Georgian",
  "Cherokee",
  "Hebrew",
  "Arabic",
  "Syriac",
  "Thaana",
  "Devanagari",
  "Bengali",
  "Gurmukhi",
  "Gujarati",
  "Tamil",
  "Telugu",
  "Kannada",
  "Malayalam",
  "Sinhala",
  "Thai",
  "Lao",
  "Tibetan",
  "Myanmar",
  "Khmer",
  "Ethiopic",
  "Mongolian",
  "Han",
  "Hiragana",
  "Katakana",
  "Bopomofo",
  "Hangul",
].map((name) => ({ name, pattern: new RegExp(`\\p{Script_Extensions=${name}}`, "u") }));

// A character whose script is Common or Inherited alone goes with any script.
const ANY_SCRIPT = /^[\p{Script=Common}\p{Script=Inherited}]$/u;

// UTS #39's augmentation: the writing systems a script takes part in.
const AUGMENTED: Readonly<Record<string, readonly string[]>> = {
  Han: ["Hanb", "Jpan", "Kore"],
  Hiragana: ["Jpan"],
  Katakana: ["Jpan"],
  Hangul: ["Kore"],
  Bopomofo: ["Hanb"],
};

// The mixtures the highly restrictive level allows.
const ALLOWED_MIXTURES: readonly ReadonlySet<string>[] = [
  new Set(["Latin", "Han", "Hiragana", "Katakana", "Jpan", "Hanb", "Kore"]),
  new Set(["Latin", "Han", "Bopomofo", "Hanb", "Jpan", "Kore"]),
  new Set(["Latin", "Han", "Hangul", "Kore", "Hanb", "Jpan"]),
];

/**
 * Whether `name` holds a character drawn like a path separator (`／` U+FF0F, `∕` U+2215, `⁄`
 * U+2044, `＼` U+FF3C …).
 *
 * @example
 * ```ts
 * import { hasSeparatorLookalike } from "./name_lookalikes.ts";
 * console.log(hasSeparatorLookalike("a\uff0fb.bin"), hasSeparatorLookalike("a-b.bin")); // true false
 * ```
 */
export function hasSeparatorLookalike(name: string): boolean {
  return SEPARATOR_LOOKALIKES.test(name);
}

/**
 * Whether a dot-separated label of `name` mixes scripts beyond what UTS #39's highly
 * restrictive level allows (see the module documentation).
 *
 * @example A Cyrillic letter among Latin ones, and names that are fine
 * ```ts
 * import { hasMixedScripts } from "./name_lookalikes.ts";
 * console.log(hasMixedScripts("p\u0430ypal.bin")); // true: a Cyrillic "а"
 * console.log(hasMixedScripts("модель.bin"), hasMixedScripts("モデルv2.bin")); // false false
 * ```
 */
export function hasMixedScripts(name: string): boolean {
  return name.split(".").some((label) => !restrictive(scriptSets(label)));
}

/** The augmented script set of each character of `label` that belongs to some scripts. */
function scriptSets(label: string): Set<string>[] {
  const sets: Set<string>[] = [];
  for (const char of label) {
    if (ANY_SCRIPT.test(char) && !SCRIPTS.some(({ pattern }) => pattern.test(char))) continue;
    const names = SCRIPTS.filter(({ pattern }) => pattern.test(char)).map(({ name }) => name);
    const set = new Set(names.length === 0 ? ["Other"] : names);
    for (const name of names) for (const extra of AUGMENTED[name] ?? []) set.add(extra);
    sets.push(set);
  }
  return sets;
}

/** Single script (the sets share one), or covered by one of the allowed mixtures. */
function restrictive(sets: readonly Set<string>[]): boolean {
  if (sets.length === 0) return true;
  const shared = [...sets[0]].filter((name) => sets.every((set) => set.has(name)));
  if (shared.length > 0) return true;
  return ALLOWED_MIXTURES.some((mixture) =>
    sets.every((set) => [...set].some((name) => mixture.has(name)))
  );
}
