/**
 * Two pulls, one destination: two child processes pull into the same destination at seeded,
 * overlapping instants, through a pass-through fault proxy that slows every blob GET so the
 * pulls overlap.
 *
 * API:
 * - `runTwoPulls({ seed, trials, fileSize, partSize }) → Promise<TwoPullsReport>` — pushes two
 *   different files, then per trial starts a pull of one artifact and, after a seeded delay in
 *   [0, 1.2 × an unhindered pull), a pull of the other (every fourth trial: the same artifact)
 *   into the same destination. Each pull must succeed or be refused as "in use by another
 *   pull"; afterwards the destination must be absent or exactly one of the two artifacts, and
 *   a refused pull must not have changed anything the other committed.
 * - `TwoPullsReport`: trials, how many overlapped (one refused), how many ran one after the
 *   other (both succeeded), corrupt commits (destination matching neither artifact), failures.
 *
 * @module
 */
import { PartedClient } from "../../src/parted/client.ts";
import { fromFile } from "../../src/parted/fs_source.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { randomInt, seededRandom } from "../fixtures/random.ts";
import { startRegistry } from "../fixtures/registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { recordText } from "./leak_scan.ts";

/** The outcome of a two-pulls run. */
export interface TwoPullsReport {
  seed: number;
  trials: number;
  refusedAsInUse: number;
  bothCompleted: number;
  corruptCommits: number;
  failures: string[];
}

const DRIVER = new URL("./driver.ts", import.meta.url).pathname;

interface Run {
  code: number;
  stderr: string;
  ms: number;
}

async function runDriver(args: string[], startAfterMs = 0): Promise<Run> {
  if (startAfterMs > 0) await new Promise((r) => setTimeout(r, startAfterMs));
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", DRIVER, ...args],
    stdout: "null",
    stderr: "piped",
    stdin: "null",
  }).output();
  return {
    code: output.code,
    stderr: new TextDecoder().decode(output.stderr),
    ms: performance.now() - started,
  };
}

/** See the module doc. */
export async function runTwoPulls(options: {
  seed: number;
  trials: number;
  fileSize: number;
  partSize: number;
}): Promise<TwoPullsReport> {
  const { seed, fileSize, partSize } = options;
  const random = seededRandom(seed);
  const report: TwoPullsReport = {
    seed,
    trials: 0,
    refusedAsInUse: 0,
    bothCompleted: 0,
    corruptCommits: 0,
    failures: [],
  };
  const dir = await makeTempDir("ocipart-two-pulls-");
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url, seed });
  const secrets = [registry.host, proxy.host, dir];
  using client = new PartedClient({ plainHttp: true });
  try {
    const refs: string[] = [];
    const digests: string[] = [];
    for (const name of ["a", "b"]) {
      const file = `${dir}/${name}.bin`;
      digests.push(await writePatternFile(file, fileSize, seed + name.charCodeAt(0)));
      const pushed = await client.push(`${proxy.host}/two/${name}:v1`, fromFile(file), {
        partSize,
      });
      refs.push(`${proxy.host}/two/${name}@${pushed.digest}`);
    }
    const calibration = await runDriver(["pull", refs[0], `${dir}/cal.bin`]);
    if (calibration.code !== 0) throw new Error(`calibration pull failed: ${calibration.stderr}`);
    // Slow every blob GET so that two pulls overlap for most of their run.
    proxy.fault({ method: "GET", path: /\/blobs\/sha256:/, delayMs: 40, times: Infinity });

    for (let i = 0; i < options.trials; i++) {
      report.trials++;
      const dest = `${dir}/dest-${i}.bin`;
      const second = i % 4 === 3 ? 0 : 1;
      const delay = randomInt(random, 0, Math.ceil(calibration.ms * 1.2));
      const [first, other] = await Promise.all([
        runDriver(["pull", refs[0], dest]),
        runDriver(["pull", refs[second], dest], delay),
      ]);
      recordText(`two pulls ${seed}/${i}`, first.stderr + other.stderr, secrets);
      const where = `trial ${i} (seed ${seed}, delay ${delay})`;
      for (const run of [first, other]) {
        if (run.code !== 0 && !run.stderr.includes("in use by another pull")) {
          report.failures.push(`${where}: a pull failed otherwise: ${run.stderr.trim()}`);
        }
      }
      const refused = [first, other].filter((r) => r.code !== 0).length;
      if (refused === 2) report.failures.push(`${where}: both pulls were refused`);
      if (refused === 1) report.refusedAsInUse++;
      if (refused === 0) report.bothCompleted++;
      const digest = await sha256File(dest).catch(() => undefined);
      if (digest === undefined) {
        report.failures.push(`${where}: no destination although a pull succeeded`);
      } else if (!digests.includes(digest)) {
        report.corruptCommits++;
        report.failures.push(`${where}: CORRUPT destination (matches neither artifact)`);
      } else if (refused === 1) {
        // The pull that was not refused is the one whose bytes must be there.
        const winner = first.code === 0 ? 0 : second;
        if (digest !== digests[winner]) {
          report.failures.push(`${where}: the refused pull changed the destination`);
        }
      }
      await Deno.remove(dest).catch(() => {});
      await Deno.remove(`${dest}.parted-partial`).catch(() => {});
    }
  } finally {
    await removeDir(dir);
  }
  return report;
}
