/**
 * The command the CLI prints after a push that ran into a part-size limit: the user's own
 * arguments with `--part-size` replaced, as one line a POSIX shell runs as typed, whatever the
 * arguments hold (spaces, quotes, a file named like a flag, terminal control characters).
 */
import { HttpStatusError } from "../../src/errors/kinds.ts";
import { PartTooLargeError } from "../../src/errors/sentinels.ts";
import { partSizeHint, rerunCommand } from "../../src/cli/part_size_hint.ts";
import { PartSizeError } from "../../src/parted/part_size_error.ts";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { MiB } from "./_hosted.ts";

const REF = "reg.example:5000/team/llm:v1";

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
  ];
  const line = rerunCommand(["--annotation", ...hostile], MiB);
  assertEquals(
    line,
    "ocipart push --part-size 1MiB --annotation 'my weights.bin' 'it'\\''s' '$(rm -rf ~)' " +
      "'`id`' '*' '' 'note=a;b|c&d>e' $'\\x1b[31mred\\x1b[0m\\x0anext line\\x0d' 'é'",
  );
  // deno-lint-ignore no-control-regex
  assert(!/[\u0000-\u001f\u007f]/.test(line), "nothing the terminal would act on");
  // bash reads the line back into exactly the words given.
  const script = `printf '%s\\0' ${line.replace(/^ocipart push /, "")}`;
  const out = await new Deno.Command("bash", { args: ["-c", script], stdout: "piped" }).output();
  const words = new TextDecoder().decode(out.stdout).split("\0").slice(0, -1);
  assertEquals(words, ["--part-size", "1MiB", "--annotation", ...hostile]);
});

Deno.test("hint: only for a PartSizeError with a suggestion; two lines, the second the command", () => {
  const refused = new HttpStatusError("PUT blob upload", { status: 413 });
  const limit = new PartSizeError("PUT blob upload: status 413", {
    limit: "body-size",
    partSize: 512 * MiB,
    refusedBytes: 512 * MiB,
    suggestedPartSize: 256 * MiB,
  }, { cause: refused, status: 413 });
  const err = new PartTooLargeError(`part 3: ${limit.message}`, { cause: limit });
  assertEquals(
    partSizeHint(err, ["--plain-http", REF, "w.bin"]),
    "ocipart push: hint: push again with --part-size 256MiB (the registry refused the size of " +
      "a part); no part already uploaded at 512MiB is reused (a new part size makes a new " +
      `artifact). Run:\n  ocipart push --part-size 256MiB --plain-http ${REF} w.bin\n`,
  );
  const none = new PartSizeError("PUT blob upload: status 413", {
    limit: "body-size",
    partSize: 1024,
    suggestedPartSize: undefined,
  });
  assertEquals(partSizeHint(none, [REF, "w.bin"]), "", "no size to suggest: no hint");
  assertEquals(partSizeHint(refused, [REF, "w.bin"]), "", "another failure: no hint");
});
