/** The command lines of pipes and ranges: `push <ref> -`, `pull <ref> -`, `cat --range`. */
import { assertEquals, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { parseByteRange } from "../../src/cli/arguments/byte_range.ts";
import { UsageError } from "../../src/cli/arguments/usage_error.ts";

const REF = "127.0.0.1:5000/a/b:v1";

Deno.test("push -: --name and --temp-dir; --password-stdin cannot share standard input", () => {
  const command = parseCommandLine(["push", "--name", "d.tar", "--temp-dir", "/t", REF, "-"]);
  assertStrictEquals(command.kind, "push");
  if (command.kind !== "push") return;
  assertStrictEquals(command.file, "-");
  assertStrictEquals(command.name, "d.tar");
  assertStrictEquals(command.tempDir, "/t");
  assertThrows(() => parseCommandLine(["push", "--name", "x", REF, "file"]), UsageError);
  assertThrows(() => parseCommandLine(["push", "--temp-dir", "/t", REF, "file"]), UsageError);
  assertThrows(
    () => parseCommandLine(["push", "-u", "me", "--password-stdin", REF, "-"]),
    /--password-stdin cannot go with -/,
  );
});

Deno.test("pull -: the flags of a pull into a file are refused", () => {
  for (const flag of ["--overwrite", "--verify-file-digest", "--wait"]) {
    assertThrows(() => parseCommandLine(["pull", flag, REF, "-"]), UsageError);
  }
  assertThrows(() => parseCommandLine(["pull", "--temp-dir", "/t", REF, "out.bin"]), UsageError);
});

Deno.test("cat --range: START-END counts both ends, START-, START+LENGTH", () => {
  assertEquals(parseByteRange("0-7"), { offset: 0, length: 8 });
  assertEquals(parseByteRange("5-5"), { offset: 5, length: 1 });
  assertEquals(parseByteRange("9-"), { offset: 9, length: undefined });
  assertEquals(parseByteRange("8+0"), { offset: 8, length: 0 });
  for (const bad of ["", "-5", "5", "7-3", "a-b", "1+", "1-2-3"]) {
    assertThrows(() => parseByteRange(bad), Error);
  }
  assertThrows(() => parseCommandLine(["cat", "--range", "7-3", REF]), /END comes before START/);
});

Deno.test("cat --temp-dir: where parts wait that do not fit in memory; not with --cache-dir", () => {
  const command = parseCommandLine(["cat", "--temp-dir", "/t", REF]);
  assertStrictEquals(command.kind === "cat" ? command.tempDir : "not cat", "/t");
  const plain = parseCommandLine(["cat", REF]);
  assertStrictEquals(plain.kind === "cat" && "tempDir" in plain, false);
  assertThrows(
    () => parseCommandLine(["cat", "--temp-dir", "/t", "--cache-dir", "/c", REF]),
    UsageError,
    "parts kept in the cache directory wait nowhere else",
  );
});

Deno.test("push - --name: a name that could not be a title is refused, not dropped", () => {
  for (const bad of ["x\ny", ".", ".hidden", "~x", "a/.b"]) {
    assertThrows(
      () => parseCommandLine(["push", "--name", bad, REF, "-"]),
      UsageError,
      "--name: not a plain file name",
    );
  }
  for (const [typed, kept] of [["d.tar", "d.tar"], ["dir/d.tar", "dir/d.tar"]]) {
    const command = parseCommandLine(["push", "--name", typed, REF, "-"]);
    assertStrictEquals(command.kind === "push" ? command.name : undefined, kept);
  }
});
