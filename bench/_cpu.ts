/**
 * The CPU line every benchmark ratio is printed beside: model, whether the CPU has SHA
 * extensions (`sha_ni`), and node:crypto's measured single-thread sha256 speed.
 *
 * API: `cpuLine(): Promise<string>`, e.g. `AMD EPYC, sha_ni yes, node:crypto sha256 1.62 GB/s`;
 * `pinToLastCore(pid)` and `onClientCores(command)`, which keep a registry's work off the cores
 * the clients run on (taskset): on one machine, a registry's hashing otherwise takes the client's
 * CPU, which a remote registry would not.
 *
 * @module
 */
import { createHash } from "node:crypto";

const HASHED_BYTES = 512 * 1024 * 1024;
const CHUNK = 4 * 1024 * 1024;

/** Model, SHA extensions and sha256 speed of this machine's CPU. */
export async function cpuLine(): Promise<string> {
  let info = "";
  try {
    info = await Deno.readTextFile("/proc/cpuinfo");
  } catch {
    // not Linux: model and flags unknown
  }
  const model = /^model name\s*:\s*(.+)$/m.exec(info)?.[1]?.trim() ?? "unknown CPU";
  const sha = /^flags\s*:.*\bsha_ni\b/m.test(info) ? "yes" : "no";
  return `${model}, sha_ni ${sha}, node:crypto sha256 ${sha256Speed().toFixed(2)} GB/s`;
}

/** GB/s of one node:crypto sha256 over 512 MiB in 4 MiB updates (best of three). */
function sha256Speed(): number {
  const chunk = new Uint8Array(CHUNK).map((_, i) => i * 31);
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const started = performance.now();
    const hash = createHash("sha256");
    for (let done = 0; done < HASHED_BYTES; done += CHUNK) hash.update(chunk);
    hash.digest();
    best = Math.min(best, (performance.now() - started) / 1000);
  }
  return HASHED_BYTES / 1e9 / best;
}

const CORES = navigator.hardwareConcurrency;

/** Moves every thread of process `pid` (a registry) onto the last core. */
export async function pinToLastCore(pid: number): Promise<void> {
  const args = ["-a", "-p", "-c", String(CORES - 1), String(pid)];
  const pinned = await new Deno.Command("taskset", { args, stdout: "null" }).output();
  if (!pinned.success) throw new Error(`taskset of process ${pid} failed`);
}

/** `command` run on every core but the last (the one `pinToLastCore` gives the registry). */
export function onClientCores(command: string[]): string[] {
  return ["taskset", "-c", `0-${Math.max(0, CORES - 2)}`, ...command];
}
