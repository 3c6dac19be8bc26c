/**
 * Runs a command as a child process and measures it: wall seconds, CPU seconds (user + sys) and
 * peak resident memory.
 *
 * API:
 * - `measure(command: string[], options?: { env?: Record<string, string>; cwd?: string })`
 *   → `Promise<Measurement>`: `{ code, wallSeconds, cpuSeconds, peakRssMiB, stdout, stderr }`.
 *   Uses GNU time (`/usr/bin/time -f`) when installed; otherwise polls `/proc/<pid>` (CPU from
 *   `stat`, peak RSS from `VmHWM` in `status`, the last sample before exit).
 * - `median(values: number[]): number`.
 * - `flushWrites()`: runs `sync`, so that a command is not charged the write-back of the 2 GiB
 *   the command before it left in the page cache (the kernel writes them out meanwhile, on the
 *   same two cores).
 *
 * @module
 */

/** What one run of a command cost. */
export interface Measurement {
  code: number;
  wallSeconds: number;
  cpuSeconds: number;
  peakRssMiB: number;
  stdout: string;
  stderr: string;
}

const GNU_TIME = "/usr/bin/time";
const decoder = new TextDecoder();

async function hasGnuTime(): Promise<boolean> {
  try {
    const out = await new Deno.Command(GNU_TIME, {
      args: ["-f", "%M", "true"],
      stdout: "null",
      stderr: "piped",
    }).output();
    return out.success && /^\d+\s*$/.test(decoder.decode(out.stderr));
  } catch {
    return false;
  }
}

let gnuTime: Promise<boolean> | undefined;

/** Writes the page cache's dirty pages out (`sync`) before the next measured command. */
export async function flushWrites(): Promise<void> {
  await new Deno.Command("sync").output();
}

/** Runs `command` and measures it. */
export async function measure(
  command: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<Measurement> {
  gnuTime ??= hasGnuTime();
  return await gnuTime ? measureWithTime(command, options) : measureWithProc(command, options);
}

async function measureWithTime(
  command: string[],
  options: { env?: Record<string, string>; cwd?: string },
): Promise<Measurement> {
  const report = await Deno.makeTempFile({ prefix: "bench-time-" });
  try {
    const started = performance.now();
    const out = await new Deno.Command(GNU_TIME, {
      args: ["-o", report, "-f", "%U %S %M", ...command],
      env: options.env,
      cwd: options.cwd,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const wallSeconds = (performance.now() - started) / 1000;
    const line = (await Deno.readTextFile(report)).trim().split("\n").at(-1) ?? "";
    const [user, sys, maxRssKiB] = line.split(" ").map(Number);
    return {
      code: out.code,
      wallSeconds,
      cpuSeconds: user + sys,
      peakRssMiB: maxRssKiB / 1024,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
  } finally {
    await Deno.remove(report).catch(() => {});
  }
}

async function measureWithProc(
  command: string[],
  options: { env?: Record<string, string>; cwd?: string },
): Promise<Measurement> {
  const ticks = 100; // USER_HZ on Linux
  const started = performance.now();
  const child = new Deno.Command(command[0], {
    args: command.slice(1),
    env: options.env,
    cwd: options.cwd,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let cpuSeconds = 0;
  let peakRssMiB = 0;
  let running = true;
  const poll = (async () => {
    while (running) {
      try {
        const stat = await Deno.readTextFile(`/proc/${child.pid}/stat`);
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        cpuSeconds = (Number(fields[11]) + Number(fields[12])) / ticks;
        const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
        const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
        if (hwm) peakRssMiB = Math.max(peakRssMiB, Number(hwm[1]) / 1024);
      } catch { /* exited */ }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const out = await child.output();
  running = false;
  await poll;
  return {
    code: out.code,
    wallSeconds: (performance.now() - started) / 1000,
    cpuSeconds,
    peakRssMiB,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
