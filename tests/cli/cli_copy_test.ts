/**
 * `ocipart copy` end to end: a child process against two real registries, credentials of the
 * target from the docker configuration, exit codes of the contract.
 */
import { assert, assertEquals, assertMatch } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, runCli } from "./_cli.ts";

const MiB = 1024 * 1024;

registryTest(
  "copy: across registries prints the source digest, --json counts a second copy as present, pull reproduces",
  { needs: ["htpasswd"] },
  async () => {
    await using from = await startRegistry();
    await using to = await startRegistry({ htpasswd: { carol: "pw-copy-3" } });
    await using tmp = await tempDir();
    const source = `${tmp.path}/data.bin`;
    const fileDigest = await writePatternFile(source, 3 * MiB + 17, 21);
    await Deno.mkdir(`${tmp.path}/docker`);
    await Deno.writeTextFile(
      `${tmp.path}/docker/config.json`,
      JSON.stringify({ auths: { [to.host]: { auth: btoa("carol:pw-copy-3") } } }),
    );
    const options = { tmp: tmp.path, env: { DOCKER_CONFIG: `${tmp.path}/docker` } };
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "1MiB", `${from.host}/src/data:v1`, source],
      options,
    );
    assertEquals(push.code, 0, push.stderr);

    const copy = await runCli(
      ["copy", "--plain-http", `${from.host}/src/data:v1`, `${to.host}/dst/data:v1`],
      options,
    );
    assertEquals(copy.code, 0, copy.stderr);
    assertEquals(copy.stdout, push.stdout, "the manifest digest is kept");

    const again = await runCli(
      ["copy", "--plain-http", "--json", `${from.host}/src/data:v1`, `${to.host}/dst/data:v2`],
      options,
    );
    assertEquals(again.code, 0, again.stderr);
    const result = JSON.parse(again.stdout);
    assertEquals(result.descriptor.digest, push.stdout.trim());
    assertEquals([result.copied, result.mounted, result.skipped], [0, 0, 4]);

    const out = `${tmp.path}/out.bin`;
    const pull = await runCli(["pull", "--plain-http", `${to.host}/dst/data:v2`, out], options);
    assertEquals(pull.code, 0, pull.stderr);
    assertEquals(await sha256File(out), fileDigest);
  },
);

registryTest("copy: usage, help, a missing source (3) and no credential (6)", {
  needs: ["htpasswd"],
}, async () => {
  await using from = await startRegistry();
  await using to = await startRegistry({ htpasswd: { carol: "pw-copy-3" } });
  await using tmp = await tempDir();
  const options = { tmp: tmp.path };
  const help = await runCli(["copy", "--help"], options);
  assertEquals(help.code, 0);
  assertMatch(help.stdout, /^Usage: ocipart copy \[flags\] <src-ref> <dst-ref>/);

  const usage = await runCli(["copy", "--plain-http", `${from.host}/a/b:v1`], options);
  assertEquals(usage.code, 2);
  assertMatch(usage.stderr, /expected 2 operands/);

  const missing = await runCli(
    ["copy", "--plain-http", `${from.host}/none/here:v1`, `${to.host}/x/y:v1`],
    options,
  );
  assertEquals(missing.code, 3, missing.stderr);
  assertEquals(missing.stdout, "");

  const source = `${tmp.path}/d.bin`;
  await writePatternFile(source, 1000, 22);
  const push = await runCli(["push", "--plain-http", `${from.host}/a/b:v1`, source], options);
  assertEquals(push.code, 0, push.stderr);
  const refused = await runCli(
    ["copy", "--plain-http", `${from.host}/a/b:v1`, `${to.host}/x/y:v1`],
    options,
  );
  assertEquals(refused.code, 6, refused.stderr);
  // The refusing registry is named only in the CLI's own sentence about what was typed; the
  // library's line carries no host.
  assert(refused.stderr.startsWith(`ocipart copy: ${to.host} needs credentials`), refused.stderr);
  assert(!failureLines(refused.stderr)[0].includes(to.host), "no host in the library's line");
});

registryTest(
  "--limit-rate: a capped push, pull and copy each take at least size / cap",
  async () => {
    await using from = await startRegistry();
    await using to = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/data.bin`;
    const size = 2 * MiB;
    const fileDigest = await writePatternFile(source, size, 23);
    const options = { tmp: tmp.path };
    // The cap less its burst, less 20%; Deno's own start-up is not counted against it.
    const floorMs = ((size - 0.1 * MiB) / MiB) * 1000 * 0.8;
    const timed = async (args: string[]) => {
      const started = performance.now();
      const result = await runCli(args, options);
      assertEquals(result.code, 0, result.stderr);
      const ms = performance.now() - started;
      assert(ms >= floorMs, `${args[0]} took ${ms} ms`);
    };
    const ref = `${from.host}/capped/data:v1`;
    const cap = ["--plain-http", "--limit-rate", "1MiB/s", "--workers", "8"];
    await timed(["push", ...cap, "--part-size", "256KiB", ref, source]);
    await timed(["pull", ...cap, ref, `${tmp.path}/out.bin`]);
    assertEquals(await sha256File(`${tmp.path}/out.bin`), fileDigest);
    await timed(["copy", ...cap, ref, `${to.host}/capped/data:v1`]);
  },
);
