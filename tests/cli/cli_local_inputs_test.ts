/**
 * Local inputs are bounded and stoppable: a named pipe or a device given as the docker
 * configuration, a CA file or a registries configuration is refused at once with a sentence
 * naming the flag (it would block the open or never end); `--ca-file /dev/zero` costs no memory;
 * an input that waits for a writer (`--password-stdin` from a pipe that never gets one) is
 * stopped by `--timeout` and by the first Ctrl-C.
 */
import { assert, assertEquals, assertMatch } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { cliArgv, cliEnv, type CliOptions, failureLines, PROJECT_ROOT, spawnCli } from "./_cli.ts";

/** Generous: a refused input ends in well under a second; a blocked one never ends. */
const PROMPT_MS = 20_000;

interface Ended {
  code: number;
  /** The signal that killed the process, when it did not exit by itself. */
  signal: Deno.Signal | null;
  stderr: string;
}

/**
 * Waits for `child` to end by itself within `ms`; kills it (and fails the test) when it does not.
 * Standard input stays open and empty unless `closeStdin`.
 */
async function endsWithin(child: Deno.ChildProcess, ms: number, what: string): Promise<Ended> {
  const stderr = new Response(child.stderr).text();
  const stdout = new Response(child.stdout).text();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), ms));
  const status = await Promise.race([child.status, late]);
  clearTimeout(timer);
  if (status === "late") {
    child.kill("SIGKILL");
    await child.status;
    await Promise.all([stderr, stdout, child.stdin.close().catch(() => {})]);
    throw new Error(`${what}: still running after ${ms} ms`);
  }
  await child.stdin.close().catch(() => {});
  await stdout;
  return { code: status.code, signal: status.signal, stderr: await stderr };
}

async function fifoIn(dir: string, name = "fifo"): Promise<string> {
  const path = `${dir}/${name}`;
  const made = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert(made.success, "mkfifo failed");
  return path;
}

const REF = "127.0.0.1:9/inputs/x:v1";

Deno.test("a named pipe as --registry-config, --ca-file or --registries-conf is refused at once, naming the flag", async () => {
  await using tmp = await tempDir();
  const fifo = await fifoIn(tmp.path);
  const cases: { args: string[]; sentence: RegExp }[] = [
    {
      args: ["pull", "--registry-config", fifo, REF, `${tmp.path}/out`],
      sentence: /--registry-config: .*fifo is not a regular file but a named pipe \(FIFO\)$/,
    },
    {
      args: ["inspect", "--ca-file", fifo, REF],
      sentence: /--ca-file: .*fifo is not a regular file but a named pipe \(FIFO\)$/,
    },
    {
      args: ["copy", "--dest-ca-file", fifo, REF, "127.0.0.2:9/inputs/y:v1"],
      sentence: /--dest-ca-file: .*fifo is not a regular file but a named pipe \(FIFO\)$/,
    },
    {
      args: ["pull", "--registries-conf", fifo, REF, `${tmp.path}/out`],
      sentence:
        /registries configuration .*fifo: not a regular file but a named pipe \(FIFO\); --registries-conf takes a regular file of at most 4 MiB$/,
    },
    {
      args: [
        "login",
        "--registry-config",
        fifo,
        "--username",
        "u",
        "--password-stdin",
        "127.0.0.1:9",
      ],
      sentence: /--registry-config: .*fifo is not a regular file but a named pipe \(FIFO\)$/,
    },
  ];
  for (const { args, sentence } of cases) {
    const child = spawnCli(args, { tmp: tmp.path });
    const ended = await endsWithin(child, PROMPT_MS, args.join(" "));
    assertEquals(ended.code, 1, ended.stderr);
    assertMatch(failureLines(ended.stderr)[0], sentence, ended.stderr);
  }
});

