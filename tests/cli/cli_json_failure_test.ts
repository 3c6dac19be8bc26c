/**
 * `--json` failures: for every exit code, the last line of standard error is one JSON object
 * (exit code, error code, class, the report's first sentence, the hint, cause codes, signal) and
 * no line of the report for a person is written.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import { writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { freePort } from "../fixtures/ports.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { type CliResult, lines, runCli, spawnCli, stallFromThirdPart } from "./_cli.ts";
import { pushByHand, tinyImage } from "./_images.ts";

const KEYS = ["exitCode", "code", "class", "message", "detail", "hint", "run", "causes", "signal"];

interface Failure {
  exitCode: number;
  code: string | null;
  class: string | null;
  message: string;
  detail: string | null;
  hint: string | null;
  run: string | null;
  causes: string[];
  signal: string | null;
}

/** The failure object of `result`, checked to be the last line and the whole report. */
function failureOf(result: CliResult, exitCode: number): Failure {
  assertStrictEquals(result.code, exitCode, result.stderr);
  const last = result.stderr.trimEnd().split("\n").at(-1)!;
  const failure = JSON.parse(last) as Failure;
  assertEquals(Object.keys(failure), KEYS);
  assertStrictEquals(failure.exitCode, exitCode);
  const prose = result.stderr.split("\n").filter((l) => l.startsWith("ocipart "));
  assertEquals(prose, [], "no line of the report for a person");
  return failure;
}

registryTest("--json failures, exits 1 to 5: one JSON object on standard error", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const run = (args: string[]) => runCli(args, { tmp: tmp.path });
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 3000, 4);
  const ref = `${registry.host}/team/w:v1`;
  const pushed = await run(["push", "--plain-http", "--part-size", "1KiB", ref, file]);
  assertStrictEquals(pushed.code, 0, pushed.stderr);

  const port = await freePort();
  const refused = failureOf(
    await run(["pull", "--json", "--plain-http", `127.0.0.1:${port}/team/w:v1`, `${tmp.path}/o`]),
    1,
  );
  assertStrictEquals(
    refused.message,
    `nothing is listening at 127.0.0.1:${port}: the connection was refused`,
  );
  assertStrictEquals(refused.hint, `is the registry running, and is ${port} its port?`);
  assertEquals(refused.causes, ["ECONNREFUSED"]);
  // A refused first connection is final (no retries): the network error itself.
  assertStrictEquals(refused.code, "ERR_NETWORK");
  assertStrictEquals(refused.signal, null);
  assertStrictEquals(refused.detail, "HTTP request: connection failed (connection refused)");

  // The reason is the library's line of the text report, which the first sentence does not give.
  await Deno.mkdir(`${tmp.path}/dl`);
  const reuse = failureOf(
    await run(["pull", "--json", "--plain-http", "--reuse", `${tmp.path}/dl`, ref, "o"]),
    1,
  );
  assertStrictEquals(reuse.detail, `--reuse: ${tmp.path}/dl is not a regular file`);

  const usage = failureOf(await run(["pull", "--format", "json", "--plain-htpp", ref, "o"]), 2);
  assertEquals([usage.code, usage.class], ["ERR_USAGE", "UsageError"]);
  assertStrictEquals(usage.message, "unknown flag --plain-htpp (did you mean --plain-http?)");
  assertStrictEquals(usage.hint, "see 'ocipart pull --help' for the flags of pull");
  assertStrictEquals(usage.detail, null);

  const missing = failureOf(
    await run(["inspect", "--json", "--plain-http", `${registry.host}/team/w:v2`]),
    3,
  );
  assertEquals([missing.code, missing.class], ["ERR_NOT_FOUND", "NotFoundError"]);
  assert(missing.message.includes("v2"), missing.message);

  await pushByHand(registry.url, "other/kind", "v1", tinyImage("application/vnd.example.other"));
  const other = failureOf(
    await run(["inspect", "--json", "--plain-http", `${registry.host}/other/kind:v1`]),
    4,
  );
  assertEquals(
    [other.code, other.class],
    ["ERR_NOT_PARTED_ARTIFACT", "NotPartedArtifactError"],
  );

  // The registry's copy of part 1 is damaged: same length, other bytes.
  const bytes = await Deno.readFile(file);
  const part = bytes.subarray(1024, 2048);
  const digest = `sha256:${createHash("sha256").update(part).digest("hex")}`;
  await Deno.writeFile(registry.blobPath(digest), part.map((b) => b ^ 0xff));
  const damaged = failureOf(await run(["pull", "--json", "--plain-http", ref, `${tmp.path}/o`]), 5);
  assertEquals([damaged.code, damaged.class], ["ERR_DIGEST_MISMATCH", "DigestMismatchError"]);
  assert(damaged.hint?.startsWith("try again"), damaged.hint ?? "");
});

