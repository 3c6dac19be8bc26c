/**
 * Docker credential helpers for tests: small shell scripts written to a temp dir, and checks on
 * the processes they leave.
 *
 * API:
 * - `writeHelper(dir, name, body): Promise<string>` — writes `<dir>/docker-credential-<name>`
 *   (`#!/bin/sh` + `body`, mode 0755) and returns its path.
 * - `waitForText(path, timeoutMs?): Promise<string>` — polls until `path` holds a whole line
 *   (a helper writes its pid there when it starts); throws after the time.
 * - `processGone(pid): Promise<boolean>` — the process no longer runs (absent, or a zombie).
 * - `waitGone(pids, timeoutMs?): Promise<number[]>` — polls until every pid is gone; returns
 *   the pids still running at the end (empty when all are gone).
 * - `killAll(pids): void` — SIGKILL to whatever of `pids` still runs (cleanup).
 * - `runCliWidened(args, options, { run?, net?, env? }): Promise<CliResult>` — the CLI as
 *   `tests/cli/_cli.ts` runs it, with `--allow-run`, `--allow-net` or `--allow-env` for anything.
 * - `cliResult(child): Promise<CliResult>` — waits for a spawned CLI, output decoded.
 * - `HELPER_OS` — the helpers and the checks need a shell and `/proc` (Linux).
 *
 * @module
 */
import { cliArgv, cliEnv, type CliOptions, type CliResult, PROJECT_ROOT } from "../cli/_cli.ts";

/** Whether these helpers can run here. */
export const HELPER_OS: boolean = Deno.build.os === "linux";

/** Writes an executable helper script and returns its path. */
export async function writeHelper(dir: string, name: string, body: string): Promise<string> {
  const path = `${dir}/docker-credential-${name}`;
  await Deno.writeTextFile(path, `#!/bin/sh\n${body}`, { mode: 0o755 });
  await Deno.chmod(path, 0o755);
  return path;
}

/** Polls until `path` holds a line; returns the text. */
export async function waitForText(path: string, timeoutMs = 10_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      const text = await Deno.readTextFile(path);
      if (text.endsWith("\n")) return text;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`nothing written to ${path} within ${timeoutMs} ms`);
}

/** Whether process `pid` no longer runs: no such process, or one that only awaits reaping. */
export async function processGone(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "Z" || state === "X";
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return true;
    // A process that ends between the open and the read of its stat file: ESRCH.
    if (err instanceof Error && /\(os error 3\)/.test(err.message)) return true;
    throw err;
  }
}

/** Polls until every pid is gone; returns those still running after `timeoutMs`. */
export async function waitGone(pids: number[], timeoutMs = 2_000): Promise<number[]> {
  const end = Date.now() + timeoutMs;
  while (true) {
    const running: number[] = [];
    for (const pid of pids) if (!(await processGone(pid))) running.push(pid);
    if (running.length === 0 || Date.now() >= end) return running;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Kills whatever of `pids` still runs (cleanup after a failed assertion). */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

/** Which of the CLI's narrowed permissions a run widens. */
export interface Widened {
  /** `--allow-run` for any program (so the CLI may signal a helper's whole process group). */
  run?: boolean;
  /** `--allow-net` for any host (so that only the peer guard stands between it and a realm). */
  net?: boolean;
  /** `--allow-env` for every variable (what a helper needs), even without `options.run`. */
  env?: boolean;
}

/** Runs the CLI as `runCli` does, with some permissions widened. */
export async function runCliWidened(
  args: string[],
  options: CliOptions,
  widen: Widened,
): Promise<CliResult> {
  const [program, ...rest] = cliArgv(args, options).map((arg) =>
    widen.run && arg.startsWith("--allow-run=")
      ? "--allow-run"
      : widen.net && arg.startsWith("--allow-net=")
      ? "--allow-net"
      : widen.env && arg.startsWith("--allow-env=")
      ? "--allow-env"
      : arg
  );
  const child = new Deno.Command(program, {
    args: rest,
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv(options),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  if (options.stdin !== undefined) await writer.write(new TextEncoder().encode(options.stdin));
  await writer.close();
  return await cliResult(child);
}

/** Waits for a spawned CLI and decodes its output. */
export async function cliResult(child: Deno.ChildProcess): Promise<CliResult> {
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}
