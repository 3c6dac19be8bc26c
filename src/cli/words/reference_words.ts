/**
 * The words for a reference the library refused: which one of those typed, what is wrong with
 * it, and the grammar with an example made from what was typed.
 *
 * @module
 */
import { InvalidReferenceError } from "../../errors/mod.ts";
import { parseReference, REFERENCE_RULES, terminalText } from "../../parted/mod.ts";
import type { Words } from "./cause_words.ts";
import type { TypedInput } from "./failure_subject.ts";

const GRAMMAR = "a reference is <registry>/<repository>:<tag> or " +
  "<registry>/<repository>@sha256:<digest>";

/** The first typed reference that does not parse, with the rule it broke. */
function refused(input: TypedInput): { text: string; rule: string } | undefined {
  for (const text of [input.reference, input.source, input.target]) {
    if (text === undefined) continue;
    try {
      parseReference(text);
    } catch (err) {
      if (err instanceof InvalidReferenceError) return { text, rule: err.rule };
    }
  }
  return undefined;
}

function withoutScheme(text: string, plainHttp: boolean): string {
  const bare = text.replace(/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//, "");
  const plain = /^http:/i.test(text) && !plainHttp
    ? ", with --plain-http for a registry that speaks plain HTTP"
    : "";
  return `write ${terminalText(bare)}${plain}`;
}

/**
 * What to say about a refused reference. `err` is the library's error; the typed references
 * tell which one it was about.
 *
 * @example A registry typed without its repository
 * ```ts
 * import { referenceWords } from "./reference_words.ts";
 * import { InvalidReferenceError } from "../../errors/kinds.ts";
 * const words = referenceWords({ reference: "127.0.0.1:5400" }, new InvalidReferenceError("x"));
 * console.log(words.sentence); // '"127.0.0.1:5400" names a registry but no repository'
 * ```
 */
export function referenceWords(input: TypedInput, err: InvalidReferenceError): Words {
  const found = refused(input);
  if (found === undefined) return { sentence: `the references do not fit together: ${err.rule}` };
  const shown = `"${terminalText(found.text)}"`;
  const example = (text: string) => `${GRAMMAR}, e.g. ${terminalText(text)}`;
  switch (found.rule) {
    case REFERENCE_RULES.scheme:
      return {
        sentence: `${shown} is not a reference: a reference has no scheme`,
        hint: withoutScheme(found.text, input.plainHttp === true),
      };
    case REFERENCE_RULES.missingRepository:
      return {
        sentence: `${shown} names a registry but no repository`,
        hint: example(`${found.text.replace(/\/$/, "")}/models/weights:v1`),
      };
    case REFERENCE_RULES.missingRegistry:
      return {
        sentence: `${shown} names no registry (there is no default registry)`,
        hint: example(`localhost:5000/${found.text.replace(/^\/+/, "")}`),
      };
    case REFERENCE_RULES.missingTag:
      return { sentence: `${shown} names no tag or digest`, hint: example(`${found.text}:v1`) };
    case REFERENCE_RULES.lowercase:
      return {
        sentence: `${shown} has capital letters in its repository`,
        hint: "repositories are lowercase (a tag may have capitals)",
      };
    default:
      return {
        sentence: `${shown} is not a valid reference: ${found.rule}`,
        hint: example("ghcr.io/acme/weights:v1"),
      };
  }
}