registryTest("--json failures, exit 6: the hint and the login command to run", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const result = await runCli(
    ["push", "--json", "--plain-http", `${registry.host}/private/w:v1`, file],
    { tmp: tmp.path },
  );
  const denied = failureOf(result, 6);
  assertEquals([denied.code, denied.class], ["ERR_UNAUTHORIZED", "UnauthorizedError"]);
  assertStrictEquals(
    denied.message,
    `${registry.host} needs credentials, and none it accepts were sent (401 Unauthorized)`,
  );
  assertStrictEquals(
    denied.run,
    `ocipart login --plain-http --username USER --password-stdin ${registry.host}`,
  );
});

Deno.test("--json failures, exit 7: a part refused as too large", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  fake.fault({ method: "PUT", path: /uploads/, times: Infinity, respond: { status: 413 } });
  const ref = `${fake.host}/team/w:v1`;
  const result = await runCli(["push", "--json", "--plain-http", ref, file], { tmp: tmp.path });
  const large = failureOf(result, 7);
  assertEquals([large.code, large.class], ["ERR_PART_TOO_LARGE", "PartTooLargeError"]);
  assertStrictEquals(large.run, `ocipart push --part-size 256 --json --plain-http ${ref} ${file}`);
});

/** A pull held at its third part by a fault proxy, stopped by `signal`. */
async function stoppedPull(signal: "SIGINT" | "SIGTERM"): Promise<CliResult> {
  await using registry = await startRegistry();
  const proxy = await startFaultProxy({ target: registry.url });
  try {
    await using tmp = await tempDir();
    const file = `${tmp.path}/w.bin`;
    await writePatternFile(file, 4096, 9);
    const path = "/team/w:v1";
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "1KiB", `${registry.host}${path}`, file],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    stallFromThirdPart(proxy);
    const args = ["pull", "--json", "--progress", "json", "--plain-http", "--workers", "1"];
    const child = spawnCli([...args, `${proxy.host}${path}`, `${tmp.path}/o`], { tmp: tmp.path });
    await child.stdin.close();
    const stdout = new Response(child.stdout).text();
    const seen: string[] = [];
    let sent = false;
    for await (const line of lines(child.stderr)) {
      seen.push(line);
      const record = line.startsWith("{") ? JSON.parse(line) : {};
      if (!sent && record.partsDone === 2) {
        sent = true; // once: a second SIGINT quits at once
        child.kill(signal);
      }
    }
    const status = await child.status;
    return { code: status.code, stdout: await stdout, stderr: seen.join("\n") };
  } finally {
    await proxy.close();
  }
}

registryTest("--json failures, exits 130 and 143: the signal, and no error class", async () => {
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    const stopped = failureOf(await stoppedPull(signal), code);
    assertEquals([stopped.code, stopped.class, stopped.signal], [null, null, signal]);
    assertStrictEquals(stopped.detail, null, "the signal is the whole story");
    assert(stopped.message.includes("run the same command to resume"), stopped.message);
  }
});
