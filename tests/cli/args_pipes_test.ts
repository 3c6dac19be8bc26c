/** The command lines of pipes and ranges: `push <ref> -`, `pull <ref> -`, `cat --range`. */
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { parseByteRange } from "../../src/cli/arguments/byte_range.ts";
import { UsageError } from "../../src/cli/arguments/usage_error.ts";

const REF = "127.0.0.1:5000/a/b:v1";

Deno.test("push -: --name and --temp-dir; --password-stdin cannot share standard input", () => {
  const command = parseCommandLine(["push", "--name", "d.tar", "--temp-dir", "/t", REF, "-"]);
  strictEqual(command.kind, "push");
  if (command.kind !== "push") return;
  strictEqual(command.file, "-");
  strictEqual(command.name, "d.tar");
  strictEqual(command.tempDir, "/t");
  throws(() => parseCommandLine(["push", "--name", "x", REF, "file"]), UsageError);
  throws(() => parseCommandLine(["push", "--temp-dir", "/t", REF, "file"]), UsageError);
  throws(
    () => parseCommandLine(["push", "-u", "me", "--password-stdin", REF, "-"]),
    /--password-stdin cannot go with -/,
  );
});

Deno.test("pull -: the flags of a pull into a file are refused", () => {
  for (const flag of ["--overwrite", "--verify-file-digest", "--wait"]) {
    throws(() => parseCommandLine(["pull", flag, REF, "-"]), UsageError, flag);
  }
  throws(() => parseCommandLine(["pull", "--temp-dir", "/t", REF, "out.bin"]), UsageError);
});

Deno.test("cat --range: START-END counts both ends, START-, START+LENGTH", () => {
  deepStrictEqual(parseByteRange("0-7"), { offset: 0, length: 8 });
  deepStrictEqual(parseByteRange("5-5"), { offset: 5, length: 1 });
  deepStrictEqual(parseByteRange("9-"), { offset: 9, length: undefined });
  deepStrictEqual(parseByteRange("8+0"), { offset: 8, length: 0 });
  for (const bad of ["", "-5", "5", "7-3", "a-b", "1+", "1-2-3"]) {
    throws(() => parseByteRange(bad), Error, bad);
  }
  throws(() => parseCommandLine(["cat", "--range", "7-3", REF]), /END comes before START/);
});
