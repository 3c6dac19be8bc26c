/**
 * What a GiB costs, against the Go peers, on one Distribution registry on loopback, in one run:
 * cold push and cold pull of one file by this project's CLI, `peer-oras` (oras-go),
 * `peer-crane` (go-containerregistry) and curl (push: `openssl dgst -sha256`, POST and one `curl
 * -T` PUT of the blob; pull: `curl -o` and `openssl dgst -sha256`). For each: wall seconds, CPU
 * seconds per GiB of the client's process tree, peak RSS, and the registry's CPU during the
 * operation (apart, not added). Tools alternate within a run and the order rotates run by run;
 * medians, but the highest peak RSS of the runs (a memory bound holds only if every run keeps
 * it). The loaded CLI's own RSS (`--version`) is printed as the floor of any command.
 *
 * "Cold": each push sends a file whose first 16 bytes were just replaced by a nonce, to a new
 * repository, so no blob is present; each pull writes into an empty directory. The source and
 * the registry's blobs are in the page cache for every tool alike; `sync` runs, untimed, between
 * operations. This project's pull flushes its file before the rename (fdatasync); the peers and
 * curl do not, unless `--fsync-peers` adds a `sync -d` of their file to their timed pull.
 *
 * The page cache fills up with every tool's blobs, and the kernel charges the reclaim of it to
 * whoever writes next: at 8 GiB, that moved a pull's system time by seconds from run to run.
 * `--drop-caches` (root) empties the page cache before each operation and reads back, untimed,
 * only what the operation reads: the source before a push, the blobs that push stored before its
 * pull.
 *
 * After each size's table, each target (wall time ≤ 0.8× and CPU ≤ 1.1× the best Go peer's, peak
 * RSS ≤ 96 MiB) is printed met or missed, with the floor that numbers of the same run put under a
 * miss (`bench/_peers_targets.ts`).
 *
 * Usage: `deno run -A bench/peers_bench.ts [--size 2GiB[,8GiB]] [--runs 3] [--baseline DIR]
 * [--flags "--workers 8"] [--fsync-peers] [--drop-caches]`. `--baseline DIR` times another
 * checkout's CLI beside this one (before and after in one run). The peers are found by
 * `bench/_peers.ts`, and skipped, saying so, when they are not built.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseSize } from "../src/cli/arguments/size.ts";
import { measure, type Measurement, median } from "./_measure.ts";
import { cpuLine } from "./_cpu.ts";
import { findPeers, type Peer, peersNote } from "./_peers.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { cliCommand } from "./_cli.ts";
import { measureFloors, printTargets, type Result } from "./_peers_targets.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "2GiB" },
    runs: { type: "string", default: "3" },
    baseline: { type: "string" },
    flags: { type: "string", default: "" },
    "fsync-peers": { type: "boolean", default: false },
    "drop-caches": { type: "boolean", default: false },
  },
  strict: false,
});
const SIZES = String(values.size).split(",").map((size) => parseSize(size.trim()));
const RUNS = Number(values.runs);
const FLAGS = String(values.flags).split(/\s+/).filter((flag) => flag !== "");
const FSYNC_PEERS = values["fsync-peers"] === true;
const DROP_CACHES = values["drop-caches"] === true;
const GIB = 1 << 30;

/** One tool's push and pull, as command lines over a work directory. */
interface Tool {
  name: string;
  push(ref: string, file: string): string[];
  pull(ref: string, outDir: string): string[];
}

function ocipart(name: string, checkout: string): Tool {
  const cli = cliCommand(`${checkout}/cli.ts`);
  const common = ["--plain-http", "--progress", "none", ...FLAGS];
  return {
    name,
    push: (ref, file) => [...cli, "push", ...common, ref, file],
    pull: (ref, outDir) => [...cli, "pull", ...common, ref, `${outDir}/`],
  };
}

function peerTool(peer: Peer): Tool {
  const sync = (command: string[], outDir: string) =>
    FSYNC_PEERS ? ["sh", "-c", `"$@" && sync -d "$0"/*`, outDir, ...command] : command;
  return {
    name: peer.name,
    push: (ref, file) => peer.push(ref, file),
    pull: (ref, outDir) => sync(peer.pull(ref, outDir), outDir),
  };
}

