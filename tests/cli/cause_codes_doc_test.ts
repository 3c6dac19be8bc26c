/**
 * Every cause code the CLI can print has a row in the cause table of docs/cli.md: the codes are
 * read from the code itself (the transport's `FailureReason` type, the words the CLI has for
 * each, the local-file codes it gives advice for), so a code added there without a row fails.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { PROJECT_ROOT } from "./_cli.ts";

async function source(path: string): Promise<string> {
  return await Deno.readTextFile(`${PROJECT_ROOT}${path}`);
}

/** The members of the `FailureReason` union in `src/transport/failure.ts`. */
function failureReasons(text: string): string[] {
  const union = /export type FailureReason =([^;]+);/.exec(text)?.[1] ?? "";
  return [...union.matchAll(/"([A-Z_]+)"/g)].map((m) => m[1]);
}

/** The codes `src/cli/words/cause_words.ts` has words for (the keys of its table). */
function wordedReasons(text: string): string[] {
  const table = /const WORDS[^{]*\{\n([^]*?)\n\};/.exec(text)?.[1] ?? "";
  return [...table.matchAll(/^ {2}([A-Z_]+): \(/gm)].map((m) => m[1]);
}

/** The errno codes `src/cli/words/local_file_words.ts` gives advice for. */
function advisedErrnos(text: string): string[] {
  return [...text.matchAll(/case "(E[A-Z]+)":/g)].map((m) => m[1]);
}

/** The codes in the first column of the table headed `cause code` in `docs/cli.md`. */
function documentedCodes(markdown: string): Set<string> {
  const lines = markdown.split("\n");
  const header = lines.findIndex((line) => /^\| cause code\s*\|/.test(line));
  assert(header >= 0, "docs/cli.md has a table headed `cause code`");
  const codes = new Set<string>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break;
    const first = line.split("|")[1];
    for (const m of first.matchAll(/`([A-Z_]+)`/g)) codes.add(m[1]);
  }
  return codes;
}

Deno.test("every cause code the CLI can print has a row in docs/cli.md's cause table", async () => {
  const reasons = failureReasons(await source("src/transport/failure.ts"));
  const worded = wordedReasons(await source("src/cli/words/cause_words.ts"));
  const errnos = advisedErrnos(await source("src/cli/words/local_file_words.ts"));
  // The parsing found what it should: the transport's reasons, each with its words.
  assert(reasons.includes("ECONNREFUSED") && reasons.includes("PERMISSION"), reasons.join());
  assert(worded.includes("TLS_SERVER"), worded.join());
  assert(errnos.includes("ENOSPC"), errnos.join());
  const documented = documentedCodes(await Deno.readTextFile(`${PROJECT_ROOT}docs/cli.md`));
  const missing = [...new Set([...reasons, ...worded, ...errnos])]
    .filter((code) => !documented.has(code))
    .sort();
  assertEquals(missing, [], `codes without a row in docs/cli.md's cause table`);
});
