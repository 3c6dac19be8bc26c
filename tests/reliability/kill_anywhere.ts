/**
 * Kill anywhere: pushes and pulls of a multi-part file run in a child process that is
 * SIGKILLed after a seeded random delay, then rerun to completion.
 *
 * API:
 * - `runKillAnywhere({ seed, pushes, pulls, fileSize, partSize }) → Promise<KillReport>` —
 *   starts a real Distribution behind a pass-through fault proxy (to count requests), then:
 *   - push: each trial pushes a fresh file (its own pattern seed) and kills it after a delay
 *     drawn from [0, 1.3 × the measured duration of an unkilled push); then checks which
 *     parts the registry holds (HEAD), reruns the push to completion and counts the rerun's
 *     upload PUTs: they must equal the number of parts (and config) that were missing.
 *   - pull: each trial pulls the pushed artifact (by digest) and kills it likewise; after the
 *     kill the destination must be absent or complete with the right sha256, never partial;
 *     the rerun must complete with the right sha256.
 *   Every rerun's standard error is leak-scanned.
 * - `KillReport`: counts of trials, kills that landed before the child finished, reruns
 *   completed, destinations seen complete after a kill, PUTs saved by resume, failures.
 *
 * @module
 */
import { PartedClient } from "../../src/parted/client.ts";
import { fromFile } from "../../src/parted/fs_source.ts";
import { planParts } from "../../src/parted/plan.ts";
import { EMPTY_CONFIG_DESCRIPTOR } from "../../src/registry/media_types.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { randomInt, seededRandom } from "../fixtures/random.ts";
import { startRegistry } from "../fixtures/registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { sliceDigest } from "../parted/_helpers.ts";
import { recordText } from "./leak_scan.ts";
import { exists } from "../fixtures/expect.ts";

/** The outcome of a kill-anywhere run. */
export interface KillReport {
  seed: number;
  pushes: number;
  pulls: number;
  killedMidway: number;
  rerunsCompleted: number;
  destCompleteAfterKill: number;
  destAbsentAfterKill: number;
  partsPresentBeforeRerun: number;
  putsOnRerun: number;
  failures: string[];
}

const DRIVER = new URL("./driver.ts", import.meta.url).pathname;

interface Run {
  code: number | "killed";
  stderr: string;
  ms: number;
}

