/**
 * The single-file builds of `deno task bundle`: the bundled CLI pushes and pulls against the
 * real registry under narrow permissions, and the bundled library round-trips a file from
 * Node.
 */
import { assertEquals, assertMatch } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { findBinary, registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { cliEnv, permissionFlags, PROJECT_ROOT } from "../cli/_cli.ts";

const MiB = 1024 * 1024;
const CLI_BUNDLE = `${PROJECT_ROOT}dist/ocipart.js`;
const LIBRARY_BUNDLE = `${PROJECT_ROOT}dist/ocipart.mjs`;

let bundling: Promise<void> | undefined;

/** Runs `deno task bundle` once for this file's tests. */
function bundle(): Promise<void> {
  bundling ??= (async () => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", "bundle"],
      cwd: PROJECT_ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
  })();
  return bundling;
}

async function run(
  program: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(program, {
    args,
    clearEnv: true,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

registryTest("bundle: the single-file CLI pushes and pulls under narrow permissions", async () => {
  await bundle();
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/data.bin`;
  const digest = await writePatternFile(source, 2 * MiB + 3, 41);
  const options = { tmp: tmp.path };
  const cli = (args: string[]) =>
    run(
      Deno.execPath(),
      ["run", ...permissionFlags(options), CLI_BUNDLE, ...args],
      cliEnv(options),
    );

  const version = await cli(["--version"]);
  assertEquals(version.code, 0, version.stderr);
  assertMatch(version.stdout, /^ocipart \d+\.\d+\.\d+\n$/);
  const ref = `${registry.host}/bundled/data:v1`;
  const push = await cli(["push", "--plain-http", "--part-size", "1MiB", ref, source]);
  assertEquals(push.code, 0, push.stderr);
  assertMatch(push.stdout, /^sha256:[0-9a-f]{64}\n$/);
  const pull = await cli(["pull", "--plain-http", ref, `${tmp.path}/out.bin`]);
  assertEquals(pull.code, 0, pull.stderr);
  assertEquals(await sha256File(`${tmp.path}/out.bin`), digest);
});

registryTest(
  "bundle: Node imports the bundled library and round-trips a file (into a file and a stream) and a blob (whole and in parallel ranges)",
  { needs: ["node"] },
  async () => {
    const node = findBinary("node")!;
    await bundle();
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const script = `${PROJECT_ROOT}tests/packaging/node_round_trip.mjs`;
    const result = await run(node, [script, LIBRARY_BUNDLE, registry.host, tmp.path], {
      PATH: Deno.env.get("PATH") ?? "",
    });
    assertEquals(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout);
    assertMatch(report.manifest, /^sha256:[0-9a-f]{64}$/);
    assertEquals([report.file, report.stream, report.blob, report.ranges], [
      true,
      true,
      true,
      true,
    ]);
  },
);
