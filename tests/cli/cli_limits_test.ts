/**
 * The CLI's time limits end to end: `--timeout` of any length up to 8760h means what it says
 * (a 600h limit no longer expires at once) and is echoed as typed; past the limit is a usage
 * error; `--stall-timeout` bounds how long an attempt may move no bytes.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, runCli, startSilentServer } from "./_cli.ts";

registryTest("--timeout 600h does not expire at once; 8761h is a usage error", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writePatternFile(source, 2 * 1024 * 1024 + 7);
  const ref = `${registry.host}/limits/long:v1`;
  const push = await runCli(
    ["push", "--plain-http", "--timeout", "600h", "--part-size", "1MiB", ref, source],
    { tmp: tmp.path },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  const pull = await runCli(
    ["pull", "--plain-http", "--timeout", "720h", ref, `${tmp.path}/out.bin`],
    { tmp: tmp.path },
  );
  assertStrictEquals(pull.code, 0, pull.stderr);
  const tooLong = await runCli(
    ["pull", "--plain-http", "--timeout", "8761h", ref, `${tmp.path}/never.bin`],
    { tmp: tmp.path },
  );
  assertStrictEquals(tooLong.code, 2, tooLong.stderr);
  assert(tooLong.stderr.includes("--timeout: must be at most 8760h"), tooLong.stderr);
});

Deno.test("an expired --timeout is echoed as typed", async () => {
  await using silent = startSilentServer();
  await using tmp = await tempDir();
  const result = await runCli(
    [
      "pull",
      "--plain-http",
      "--timeout",
      "0.0004h",
      `127.0.0.1:${silent.port}/a/b:v1`,
      `${tmp.path}/out.bin`,
    ],
    { tmp: tmp.path },
  );
  assertStrictEquals(result.code, 1, result.stderr);
  const [, why] = failureLines(result.stderr);
  assertStrictEquals(why, "ocipart pull: --timeout 0.0004h expired; no sentinel applies (exit 1)");
});

registryTest(
  "--stall-timeout fails a silent download attempt after that long, not after 60 s",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    await writePatternFile(source, 1024 * 1024);
    const push = await runCli(
      ["push", "--plain-http", `${registry.host}/limits/stall:v1`, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    // Every blob answer sends its headers and a few bytes, then nothing.
    proxy.fault({ method: "GET", path: /\/blobs\/sha256:/, stallAfter: 100, times: Infinity });
    const started = performance.now();
    const pull = await runCli(
      [
        "pull",
        "--plain-http",
        "--stall-timeout",
        "300ms",
        "--timeout",
        "50s",
        `${proxy.host}/limits/stall:v1`,
        `${tmp.path}/out.bin`,
      ],
      { tmp: tmp.path },
    );
    const elapsed = performance.now() - started;
    assertStrictEquals(pull.code, 1, pull.stderr);
    const [error, why] = failureLines(pull.stderr);
    // Without the flag each attempt would wait the default 60 s and --timeout would end it.
    assert(!why.includes("--timeout"), `the stall limit ended it, not --timeout: ${why}`);
    assert(error.includes("failed after 4 attempts"), error);
    // Four attempts of 300 ms plus backoff: far below one default 60 s stall.
    assert(elapsed < 40_000, `took ${elapsed.toFixed(0)} ms`);
    assert(
      proxy.count({ method: "GET", path: /\/blobs\/sha256:/ }) >= 2,
      "the stalled attempt was retried",
    );
  },
);