// curl moves the blob alone (no manifest): its reference is `<registry>/<repo>@<digest>`.
function curlTool(): Tool {
  const script = (body: string) => ["sh", "-c", body];
  return {
    name: "curl",
    push: (ref, file) => {
      const [host, repo] = splitRef(ref);
      return script(
        `d=sha256:$(openssl dgst -sha256 -r '${file}' | cut -d' ' -f1) && ` +
          `loc=$(curl -sf -X POST -o /dev/null -w '%header{location}' ` +
          `'http://${host}/v2/${repo}/blobs/uploads/') && ` +
          `case $loc in http*) ;; *) loc="http://${host}$loc" ;; esac && ` +
          `case $loc in *\\?*) sep='&' ;; *) sep='?' ;; esac && ` +
          `curl -sf -o /dev/null -T '${file}' -X PUT -H 'Content-Type: application/octet-stream' ` +
          `"$loc\${sep}digest=$d"`,
      );
    },
    pull: (ref, outDir) => {
      const [host, repo, digest] = splitRef(ref);
      const fsync = FSYNC_PEERS ? ` && sync -d '${outDir}/blob'` : "";
      return script(
        `curl -sf -o '${outDir}/blob' 'http://${host}/v2/${repo}/blobs/${digest}'${fsync} && ` +
          `openssl dgst -sha256 '${outDir}/blob' >/dev/null`,
      );
    },
  };
}

function splitRef(ref: string): [string, string, string] {
  const slash = ref.indexOf("/");
  const [name, digest = ""] = ref.slice(slash + 1).split("@");
  return [ref.slice(0, slash), name.replace(/:[^/]*$/, ""), digest];
}

const peers = await findPeers();
const tools: Tool[] = [ocipart("ocipart", new URL("..", import.meta.url).pathname)];
if (typeof values.baseline === "string") tools.push(ocipart("baseline", values.baseline));
tools.push(...peers.map(peerTool), curlTool());

const dir = await Deno.makeTempDir({ prefix: "ocipart-peers-" });
await using registry = await startRegistry();
// /proc reports CPU in USER_HZ ticks, 100 per second on Linux.
const clk = 100;
const registryCpu = async () => {
  const fields = (await Deno.readTextFile(`/proc/${registry.pid}/stat`)).split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clk;
};

console.log(`# CPU: ${await cpuLine()}`);
console.log(
  `# ${(await measure(["nproc"])).stdout.trim()} cores; runs ${RUNS}; flags: ${
    FLAGS.join(" ") || "none"
  }`,
);
console.log(peersNote(peers));
if (DROP_CACHES) console.log("# the page cache emptied before each operation, its input read back");
const version = [...cliCommand(new URL("../cli.ts", import.meta.url).pathname), "--version"];
// Untimed first: a checkout the runtime has not loaded before is transpiled (about 20 MiB more,
// and time), which no timed operation should pay.
await measure(version);
if (typeof values.baseline === "string") {
  await measure([...cliCommand(`${values.baseline}/cli.ts`), "--version"]);
}
const loaded = await measure(version);
console.log(`# the loaded CLI (--version): peak RSS ${loaded.peakRssMiB.toFixed(0)} MiB`);

interface Row {
  m: Measurement;
  registryCpu: number;
}

// With --drop-caches: an empty page cache, then `warm` read into it (untimed).
async function settle(warm: string[]): Promise<void> {
  await measure(["sync"]);
  if (!DROP_CACHES) return;
  await Deno.writeTextFile("/proc/sys/vm/drop_caches", "1");
  if (warm.length > 0) await measure(["sh", "-c", 'cat "$@" > /dev/null', "warm", ...warm]);
}

// The blob files the registry stored after `since` (a marker file's time).
async function storedSince(since: string): Promise<string[]> {
  const found = await measure(["find", registry.storageDir, "-name", "data", "-newer", since]);
  return found.stdout.split("\n").filter((line) => line !== "");
}

