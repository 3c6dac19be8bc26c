/**
 * Stopping a transfer of 4,096 parts ends within a second: SIGINT and `--timeout`, push and
 * pull (downloading behind a throttled nginx, and the resume pass hashing a full-length
 * partial), end to end through the CLI on the real registry. The queued hashing work of every
 * part is dropped without starting a thread per part.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { startNginx } from "../fixtures/nginx.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, lines, runCli, spawnCli } from "./_cli.ts";

const PART = 16 * 1024;
const PARTS = 4096;
/** The bound a user relies on is 1 s; the margin absorbs a loaded machine. */
const STOP_BOUND_MS = 2500;

interface Stopped {
  code: number;
  stderr: string;
  /** From the signal (or the deadline) to the process's exit. */
  stopMs: number;
}

/**
 * Runs the CLI with `--progress json` and, once a record's phase is `phase`, sends SIGINT; with
 * `timeoutMs` the stop is that deadline, counted from the spawn (so the bound also absorbs the
 * process start). Returns how long the process took to exit after the stop.
 */
async function stopDuring(
  args: string[],
  tmp: string,
  phase: string | undefined,
  timeoutMs?: number,
): Promise<Stopped> {
  const spawned = performance.now();
  const [command, ...rest] = args;
  const child = spawnCli([command, "--progress", "json", ...rest], { tmp });
  await child.stdin.close();
  void new Response(child.stdout).text();
  const text: string[] = [];
  let stoppedAt = timeoutMs === undefined ? undefined : spawned + timeoutMs;
  for await (const line of lines(child.stderr)) {
    text.push(line);
    if (stoppedAt !== undefined || !line.startsWith("{")) continue;
    if ((JSON.parse(line) as { phase: string }).phase !== phase) continue;
    stoppedAt = performance.now();
    child.kill("SIGINT");
  }
  const status = await child.status;
  assert(stoppedAt !== undefined, `phase ${phase} never reported:\n${text.join("\n")}`);
  return { code: status.code, stderr: text.join("\n"), stopMs: performance.now() - stoppedAt };
}

function expectStopped(run: Stopped, code: number, explanation: RegExp, what: string): void {
  assertStrictEquals(run.code, code, run.stderr);
  const [, why] = failureLines(run.stderr.split("\n").filter((l) => !l.startsWith("{")).join("\n"));
  assert(explanation.test(why), why);
  assert(run.stopMs < STOP_BOUND_MS, `${what} took ${run.stopMs.toFixed(0)} ms to stop`);
  console.log(`${what}: stopped ${run.stopMs.toFixed(0)} ms after the stop`);
}

registryTest("4,096 parts: SIGINT and --timeout stop push and pull within the bound", async () => {
  await using registry = await startRegistry();
  await using nginx = await startNginx({ upstream: registry.url, limitRate: "256k" });
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writePatternFile(source, PART * PARTS);
  const ref = `${registry.host}/many/parts:v1`;
  const pushArgs = ["push", "--plain-http", "--part-size", "16KiB"];

  // Push: stopped while most parts are still queued for hashing and upload.
  const sigintPush = await stopDuring([...pushArgs, ref, source], tmp.path, "uploading");
  expectStopped(sigintPush, 130, /interrupted by SIGINT/, "push, SIGINT");
  const timeoutPush = await stopDuring(
    [...pushArgs, "--timeout", "2s", `${registry.host}/many/parts:t`, source],
    tmp.path,
    undefined,
    2000,
  );
  expectStopped(timeoutPush, 1, /--timeout 2s expired/, "push, --timeout");

  const push = await runCli([...pushArgs, ref, source], { tmp: tmp.path });
  assertStrictEquals(push.code, 0, push.stderr);

  // Pull behind nginx at 256 KiB/s per response: every download is in flight when stopped.
  const dest = `${tmp.path}/out.bin`;
  const pullArgs = ["pull", "--plain-http", "--workers", "16", `${nginx.host}/many/parts:v1`, dest];
  const sigintPull = await stopDuring(pullArgs, tmp.path, "downloading");
  expectStopped(sigintPull, 130, /interrupted by SIGINT/, "pull, SIGINT");
  const timeoutPull = await stopDuring(
    [pullArgs[0], "--timeout", "3s", ...pullArgs.slice(1)],
    tmp.path,
    undefined,
    3000,
  );
  expectStopped(timeoutPull, 1, /--timeout 3s expired/, "pull, --timeout");

  // The partial has its full length now: a rerun hashes 4,096 ranges before fetching anything.
  assertStrictEquals((await Deno.stat(`${dest}.parted-partial`)).size, PART * PARTS);
  const sigintVerify = await stopDuring(pullArgs, tmp.path, "verifying");
  expectStopped(sigintVerify, 130, /interrupted by SIGINT/, "pull resume pass, SIGINT");

  // Still resumable: a pull straight to the registry completes it.
  const done = await runCli(["pull", "--plain-http", ref, dest], { tmp: tmp.path });
  assertStrictEquals(done.code, 0, done.stderr);
});
