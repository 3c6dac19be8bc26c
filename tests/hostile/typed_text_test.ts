/**
 * Text the user typed that the CLI repeats (a path matched by a shell glob can carry terminal
 * escapes; an annotation key pasted from elsewhere too) is escaped like registry text, on every
 * line: the failure report, the library's error line, a usage error.
 */
import { assert, assertEquals, assertStringIncludes } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "../cli/_cli.ts";
import { hasUnsafeText } from "../../src/registry/untrusted_text.ts";

function noRawControls(stderr: string): void {
  for (const line of stderr.split("\n")) assert(!hasUnsafeText(line), JSON.stringify(line));
}

Deno.test("typed text: a missing file whose name holds escapes is named escaped on every line", async () => {
  await using tmp = await tempDir();
  const path = `${tmp.path}/w\x1b]0;pwned\x07\x1b[2J.bin`;
  const result = await runCli(["push", "--plain-http", "127.0.0.1:9/a/b:v1", path], {
    tmp: tmp.path,
  });
  assertEquals(result.code, 1, result.stderr);
  noRawControls(result.stderr);
  const errorLine = result.stderr.split("\n").find((line) => line.includes("cannot be opened"));
  assertStringIncludes(errorLine ?? "", `(${tmp.path}/w\\x1b]0;pwned\\x07\\x1b[2J.bin)`);
});

Deno.test("typed text: a repeated or reserved --annotation key is repeated escaped", async () => {
  await using tmp = await tempDir();
  const key = "k\x1b[2J\u202e";
  const twice = await runCli(
    ["push", "--annotation", `${key}=1`, "--annotation", `${key}=2`, "127.0.0.1:9/a/b:v1", "x"],
    { tmp: tmp.path },
  );
  assertEquals(twice.code, 2, twice.stderr);
  noRawControls(twice.stderr);
  assertStringIncludes(twice.stderr, "--annotation: the key k\\x1b[2J\\u202e is given twice");
  const reserved = await runCli(
    ["push", "--annotation", "org.opencontainers.image.title=\x1b[2J", "127.0.0.1:9/a/b:v1", "x"],
    { tmp: tmp.path },
  );
  assertEquals(reserved.code, 2, reserved.stderr);
  assertStringIncludes(reserved.stderr, "the key org.opencontainers.image.title is reserved");
});
