/**
 * The targets of `peers_bench.ts` against the best Go peer, each printed met or missed, and, for
 * a miss, the floor that numbers measured in the same run put under it.
 *
 * API:
 * - `measureFloors(source, size, dir, settle)` → `Promise<Floors>`: the CPU of reading `source`
 *   with one and with two sha256 passes (node:crypto, in this process, the better of two
 *   rounds), and the wall time of copying `source` (in the page cache) to a new file and flushing
 *   it (`dd conv=fdatasync`, the better of two rounds).
 * - `printTargets(size, results, floors)`: one line per target.
 *
 * The floors:
 * - Push wall time: the client's CPU and the registry's during the push, on the machine's cores
 *   used without a gap (they share them).
 * - Push CPU: a parted push hashes every byte twice (each part's digest and the file's): reading
 *   the file with two passes, plus what sending costs, which is curl's push (`openssl dgst`, then
 *   one PUT) less its read with one pass.
 * - Pull wall time: the disk (every byte is written into the page cache and, as this pull does,
 *   flushed) and the cores (client and registry).
 *
 * @module
 */
import { createHash } from "node:crypto";
import process from "node:process";
import { measure } from "./_measure.ts";

const GIB = 1 << 30;
const MIB = 1 << 20;
const WALL_TARGET = 0.8;
const CPU_TARGET = 1.1;
const RSS_TARGET_MIB = 96;

/** What the floors are made of, measured on this machine in this run. */
export interface Floors {
  /** CPU seconds per GiB: reading the source with one sha256 pass. */
  readOneHash: number;
  /** CPU seconds per GiB: reading the source with two sha256 passes. */
  readTwoHashes: number;
  /**
   * Wall seconds to copy the cached source to a new file and flush it, the better of two (NaN:
   * the copy failed).
   */
  diskWrite: number;
  /** The cores the client and the registry share. */
  cores: number;
}

/** The medians of one tool's operation (its peak RSS: the highest of the runs). */
export interface Result {
  wall: number;
  cpu: number;
  rss: number;
  registryCpu: number;
}

/** Measures the floors' pieces; `settle(files)` empties the page cache and reads `files` back. */
export async function measureFloors(
  source: string,
  size: number,
  dir: string,
  settle: (files: string[]) => Promise<void>,
): Promise<Floors> {
  await settle([source]);
  const gib = size / GIB;
  const readOneHash = Math.min(await hashCpu(source, 1), await hashCpu(source, 1)) / gib;
  const readTwoHashes = Math.min(await hashCpu(source, 2), await hashCpu(source, 2)) / gib;
  const target = `${dir}/disk-floor.bin`;
  // A copy of the source, itself in the page cache as the registry's blobs are before a pull:
  // zeros written into an empty page cache took 4–15 s at 8 GiB where this copy took 11–24 s.
  let diskWrite = Infinity;
  for (let round = 0; round < 2; round++) {
    await settle([source]);
    const dd = await measure([
      "dd",
      `if=${source}`,
      `of=${target}`,
      `bs=${MIB}`,
      "conv=fdatasync",
      "status=none",
    ]);
    await Deno.remove(target).catch(() => {});
    // A disk that could not take the file (full, say) has no floor to give.
    diskWrite = dd.code === 0 ? Math.min(diskWrite, dd.wallSeconds) : NaN;
    if (Number.isNaN(diskWrite)) break;
  }
  const cores = Number((await measure(["nproc"])).stdout.trim());
  return { readOneHash, readTwoHashes, diskWrite, cores };
}

