/**
 * `--insecure` through the CLI against the real registry serving HTTPS with a certificate no
 * root trusts: one warning line, then every command works; without it the same commands fail.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, runCli } from "./_cli.ts";

const KiB = 1024;
const WARNING =
  /^ocipart (push|pull|inspect|verify): warning: --insecure: the registry's certificate is not verified$/m;

registryTest("--insecure: push, inspect, verify and pull over unverified TLS, with a warning", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 300 * KiB, 5);
  const ref = `${registry.host}/insecure/llm:v1`;

  const refused = await runCli(["push", ref, source], { tmp: tmp.path });
  assertStrictEquals(refused.code, 1, refused.stderr);
  assert(failureLines(refused.stderr)[1].endsWith("no sentinel matched (exit 1)"));
  assert(!WARNING.test(refused.stderr), "no warning without the flag");

  const runs = [
    ["push", "--insecure", "--part-size", "128KiB", ref, source],
    ["inspect", "--insecure", ref],
    ["verify", "--insecure", ref, source],
    ["pull", "--insecure", "--progress", "none", ref, `${tmp.path}/out.bin`],
  ];
  for (const args of runs) {
    const result = await runCli(args, { tmp: tmp.path });
    assertStrictEquals(result.code, 0, `${args[0]}: ${result.stderr}`);
    const warnings = result.stderr.split("\n").filter((line) => WARNING.test(line));
    assertStrictEquals(warnings.length, 1, result.stderr);
  }
  const pulled = await Deno.readFile(`${tmp.path}/out.bin`);
  assert(pulled.length === 300 * KiB);
});
