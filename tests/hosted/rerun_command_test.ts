/**
 * The command the CLI prints after a push that ran into a part-size limit: the user's own
 * arguments with `--part-size` replaced, as one line a POSIX shell runs as typed, whatever the
 * arguments hold (spaces, quotes, a file named like a flag, terminal control characters), and
 * the words of the failure report around it.
 */
import { HttpStatusError } from "../../src/errors/kinds.ts";
import { PartTooLargeError } from "../../src/errors/sentinels.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { failureWords } from "../../src/cli/words/failure_words.ts";
import { rerunCommand } from "../../src/cli/words/part_size_words.ts";
import { shellsOf } from "../../src/cli/words/shell_word.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { hintLines, runCli } from "../cli/_cli.ts";
import { PartSizeError } from "../../src/parted/part_size_error.ts";
import { hasUnsafeText } from "../../src/registry/untrusted_text.ts";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { MiB } from "./_hosted.ts";

const REF = "reg.example:5000/team/llm:v1";

/** The words bash reads from `line` (a command line the CLI printed). */
function bashWords(line: string): Promise<string[]> {
  return shellWords("bash", line);
}

/** The words `shell` (`bash`, `dash`, `zsh`) reads from `line`. */
async function shellWords(shell: string, line: string): Promise<string[]> {
  const script = `printf '%s\\0' ${line}`;
  const out = await new Deno.Command(shell, { args: ["-c", script], stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).split("\0").slice(0, -1);
}

Deno.test("rerun: --part-size is replaced wherever and however it was given, or added", () => {
  const cases: [string[], string][] = [
    [[REF, "w.bin"], `ocipart push --part-size 256MiB ${REF} w.bin`],
    [["--part-size", "1GiB", REF, "w.bin"], `ocipart push --part-size 256MiB ${REF} w.bin`],
    [[REF, "--part-size=1G", "w.bin"], `ocipart push --part-size 256MiB ${REF} w.bin`],
    [
      ["--part-size", "1GiB", "--workers", "4", "--part-size=2GiB", REF, "w.bin"],
      `ocipart push --part-size 256MiB --workers 4 ${REF} w.bin`,
    ],
    // After `--` every word is an operand, even one spelled like the flag.
    [[REF, "--", "--part-size"], `ocipart push --part-size 256MiB ${REF} -- --part-size`],
  ];
  for (const [args, expected] of cases) assertEquals(rerunCommand(args, 256 * MiB), expected);
  assertEquals(
    rerunCommand([REF, "w.bin"], 100_000_000),
    `ocipart push --part-size 100000000 ${REF} w.bin`,
  );
  assertEquals(
    rerunCommand([REF, "w.bin"], 512 * 1024),
    `ocipart push --part-size 512KiB ${REF} w.bin`,
  );
});

Deno.test("rerun: words a shell would split, expand or act on are quoted; control characters escaped", async () => {
  const hostile = [
    "my weights.bin",
    "it's",
    "$(rm -rf ~)",
    "`id`",
    "*",
    "",
    "note=a;b|c&d>e",
    "\u001b[31mred\u001b[0m\nnext line\r",
    "é",
    "\u009b31m\u202egnp.exe\\",
    "=ls",
  ];
  const line = rerunCommand(["--annotation", ...hostile], MiB);
  assertEquals(
    line,
    "ocipart push --part-size 1MiB --annotation 'my weights.bin' 'it'\\''s' '$(rm -rf ~)' " +
      "'`id`' '*' '' 'note=a;b|c&d>e' $'\\x1b[31mred\\x1b[0m\\x0anext line\\x0d' 'é' " +
      "$'\\xc2\\x9b31m\\xe2\\x80\\xaegnp.exe\\\\' '=ls'",
  );
  // Nothing the terminal would act on (C0, C1, bidi controls) is written raw.
  assert(!hasUnsafeText(line), line);
  // bash reads the line back into exactly the words given.
  assertEquals(await bashWords(line.replace(/^ocipart push /, "")), [
    "--part-size",
    "1MiB",
    "--annotation",
    ...hostile,
  ]);
});

Deno.test("rerun: aliases keep the user's spelling and the line parses to the same push", async () => {
  const typed = [
    ["--concurrency", "3", "-du", "alice", "--password-stdin", "--format", "json", REF, "w.bin"],
    ["-d", "--part-size=1GiB", "--format=text", "--concurrency=2", REF, "--", "-w.bin"],
    ["--part-size", "1GiB", "--annotation", "a=--part-size", REF, "--", "--part-size=x"],
  ];
  for (const args of typed) {
    const line = rerunCommand(args, 256 * MiB);
    const words = await bashWords(line);
    assertEquals(words.slice(0, 4), ["ocipart", "push", "--part-size", "256MiB"]);
    for (const alias of ["--concurrency", "-du", "--format", "--format=text", "--concurrency=2"]) {
      assertEquals(words.includes(alias), args.includes(alias), `${alias}: ${line}`);
    }
    const before = parseCommandLine(["push", ...args]);
    const after = parseCommandLine(words.slice(1));
    assert(before.kind === "push" && after.kind === "push");
    assertEquals(after.partSize, 256 * MiB);
    const { args: _a, partSize: _p, ...same } = after;
    const { args: _b, partSize: _q, ...was } = before;
    assertEquals(same, was, line);
  }
});

Deno.test("words: a PartSizeError's sentence, hint and command; none without a suggestion", () => {
  const refused = new HttpStatusError("PUT blob upload", { status: 413 });
  const limit = new PartSizeError("PUT blob upload: status 413", {
    limit: "body-size",
    partSize: 512 * MiB,
    refusedBytes: 512 * MiB,
    suggestedPartSize: 256 * MiB,
  }, { cause: refused, status: 413 });
  const err = new PartTooLargeError(`part 3: ${limit.message}`, { cause: limit });
  const args = ["--plain-http", REF, "w.bin"];
  const subject = { command: "push", input: { reference: REF, file: "w.bin", args } };
  assertEquals(failureWords(err, subject), {
    sentence: "reg.example:5000 refused a part of 512MiB as too large (413 Content Too Large)",
    hint: "push again with --part-size 256MiB (a guess: the registry did not state its limit, " +
      "so this is at most half the size it refused; if it is refused too, the next report " +
      "names a smaller one); no part already uploaded at 512MiB is reused (a new part size " +
      "makes a new artifact)",
    command: `ocipart push --part-size 256MiB --plain-http ${REF} w.bin`,
  });
  assertEquals(
    failureWords(err, subject, { signal: "SIGINT" }),
    undefined,
    "no words after a stop",
  );

  const none = new PartSizeError("PUT blob upload: status 413", {
    limit: "body-size",
    partSize: 1024,
    suggestedPartSize: undefined,
  }, { cause: refused, status: 413 });
  const words = failureWords(none, subject);
  assertEquals(
    words?.sentence,
    "reg.example:5000 refused a part of 1KiB as too large (413 Content Too Large)",
  );
  assertEquals(words?.command, undefined, "no size to suggest: no command");
  assertEquals(words?.hint, undefined, "no size to suggest: no hint");

  const other = failureWords(refused, subject);
  assertEquals(other?.command, undefined, "another failure: no command");
  assert(!other?.hint?.startsWith("push again with --part-size"), other?.hint);
});

Deno.test("rerun: a word zsh would expand (=ls) is quoted; without control characters dash reads the line back", async () => {
  const words = ["=ls", "=", "a=b", "~", "it's $HOME", "-w.bin", "é.bin"];
  const line = rerunCommand(["--annotation", ...words], MiB);
  assert(line.includes(" '=ls' ") && line.includes(" '=' "), line);
  assertEquals(shellsOf(line), undefined, "every POSIX shell reads it");
  assertEquals(await shellWords("dash", line.replace(/^ocipart push /, "")), [
    "--part-size",
    "1MiB",
    "--annotation",
    ...words,
  ]);
  // zsh, whose `=word` expands to a program's path, reads the same words.
  assertEquals(await shellWords("zsh", line.replace(/^ocipart push /, "")), [
    "--part-size",
    "1MiB",
    "--annotation",
    ...words,
  ]);
  const escaped = rerunCommand([REF, "\x1b[2Jw.bin"], MiB);
  assertEquals(shellsOf(escaped), "bash, zsh or ksh");
  const escapedWords = escaped.replace(/^ocipart push /, "");
  assertEquals(await shellWords("zsh", escapedWords), await bashWords(escapedWords));
  assertEquals(shellsOf(rerunCommand([REF, "$'x'"], MiB)), undefined, "a quoted $' is no $'…'");
});

Deno.test("rerun: a printed command with $'…' says which shells read it", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  const src = `${tmp.path}/w\x1b[2J.bin`;
  await writePatternFile(src, 300 * 1024);
  registry.fault({
    method: "PUT",
    path: /\/blobs\/uploads\//,
    times: Infinity,
    respond: { status: 413 },
  });
  const ref = `${registry.host}/hosted/esc:v1`;
  const result = await runCli(
    ["push", "--plain-http", "--progress", "none", "--part-size", "256KiB", ref, src],
    { tmp: tmp.path },
  );
  assertEquals(result.code, 7, result.stderr);
  const [hint, command] = hintLines(result.stderr);
  assert(hint.endsWith(". Run (bash, zsh or ksh):"), hint);
  assert(command.includes("$'") && !hasUnsafeText(command), command);
  assertEquals((await bashWords(command.trim())).at(-1), src);
});