/** CPU seconds of this process to read `path` in 1 MiB reads, hashing each `passes` times. */
async function hashCpu(path: string, passes: number): Promise<number> {
  const hashes = Array.from({ length: passes }, () => createHash("sha256"));
  const buffer = new Uint8Array(MIB);
  const start = process.cpuUsage();
  using file = await Deno.open(path);
  for (let n = await file.read(buffer); n !== null; n = await file.read(buffer)) {
    for (const hash of hashes) hash.update(buffer.subarray(0, n));
  }
  for (const hash of hashes) hash.digest();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

/** Prints each target of one size: the ratio, met or missed, and a missed one's floor. */
export function printTargets(size: number, results: Map<string, Result>, floors: Floors): void {
  const gib = size / GIB;
  const get = (op: string, tool: string) => results.get(`${op} ${tool}`);
  const peers = [...results.keys()].filter((key) => key.includes(" peer-"));
  if (peers.length === 0) {
    console.log("\nTargets: no Go peer was built, so none is judged.");
    return;
  }
  const best = (op: string, by: (r: Result) => number) => {
    const named = peers.filter((key) => key.startsWith(`${op} `)).map((key) => ({
      name: key.slice(op.length + 1),
      value: by(results.get(key)!),
    }));
    return named.reduce((a, b) => (b.value < a.value ? b : a));
  };
  const verdict = (ratio: number, target: number) =>
    `target ≤ ${target.toFixed(2)}×: ${ratio <= target ? "met" : "missed"}`;
  const onCores = (r: Result) => (r.cpu + r.registryCpu) / floors.cores;
  console.log(`\nTargets at ${gib} GiB, against the best Go peer of this run:`);

  const push = get("push", "ocipart")!;
  const pushWall = best("push", (r) => r.wall);
  const pushWallRatio = push.wall / pushWall.value;
  console.log(
    `- push wall: ${push.wall.toFixed(2)} s, ${pushWallRatio.toFixed(2)}× ${pushWall.name}'s ` +
      `${pushWall.value.toFixed(2)} s; ${verdict(pushWallRatio, WALL_TARGET)}. Floor on ` +
      `${floors.cores} shared cores: (client ${push.cpu.toFixed(2)} + registry ` +
      `${push.registryCpu.toFixed(2)} CPU-s) / ${floors.cores} = ${onCores(push).toFixed(2)} s, ` +
      `${(onCores(push) / pushWall.value).toFixed(2)}×.`,
  );

  const pushCpu = best("push", (r) => r.cpu);
  const pushCpuRatio = push.cpu / pushCpu.value;
  const curl = get("push", "curl");
  const sending = curl === undefined ? undefined : curl.cpu / gib - floors.readOneHash;
  const pushFloor = sending === undefined ? undefined : floors.readTwoHashes + sending;
  console.log(
    `- push CPU: ${(push.cpu / gib).toFixed(2)} CPU-s/GiB, ${pushCpuRatio.toFixed(2)}× ` +
      `${pushCpu.name}'s ${(pushCpu.value / gib).toFixed(2)}; ${
        verdict(pushCpuRatio, CPU_TARGET)
      }. ` +
      (pushFloor === undefined ? "No curl: no floor." : `Floor of two digests: read + 2 sha256 ` +
        `passes ${floors.readTwoHashes.toFixed(2)} + sending ${sending!.toFixed(2)} (curl's ` +
        `push ${(curl!.cpu / gib).toFixed(2)} − read + 1 pass ${floors.readOneHash.toFixed(2)}) ` +
        `= ${pushFloor.toFixed(2)} CPU-s/GiB, ${(pushFloor * gib / pushCpu.value).toFixed(2)}×.`),
  );

  const pull = get("pull", "ocipart")!;
  const pullWall = best("pull", (r) => r.wall);
  const pullWallRatio = pull.wall / pullWall.value;
  const disk = Number.isNaN(floors.diskWrite)
    ? "the disk could not be measured (dd failed)"
    : `a copy of the file (cached) written and flushed in ${floors.diskWrite.toFixed(2)} s ` +
      `(${(floors.diskWrite / pullWall.value).toFixed(2)}×)`;
  console.log(
    `- pull wall: ${pull.wall.toFixed(2)} s, ${pullWallRatio.toFixed(2)}× ${pullWall.name}'s ` +
      `${pullWall.value.toFixed(2)} s; ${verdict(pullWallRatio, WALL_TARGET)}. Floors: ` +
      `${disk}; the cores, (client ` +
      `${pull.cpu.toFixed(2)} + registry ${pull.registryCpu.toFixed(2)} CPU-s) / ${floors.cores} ` +
      `= ${onCores(pull).toFixed(2)} s (${(onCores(pull) / pullWall.value).toFixed(2)}×).`,
  );

  const pullCpu = best("pull", (r) => r.cpu);
  const pullCpuRatio = pull.cpu / pullCpu.value;
  console.log(
    `- pull CPU: ${(pull.cpu / gib).toFixed(2)} CPU-s/GiB, ${pullCpuRatio.toFixed(2)}× ` +
      `${pullCpu.name}'s ${(pullCpu.value / gib).toFixed(2)}; ${
        verdict(pullCpuRatio, CPU_TARGET)
      }.`,
  );

  const rss = Math.max(push.rss, pull.rss);
  console.log(
    `- peak RSS: push ${push.rss.toFixed(0)} MiB, pull ${pull.rss.toFixed(0)} MiB; target ≤ ` +
      `${RSS_TARGET_MIB} MiB: ${rss <= RSS_TARGET_MIB ? "met" : "missed"}.`,
  );
}
