/**
 * `--insecure` through the CLI against the real registry serving HTTPS with a certificate no
 * root trusts: one warning line, then every command works; without it the same commands fail.
 * And Ctrl-C during a pull on the paths only `node:tls` takes (pinned, `--insecure`).
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { makeSelfSigned } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, runCli, spawnCli, stopOnceMoving } from "./_cli.ts";

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

// Ctrl-C on the paths only node:tls can take (a pinned certificate, --insecure): the pull is
// held slow by --limit-rate, the command exits within the bound the plain-HTTP test uses, and a
// rerun completes from the partial file.
const MiB = 1024 * KiB;
// The bound a user relies on is 1 s; the rest is slack for a loaded 2-core machine and the
// process's own exit, as in the plain-HTTP test.
const STOP_BOUND_MS = 4_000;

for (const mode of ["pinned", "insecure"] as const) {
  const over = mode === "pinned" ? "a pinned certificate" : "--insecure";
  registryTest(`Ctrl-C during a pull over ${over}: an exit within the bound, a resumable partial`, {
    needs: ["openssl"],
  }, async () => {
    await using tmp = await tempDir();
    const selfSigned = await makeSelfSigned(tmp.path);
    await using registry = await startRegistry({ tls: selfSigned });
    const tls = mode === "pinned" ? ["--ca-file", selfSigned.certPath] : ["--insecure"];
    const source = `${tmp.path}/w.bin`;
    const digest = await writePatternFile(source, 48 * MiB, 7);
    const ref = `${registry.host}/stop/llm:v1`;
    const push = await runCli(["push", ...tls, "--part-size", "16MiB", ref, source], {
      tmp: tmp.path,
    });
    assertStrictEquals(push.code, 0, push.stderr);
    const out = `${tmp.path}/out.bin`;
    const child = spawnCli(
      ["pull", ...tls, "--limit-rate", "4MiB", "--progress", "json", ref, out],
      { tmp: tmp.path },
    );
    const { status, stoppedAfterMs: stoppedAfter, text } = await stopOnceMoving(
      child,
      "SIGINT",
      4 * MiB,
    );
    assert(!Number.isNaN(stoppedAfter), "the pull never got going");
    assertStrictEquals(status.code, 130, text.join("\n"));
    assert(stoppedAfter < STOP_BOUND_MS, `exited ${Math.round(stoppedAfter)} ms after SIGINT`);
    await Deno.stat(`${out}.parted-partial`);
    const rerun = await runCli(["pull", ...tls, "--progress", "none", ref, out], {
      tmp: tmp.path,
    });
    assertStrictEquals(rerun.code, 0, rerun.stderr);
    assertStrictEquals(await sha256File(out), digest);
  });
}

registryTest(
  "a re-push of many parts over one pooled connection, pinned or --insecure, prints no runtime warning",
  { needs: ["openssl"] },
  async () => {
    await using tmp = await tempDir();
    const selfSigned = await makeSelfSigned(tmp.path);
    await using registry = await startRegistry({ tls: selfSigned });
    const source = `${tmp.path}/parts.bin`;
    await writePatternFile(source, 2 * MiB, 13);
    for (const flags of [["--ca-file", selfSigned.certPath], ["--insecure"]]) {
      // Every part is present the second time: 32 requests back to back on one connection.
      for (const round of ["first", "second"]) {
        const push = await runCli(
          [
            "push",
            ...flags,
            "--workers",
            "1",
            "--part-size",
            "64KiB",
            `${registry.host}/w/p:v1`,
            source,
          ],
          { tmp: tmp.path, read: [selfSigned.certPath] },
        );
        assertStrictEquals(push.code, 0, push.stderr);
        const what = `${flags[0]}, ${round} push`;
        assert(!/Warning|MaxListeners/.test(push.stderr), `${what}: ${push.stderr}`);
      }
    }
  },
);
