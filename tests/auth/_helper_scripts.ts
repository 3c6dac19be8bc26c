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
 * - `HELPER_OS` — the helpers and the checks need a shell and `/proc` (Linux).
 *
 * @module
 */

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