async function timed(command: string[]): Promise<Row> {
  const before = await registryCpu();
  const m = await measure(command);
  if (m.code !== 0) {
    throw new Error(`${command.slice(0, 4).join(" ")} failed: ${m.stderr.slice(-1500)}`);
  }
  const row = { m, registryCpu: (await registryCpu()) - before };
  await measure(["sync"]);
  return row;
}

async function freshSource(path: string, size: number): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true });
  try {
    if ((await file.stat()).size !== size) {
      await measure(["sh", "-c", `head -c ${size} /dev/urandom > '${path}'`]);
    }
    await file.write(crypto.getRandomValues(new Uint8Array(16)));
  } finally {
    file.close();
  }
}

try {
  let serial = 0;
  for (const size of SIZES) {
    const src = `${dir}/src.bin`;
    const rows = new Map<string, Row[]>();
    const add = (key: string, row: Row) => rows.set(key, [...(rows.get(key) ?? []), row]);
    for (let run = 0; run < RUNS; run++) {
      const order = tools.map((_, i) => tools[(i + run) % tools.length]);
      for (const tool of order) {
        await freshSource(src, size);
        const repo = `bench/${tool.name}-${serial++}`;
        const marker = `${dir}/pushed-after`;
        await Deno.writeFile(marker, new Uint8Array());
        await settle([src]);
        add(`push ${tool.name}`, await timed(tool.push(`${registry.host}/${repo}:v1`, src)));
        const stored = await storedSince(marker);
        if (DROP_CACHES) await settle(stored);
        const outDir = await Deno.makeTempDir({ dir });
        const ref = tool.name === "curl"
          ? `${registry.host}/${repo}@sha256:${await sha256Hex(src)}`
          : `${registry.host}/${repo}:v1`;
        add(`pull ${tool.name}`, await timed(tool.pull(ref, outDir)));
        await Deno.remove(outDir, { recursive: true });
        // Every push is of new bytes: the disk holds one push's blobs at a time (an 8 GiB run
        // of six tools, twice, would otherwise need 96 GiB).
        for (const path of stored) await Deno.remove(path);
      }
    }
    const results = medians(rows);
    printTable(size, results);
    printTargets(size, results, await measureFloors(src, size, dir, settle));
  }
} finally {
  // A failed operation (a full disk, a tool that refused) leaves no file behind.
  await Deno.remove(dir, { recursive: true });
}

async function sha256Hex(path: string): Promise<string> {
  return (await measure(["openssl", "dgst", "-sha256", "-r", path])).stdout.split(" ")[0];
}

function medians(rows: Map<string, Row[]>): Map<string, Result> {
  const results = new Map<string, Result>();
  for (const [key, list] of rows) {
    results.set(key, {
      wall: median(list.map((r) => r.m.wallSeconds)),
      cpu: median(list.map((r) => r.m.cpuSeconds)),
      // A memory bound is kept only if every run keeps it: the highest peak, not the median.
      rss: Math.max(...list.map((r) => r.m.peakRssMiB)),
      registryCpu: median(list.map((r) => r.registryCpu)),
    });
  }
  return results;
}

function printTable(size: number, results: Map<string, Result>): void {
  const gib = size / GIB;
  console.log(`\n### ${formatSize(size)}, medians of ${RUNS} (peak RSS: the highest)\n`);
  console.log(
    "| op | tool | wall s | MB/s | CPU s/GiB | peak RSS MiB | registry CPU s | wall / ocipart | CPU / ocipart |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const op of ["push", "pull"]) {
    const base = results.get(`${op} ocipart`)!;
    for (const tool of tools) {
      const { wall, cpu, rss, registryCpu: reg } = results.get(`${op} ${tool.name}`)!;
      console.log(
        `| ${op} | ${tool.name} | ${wall.toFixed(2)} | ${(size / 1e6 / wall).toFixed(0)} | ` +
          `${(cpu / gib).toFixed(2)} | ${rss.toFixed(0)} | ${reg.toFixed(2)} | ` +
          `${(wall / base.wall).toFixed(2)}× | ${(cpu / base.cpu).toFixed(2)}× |`,
      );
    }
  }
}

function formatSize(size: number): string {
  return size % GIB === 0 ? `${size / GIB} GiB` : `${(size / (1 << 20)).toFixed(0)} MiB`;
}
