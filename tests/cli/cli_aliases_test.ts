/**
 * The spellings of other tools that the CLI takes as its own flags (`-u` for `--username`, `-d`
 * for `--debug`, `--concurrency` for `--workers`, `--format json` for `--json`), run end to end
 * against Distribution with htpasswd: each does what the flag it stands for does.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { type CliResult, runCli } from "./_cli.ts";

const KiB = 1024;
const PASSWORD = "correct horse";
/** One `--debug` line: method, site, status, byte counts, duration; nothing else. */
const DEBUG_LINE =
  /^debug: [A-Z]+ (registry|storage|mirror) (\d{3}|no-answer) sent=\d+ received=\d+ \d+ms( failed)?$/;

/** The progress records (`--progress json`) and the other lines of standard error. */
function stderrOf(result: CliResult): { records: Array<Record<string, unknown>>; text: string[] } {
  const lines = result.stderr.trimEnd().split("\n").filter((line) => line !== "");
  return {
    records: lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)),
    text: lines.filter((l) => !l.startsWith("{")),
  };
}

registryTest(
  "-u, -d, --concurrency and --format json work end to end, as the flags they stand for",
  {
    needs: ["htpasswd"],
  },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: PASSWORD } });
    await using tmp = await tempDir();
    const file = `${tmp.path}/w.bin`;
    await writePatternFile(file, 8 * 64 * KiB + 3);
    const ref = `${registry.host}/aliases/w:v1`;
    const options = { tmp: tmp.path, stdin: `${PASSWORD}\n` };
    const aliases = ["-u", "alice", "--password-stdin", "-d", "--concurrency", "1"];

    // push: the credential of -u is used, each exchange logged, one part at a time, JSON out.
    const push = await runCli(
      [
        "push",
        "--plain-http",
        ...aliases,
        "--format",
        "json",
        "--progress",
        "json",
        "--part-size",
        "64KiB",
        ref,
        file,
      ],
      options,
    );
    assertStrictEquals(push.code, 0, push.stderr);
    const descriptor = JSON.parse(push.stdout) as { digest: string; mediaType: string };
    assert(/^sha256:[0-9a-f]{64}$/.test(descriptor.digest), push.stdout);
    assertStrictEquals(descriptor.mediaType, "application/vnd.oci.image.manifest.v1+json");
    const pushed = stderrOf(push);
    assert(pushed.text.length > 9, "a debug line per exchange (9 parts, the config, the manifest)");
    for (const line of pushed.text) assert(DEBUG_LINE.test(line), line);
    assert(
      pushed.text.some((l) => l.startsWith("debug: PUT registry 201 ")),
      pushed.text.join("\n"),
    );
    assert(!push.stderr.includes(PASSWORD), "the password is never written");
    assert(pushed.records.every((r) => (r.partsActive as number) <= 1), "one part at a time");
    assertStrictEquals(pushed.records.at(-1)?.partsTotal, 9);

    // pull: the same, its result as JSON.
    const out = `${tmp.path}/out.bin`;
    const pull = await runCli(
      ["pull", "--plain-http", ...aliases, "--format", "json", "--progress", "json", ref, out],
      options,
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    const result = JSON.parse(pull.stdout) as { path: string; size: number; partsFetched: number };
    assertEquals([result.path, result.size, result.partsFetched], [out, 8 * 64 * KiB + 3, 9]);
    assertStrictEquals(await Deno.readTextFile(out), await Deno.readTextFile(file));
    const pulled = stderrOf(pull);
    assert(pulled.text.some((l) => /^debug: GET registry 200 /.test(l)), pulled.text.join("\n"));
    for (const line of pulled.text) assert(DEBUG_LINE.test(line), line);
    assert(pulled.records.every((r) => (r.partsActive as number) <= 1), "one part at a time");

    // inspect and verify take them too.
    const inspect = await runCli(
      ["inspect", "--plain-http", "-u", "alice", "--password-stdin", "--format", "json", ref],
      options,
    );
    assertStrictEquals(inspect.code, 0, inspect.stderr);
    assertStrictEquals((JSON.parse(inspect.stdout) as { parts: unknown[] }).parts.length, 9);
    const verify = await runCli(
      ["verify", "--plain-http", ...aliases, "--format", "json", "--progress", "none", ref, file],
      options,
    );
    assertStrictEquals(verify.code, 0, verify.stderr);
    assertStrictEquals((JSON.parse(verify.stdout) as { identical: boolean }).identical, true);

    // Without -u, the same pull is refused: the credential really came from it.
    const anonymous = await runCli(
      ["pull", "--plain-http", "--progress", "none", ref, `${tmp.path}/again.bin`],
      { tmp: tmp.path },
    );
    assertStrictEquals(anonymous.code, 6, anonymous.stderr);
  },
);
