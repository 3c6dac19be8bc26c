/**
 * The CLI's usage contract, run as a child process: exit 2 with the error and one line pointing
 * at the offending command's help on standard error (never the usage block itself), nothing on
 * standard output; help and version on standard output.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import denoJson from "../../deno.json" with { type: "json" };
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "./_cli.ts";

const REF = "127.0.0.1:9/models/llm:v1";

async function expectUsage(args: string[], block: "push" | "pull" | "general", why: RegExp) {
  await using tmp = await tempDir();
  const result = await runCli(args, { tmp: tmp.path });
  assertStrictEquals(result.code, 2, `${args.join(" ")}\n${result.stderr}`);
  assertStrictEquals(result.stdout, "", "nothing on stdout");
  const lines = result.stderr.trimEnd().split("\n");
  const [first] = lines;
  assert(first.startsWith("ocipart: "), first);
  assert(why.test(first), `${first} !~ ${why}`);
  // The error stays on screen: one line pointing at the help, not 30 lines of usage.
  const help = block === "general" ? ["--help"] : [block, "--help"];
  assertEquals(lines.slice(1), [
    `ocipart: see 'ocipart ${help.join(" ")}' for the ${
      block === "general" ? "commands" : `flags of ${block}`
    }`,
  ], result.stderr);
  assert(!result.stderr.includes("Usage:"), result.stderr);
  // The usage block, with the exit codes, is where the pointer says.
  const heading = block === "general"
    ? "Usage: ocipart <command>"
    : `Usage: ocipart ${block} [flags]`;
  const usage = await runCli(help, { tmp: tmp.path });
  assertStrictEquals(usage.code, 0, usage.stderr);
  assert(usage.stdout.startsWith(heading), usage.stdout);
  assert(usage.stdout.includes("Exit codes:"), "the usage block lists the exit codes");
}

Deno.test("unknown flag exits 2 pointing at the command's usage", async () => {
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

Deno.test("help goes to stdout and exits 0", async () => {
  await using tmp = await tempDir();
  for (
    const [args, heading] of [
      [["--help"], "Usage: ocipart <command>"],
      [["push", "-h"], "Usage: ocipart push [flags] <ref> <file>"],
      [["help", "pull"], "Usage: ocipart pull [flags] <ref> <dest>"],
      // The blob commands together, not one of them: each names its own help.
      [["blob", "--help"], "Usage: ocipart blob <subcommand> [flags] <operands>"],
      [["help", "blob"], "Usage: ocipart blob <subcommand> [flags] <operands>"],
      [["blob", "mount", "-h"], "Usage: ocipart blob mount [flags] <from-repo@digest> <to-repo>"],
    ] as const
  ) {
    const result = await runCli([...args], { tmp: tmp.path });
    assertStrictEquals(result.code, 0, result.stderr);
    assertStrictEquals(result.stderr, "");
    assert(result.stdout.startsWith(heading), result.stdout);
  }
});

Deno.test("--version prints the version from deno.json", async () => {
  await using tmp = await tempDir();
  const result = await runCli(["--version"], { tmp: tmp.path });
  assertStrictEquals(result.code, 0);
  assertStrictEquals(result.stdout, `ocipart ${denoJson.version}\n`);
});

Deno.test("a typo of a flag or a command: exit 2, the near flag or command named", async () => {
  await expectUsage(
    ["pull", "--plain-htpp", REF, "out"],
    "pull",
    /^ocipart: unknown flag --plain-htpp \(did you mean --plain-http\?\)$/,
  );
  await expectUsage(
    ["pul", REF, "out"],
    "general",
    /^ocipart: unknown command "pul" \(did you mean pull\?\)$/,
  );
  await expectUsage(["push", "--part-szie", "1M", REF, "in"], "push", /did you mean --part-size\?/);
});

Deno.test("flags of oras, skopeo and curl: exit 2 with what ocipart takes instead", async () => {
  await expectUsage(
    ["pull", "-o", "out.bin", REF],
    "pull",
    /the destination is the second operand/,
  );
  await expectUsage(
    ["pull", "-k", REF, "out"],
    "pull",
    /^ocipart: -k is not a flag of ocipart: use --insecure to skip certificate verification, or give --ca-file PEM to trust the registry's CA instead$/,
  );
  await expectUsage(["pull", "--tls-verify=false", REF, "out"], "pull", /use --insecure/);
  await expectUsage(["push", "--authfile", "a.json", REF, "in"], "push", /--registry-config FILE/);
  await expectUsage(["push", "-p", "pw-typed", REF, "in"], "push", /--password-stdin/);
});

Deno.test("a flag typed before the command: the command typed is named", async () => {
  await expectUsage(
    ["--plain-http", "pull", REF, "out"],
    "general",
    /^ocipart: unknown global flag --plain-http: flags go after the command, as in ocipart pull --plain-http …$/,
  );
});

Deno.test("--help lists the aliases next to the flags they stand for", async () => {
  await using tmp = await tempDir();
  for (const command of ["push", "pull", "inspect", "verify", "copy", "login"]) {
    const help = await runCli([command, "--help"], { tmp: tmp.path });
    assertStrictEquals(help.code, 0, help.stderr);
    const has = (pattern: RegExp) => assert(pattern.test(help.stdout), `${command}: ${pattern}`);
    has(/^ {2}-d, --debug {12}/m);
    has(/^ {2}--format json\|text {5}--format json is --json/m);
    if (command !== "copy") has(/^ {2}-u, --username USER {4}/m);
    if (["push", "pull", "verify", "copy"].includes(command)) {
      has(/^ {2}--concurrency N {8}the same as --workers N$/m);
    }
  }
});