async function runDriver(args: string[], killAfterMs?: number): Promise<Run> {
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", DRIVER, ...args],
    stdout: "null",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let killed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (killAfterMs !== undefined) {
    timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
        killed = true;
      } catch { /* already exited */ }
    }, killAfterMs);
  }
  // A per-run watchdog: no child may outlive two minutes.
  const watchdog = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
  }, 120_000);
  const output = await child.output();
  clearTimeout(timer);
  clearTimeout(watchdog);
  const stderr = new TextDecoder().decode(output.stderr);
  return {
    code: killed && output.signal === "SIGKILL" ? "killed" : output.code,
    stderr,
    ms: performance.now() - started,
  };
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** See the module doc. */
export async function runKillAnywhere(options: {
  seed: number;
  pushes: number;
  pulls: number;
  fileSize: number;
  partSize: number;
}): Promise<KillReport> {
  const { seed, fileSize, partSize } = options;
  const random = seededRandom(seed);
  const report: KillReport = {
    seed,
    pushes: 0,
    pulls: 0,
    killedMidway: 0,
    rerunsCompleted: 0,
    destCompleteAfterKill: 0,
    destAbsentAfterKill: 0,
    partsPresentBeforeRerun: 0,
    putsOnRerun: 0,
    failures: [],
  };
  const dir = await makeTempDir("ocipart-kill-");
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url, seed });
  const secrets = [registry.host, proxy.host, dir];
  using client = new PartedClient({ plainHttp: true });
  try {
    const parts = planParts(fileSize, partSize);
    // Calibrate: one unkilled push and pull give the range of kill delays.
    const base = `${dir}/base.bin`;
    const baseDigest = await writePatternFile(base, fileSize, seed);
    const pushRun = await runDriver(["push", `${proxy.host}/kill/base:v1`, base, String(partSize)]);
    if (pushRun.code !== 0) throw new Error(`calibration push failed: ${pushRun.stderr}`);
    const manifestDigest = (await client.push(`${proxy.host}/kill/base:v1`, fromFile(base), {
      partSize,
    })).digest;
    const pullRun = await runDriver([
      "pull",
      `${proxy.host}/kill/base@${manifestDigest}`,
      `${dir}/cal.bin`,
    ]);
    if (pullRun.code !== 0) throw new Error(`calibration pull failed: ${pullRun.stderr}`);
    await Deno.remove(`${dir}/cal.bin`);

    for (let i = 0; i < options.pushes; i++) {
      report.pushes++;
      const file = `${dir}/push-${i}.bin`;
      await writePatternFile(file, fileSize, seed * 1000 + i + 1);
      const ref = `${proxy.host}/kill/push${i % 4}:t${i}`;
      const repository = `kill/push${i % 4}`;
      const delay = randomInt(random, 0, Math.ceil(pushRun.ms * 1.3));
      const first = await runDriver(["push", ref, file, String(partSize)], delay);
      if (first.code === "killed") report.killedMidway++;
      // A PUT whose body reached the registry whole before the kill is still committed after
      // the child is gone: count what is missing once the registry has answered everything.
      if (!(await settlesWithin(proxy.writesAnswered(), 60_000))) {
        report.failures.push(
          `push ${i} (seed ${seed}): the registry never answered the killed push`,
        );
        continue;
      }
      // Which parts did the killed push land?
      const digests = await Promise.all(parts.map((p) => sliceDigest(file, p.offset, p.size)));
      let present = 0;
      for (const digest of digests) if (await headBlob(registry.url, repository, digest)) present++;
      const configPresent = await headBlob(
        registry.url,
        repository,
        EMPTY_CONFIG_DESCRIPTOR.digest,
      );
      report.partsPresentBeforeRerun += present;
      const putsBefore = proxy.count({ method: "PUT", path: /\/blobs\/uploads\// });
      const rerun = await runDriver(["push", ref, file, String(partSize)]);
      const puts = proxy.count({ method: "PUT", path: /\/blobs\/uploads\// }) - putsBefore;
      report.putsOnRerun += puts;
      recordText(`kill push ${seed}/${i}`, rerun.stderr + first.stderr, secrets);
      if (rerun.code !== 0) {
        report.failures.push(`push ${i} (seed ${seed}, delay ${delay}): rerun failed`);
        continue;
      }
      report.rerunsCompleted++;
      const missing = parts.length - present + (configPresent ? 0 : 1);
      if (puts !== missing) {
        report.failures.push(
          `push ${i} (seed ${seed}, delay ${delay}): rerun made ${puts} PUTs for ${missing} missing blobs`,
        );
      }
      await Deno.remove(file);
    }

    for (let i = 0; i < options.pulls; i++) {
      report.pulls++;
      const dest = `${dir}/pull-${i}.bin`;
      const ref = `${proxy.host}/kill/base@${manifestDigest}`;
      const delay = randomInt(random, 0, Math.ceil(pullRun.ms * 1.3));
      const first = await runDriver(["pull", ref, dest], delay);
      if (first.code === "killed") report.killedMidway++;
      if (await exists(dest)) {
        if ((await sha256File(dest)) !== baseDigest) {
          report.failures.push(`pull ${i} (seed ${seed}, delay ${delay}): PARTIAL destination`);
        } else report.destCompleteAfterKill++;
      } else report.destAbsentAfterKill++;
      const rerun = await runDriver(["pull", ref, dest]);
      recordText(`kill pull ${seed}/${i}`, rerun.stderr + first.stderr, secrets);
      if (rerun.code !== 0) {
        report.failures.push(`pull ${i} (seed ${seed}, delay ${delay}): rerun failed`);
        continue;
      }
      if ((await sha256File(dest)) !== baseDigest) {
        report.failures.push(`pull ${i} (seed ${seed}): rerun produced wrong bytes`);
        continue;
      }
      if (await exists(`${dest}.parted-partial`)) {
        report.failures.push(`pull ${i} (seed ${seed}): partial left after success`);
      }
      report.rerunsCompleted++;
      await Deno.remove(dest);
    }
  } finally {
    await removeDir(dir);
  }
  return report;
}

async function headBlob(url: string, repository: string, digest: string): Promise<boolean> {
  const response = await fetch(`${url}/v2/${repository}/blobs/${digest}`, { method: "HEAD" });
  await response.body?.cancel();
  return response.status === 200;
}
