/**
 * The CLI's usage contract, run as a child process: exit 2 with the offending command's usage
 * block on standard error and nothing on standard output; help and version on standard output.
 */
import { ok, strictEqual } from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "./_cli.ts";

const REF = "127.0.0.1:9/models/llm:v1";

async function expectUsage(args: string[], block: "push" | "pull" | "general", why: RegExp) {
  await using tmp = await tempDir();
  const result = await runCli(args, { tmp: tmp.path });
  strictEqual(result.code, 2, `${args.join(" ")}\n${result.stderr}`);
  strictEqual(result.stdout, "", "nothing on stdout");
  const [first] = result.stderr.split("\n");
  ok(first.startsWith("ocipart: "), first);
  ok(why.test(first), `${first} !~ ${why}`);
  const heading = block === "general"
    ? "Usage: ocipart <command>"
    : `Usage: ocipart ${block} [flags]`;
  ok(result.stderr.includes(heading), result.stderr);
  ok(result.stderr.includes("Exit codes:"), "the usage block lists the exit codes");
}

Deno.test("unknown flag exits 2 with the command's usage", async () => {
  await expectUsage(["pull", "--frobnicate", REF, "out"], "pull", /--frobnicate/);
  await expectUsage(["push", "--frobnicate", REF, "in"], "push", /--frobnicate/);
});

Deno.test("unparseable values exit 2", async () => {
  await expectUsage(["push", "--part-size", "lots", REF, "in"], "push", /--part-size/);
  await expectUsage(["pull", "--workers", "0", REF, "out"], "pull", /--workers/);
  await expectUsage(["pull", "--progress", "rainbow", REF, "out"], "pull", /--progress/);
});

Deno.test("a negative duration exits 2", async () => {
  await expectUsage(["pull", "--timeout=-10s", REF, "out"], "pull", /negative/);
});

Deno.test("a wrong operand count exits 2", async () => {
  await expectUsage(["pull", REF], "pull", /expected 2 operands/);
  await expectUsage(["push", REF, "a", "b"], "push", /expected 2 operands/);
  await expectUsage([], "general", /missing command/);
  await expectUsage(["frobnicate", REF, "x"], "general", /unknown command/);
});

Deno.test("a destination that is a directory exits 2 before any request", async () => {
  await using tmp = await tempDir();
  // Port 9 (discard) is never contacted: the check happens before the library runs.
  const result = await runCli(["pull", "--plain-http", REF, tmp.path], { tmp: tmp.path });
  strictEqual(result.code, 2, result.stderr);
  ok(result.stderr.startsWith("ocipart: <dest> is a directory"), result.stderr);
  ok(result.stderr.includes("Usage: ocipart pull [flags]"));
});

Deno.test("help goes to stdout and exits 0", async () => {
  await using tmp = await tempDir();
  for (
    const [args, heading] of [
      [["--help"], "Usage: ocipart <command>"],
      [["push", "-h"], "Usage: ocipart push [flags] <ref> <file>"],
      [["help", "pull"], "Usage: ocipart pull [flags] <ref> <dest>"],
    ] as const
  ) {
    const result = await runCli([...args], { tmp: tmp.path });
    strictEqual(result.code, 0, result.stderr);
    strictEqual(result.stderr, "");
    ok(result.stdout.startsWith(heading), result.stdout);
  }
});

Deno.test("--version prints the version from deno.json", async () => {
  await using tmp = await tempDir();
  const result = await runCli(["--version"], { tmp: tmp.path });
  strictEqual(result.code, 0);
  strictEqual(result.stdout, `ocipart ${denoJson.version}\n`);
});