Deno.test("a named pipe as the docker configuration of DOCKER_CONFIG is refused when login reads it", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  await fifoIn(tmp.path, "config.json");
  const child = spawnCli(
    ["login", "--plain-http", "--username", "u", "--password-stdin", registry.host],
    { tmp: tmp.path, env: { DOCKER_CONFIG: tmp.path } },
  );
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("secret\n"));
  await writer.close();
  const ended = await endsWithin(child, PROMPT_MS, "login");
  assertEquals(ended.code, 1, ended.stderr);
  assertMatch(ended.stderr, /not a regular file but a named pipe \(FIFO\)/);
});

Deno.test(
  "--ca-file /dev/zero is refused at once, in bounded memory",
  { ignore: !(await Deno.stat("/usr/bin/time").then(() => true, () => false)) },
  async () => {
    await using tmp = await tempDir();
    const options: CliOptions = { tmp: tmp.path, read: ["/dev/zero"] };
    const argv = cliArgv(["inspect", "--ca-file", "/dev/zero", REF], options);
    // GNU time writes the child's peak resident set (KiB) to a file of its own.
    const child = new Deno.Command("/usr/bin/time", {
      args: ["-f", "%M", "-o", `${tmp.path}/peak`, ...argv],
      cwd: PROJECT_ROOT,
      clearEnv: true,
      env: cliEnv(options),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const ended = await endsWithin(child, PROMPT_MS, "--ca-file /dev/zero");
    assertEquals(ended.code, 1, ended.stderr);
    assertMatch(
      failureLines(ended.stderr)[0],
      /--ca-file: \/dev\/zero is not a regular file but a character device$/,
    );
    const peakKiB = Number((await Deno.readTextFile(`${tmp.path}/peak`)).trim().split("\n").at(-1));
    assert(peakKiB < 400 * 1024, `peak ${peakKiB} KiB`);
  },
);

Deno.test("a CA file over 4 MiB is refused, naming the flag and the limit", async () => {
  await using tmp = await tempDir();
  await Deno.writeFile(`${tmp.path}/big.pem`, new Uint8Array(4 * 1024 * 1024 + 1).fill(0x41));
  const child = spawnCli(["inspect", "--ca-file", `${tmp.path}/big.pem`, REF], { tmp: tmp.path });
  const ended = await endsWithin(child, PROMPT_MS, "a large CA file");
  assertEquals(ended.code, 1, ended.stderr);
  assertMatch(
    failureLines(ended.stderr)[0],
    /--ca-file: .*big\.pem is too large: more than 4194304 bytes$/,
  );
});

/** `login --password-stdin` from a pipe that never gets a writer's bytes nor its end. */
function waitingLogin(tmp: string, extra: string[] = []): Deno.ChildProcess {
  return spawnCli(
    ["login", ...extra, "--username", "u", "--password-stdin", "127.0.0.1:9"],
    { tmp },
  );
}

Deno.test("--timeout stops an input that waits for a writer", async () => {
  await using tmp = await tempDir();
  const child = waitingLogin(tmp.path, ["--timeout", "1s"]);
  const ended = await endsWithin(child, PROMPT_MS, "--timeout 1s");
  assertEquals(ended.code, 1, ended.stderr);
  assertMatch(failureLines(ended.stderr)[1], /--timeout 1s expired/);
});

Deno.test("the first Ctrl-C stops an input that waits for a writer", async () => {
  await using tmp = await tempDir();
  // Nothing outside tells when the CLI has armed its stop trap, and a SIGINT before that meets
  // the default action (the process dies by the signal): then try again, waiting longer.
  let ended: Ended | undefined;
  for (const waitMs of [500, 1000, 2000, 4000, 8000]) {
    const child = waitingLogin(tmp.path);
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    child.kill("SIGINT");
    ended = await endsWithin(child, PROMPT_MS, "SIGINT");
    if (ended.signal === null) break;
  }
  assertEquals(ended!.signal, null, "the CLI never stopped by itself: SIGINT killed it each time");
  assertEquals(ended!.code, 130, ended!.stderr);
  assertMatch(failureLines(ended!.stderr)[1], /interrupted by SIGINT \(exit 130\)/);
});
