/**
 * Fault storm: seeded trials of push and pull through the fault proxy in front of the real
 * registry, each with a random mix of dropped connections at random offsets, truncated bodies,
 * ignored ranges, 429 with and without Retry-After, 500/502/503, stalled bodies and hung
 * answers.
 *
 * API:
 * - `runFaultStorm({ seed, trials, fileSize, partSize }) → Promise<StormReport>`. Each trial
 *   (seed `seed + i`) scripts 1–3 faults, then runs a push of a fresh file or a pull of a
 *   pushed artifact in this process with a short backoff and a 400 ms stall timeout, under a
 *   per-trial watchdog. A trial passes when the transfer completes with the right bytes, or
 *   fails with `RetriesExhaustedError` (the budget ran out) leaving no destination; and when
 *   `wireBytes` equals the size if no fault fired and exceeds it only if one did.
 *   Every error is leak-scanned.
 * - `StormReport`: `{ seed, trials, completed, exhausted, faultsApplied, redoneTrials,
 *   byFault: Record<string, number>, failures }`.
 *
 * @module
 */
import { findError } from "../../src/errors/find_error.ts";
import { RetriesExhaustedError } from "../../src/errors/kinds.ts";
import { PartedClient } from "../../src/parted/client.ts";
import { fromFile } from "../../src/parted/fs_source.ts";
import { toFile } from "../../src/parted/fs_partial.ts";
import type { ProgressSnapshot } from "../../src/parted/progress.ts";
import { type FaultRule, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { randomInt, seededRandom } from "../fixtures/random.ts";
import { startRegistry } from "../fixtures/registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { recordErrors } from "./leak_scan.ts";

/** The outcome of a storm. */
export interface StormReport {
  seed: number;
  trials: number;
  completed: number;
  exhausted: number;
  faultsApplied: number;
  redoneTrials: number;
  byFault: Record<string, number>;
  failures: string[];
}

const TRIAL_WATCHDOG_MS = 60_000;
const BLOB = /\/blobs\/sha256:/;
const UPLOAD = /\/blobs\/uploads\//;

type Kind = "push" | "pull";

function chooseFault(random: () => number, kind: Kind, size: number): [string, FaultRule] {
  const nth = randomInt(random, 1, 6);
  const times = randomInt(random, 1, 5); // 5 consecutive hits exceed a budget of 4
  const menu: (() => [string, FaultRule])[] = [
    () => ["429", {
      method: kind === "push" ? "PUT" : "GET",
      path: kind === "push" ? UPLOAD : BLOB,
      nth,
      times,
      respond: { status: 429 },
    }],
    () => ["429+retry-after", {
      method: "HEAD",
      path: BLOB,
      nth,
      times: Math.min(times, 2),
      respond: { status: 429, headers: { "retry-after": "1" } },
    }],
    () => {
      const status = [500, 502, 503][randomInt(random, 0, 2)];
      const method = kind === "push" ? ["HEAD", "POST", "PUT"][randomInt(random, 0, 2)] : "GET";
      return [`${status}`, {
        method,
        path: kind === "push" ? /\/blobs\// : BLOB,
        nth,
        times,
        respond: { status },
      }];
    },
    () => ["manifest 503", {
      method: kind === "push" ? "PUT" : "GET",
      path: /\/manifests\//,
      times: Math.min(times, 3),
      respond: { status: 503 },
    }],
  ];
  if (kind === "pull") {
    menu.push(
      () => ["cut body", {
        method: "GET",
        path: BLOB,
        nth,
        times,
        cutAfter: (n) => randomInt(random, 0, Math.max(0, (n ?? size) - 1)),
      }],
      () => ["ignore range + cut", {
        method: "GET",
        path: BLOB,
        nth,
        times: 1,
        cutAfter: (n) => randomInt(random, 1, Math.max(1, (n ?? size) - 1)),
      }],
      () => ["stall body", {
        method: "GET",
        path: BLOB,
        nth,
        times: Math.min(times, 2),
        stallAfter: randomInt(random, 0, 4096),
      }],
    );
  } else {
    menu.push(
      () => ["drop request", {
        method: "PUT",
        path: UPLOAD,
        nth,
        times,
        cutRequestAfter: randomInt(random, 0, 60_000),
      }],
      () => ["hang", { method: "HEAD", path: BLOB, nth, times: Math.min(times, 2), hang: true }],
    );
  }
  return menu[randomInt(random, 0, menu.length - 1)]();
}

/** See the module doc. */
export async function runFaultStorm(options: {
  seed: number;
  trials: number;
  fileSize: number;
  partSize: number;
}): Promise<StormReport> {
  const { seed, fileSize, partSize } = options;
  const report: StormReport = {
    seed,
    trials: 0,
    completed: 0,
    exhausted: 0,
    faultsApplied: 0,
    redoneTrials: 0,
    byFault: {},
    failures: [],
  };
  const dir = await makeTempDir("ocipart-storm-");
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url, seed });
  const secrets = [registry.host, proxy.host, dir];
  using client = new PartedClient({
    plainHttp: true,
    retryPolicy: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 50 },
    stallTimeoutMs: 400,
  });
  try {
    const base = `${dir}/base.bin`;
    const baseDigest = await writePatternFile(base, fileSize, seed);
    const pushed = await client.push(`${proxy.host}/storm/base:v1`, fromFile(base), { partSize });
    for (let i = 0; i < options.trials; i++) {
      const trialSeed = (seed + i) >>> 0;
      const random = seededRandom(trialSeed);
      const kind: Kind = random() < 0.5 ? "push" : "pull";
      proxy.clearFaults();
      const names: string[] = [];
      for (let f = randomInt(random, 1, 3); f > 0; f--) {
        const [name, rule] = chooseFault(random, kind, partSize);
        if (name === "ignore range + cut") {
          // Cut one GET; every other blob GET ignores Range, so the continuation gets it all.
          proxy.fault(rule);
          proxy.fault({ method: "GET", path: BLOB, times: Infinity, ignoreRange: true });
        } else proxy.fault(rule);
        names.push(name);
      }
      const appliedBefore = proxy.faultsApplied;
      report.trials++;
      let last: ProgressSnapshot | undefined;
      const onProgress = (s: ProgressSnapshot) => {
        last = s;
      };
      const watchdog = AbortSignal.timeout(TRIAL_WATCHDOG_MS);
      const file = `${dir}/trial-${i}.bin`;
      let expected = baseDigest;
      let error: unknown;
      try {
        if (kind === "push") {
          expected = await writePatternFile(file, fileSize, trialSeed + 1_000_000);
          await client.push(`${proxy.host}/storm/push:t${i}`, fromFile(file), {
            partSize,
            workers: 3,
            onProgress,
            signal: watchdog,
          });
        } else {
          await client.pull(`${proxy.host}/storm/base@${pushed.digest}`, toFile(file), {
            workers: 3,
            onProgress,
            signal: watchdog,
          });
        }
      } catch (err) {
        error = err;
      }
      const applied = proxy.faultsApplied - appliedBefore;
      report.faultsApplied += applied;
      for (const name of names) report.byFault[name] = (report.byFault[name] ?? 0) + 1;
      const tag = `trial seed=${trialSeed} ${kind} [${names.join(", ")}]`;
      if (watchdog.aborted) {
        report.failures.push(`${tag}: HUNG (watchdog)`);
      } else if (error === undefined) {
        report.completed++;
        if (kind === "pull" && (await sha256File(file)) !== expected) {
          report.failures.push(`${tag}: wrong bytes`);
        }
        if (kind === "push") {
          // Pull it back (no faults) and compare.
          proxy.clearFaults();
          const back = `${file}.back`;
          await client.pull(`${proxy.host}/storm/push:t${i}`, toFile(back));
          if ((await sha256File(back)) !== expected) report.failures.push(`${tag}: wrong bytes`);
          await Deno.remove(back);
        }
        const wire = last?.wireBytes ?? -1;
        if (wire > fileSize) report.redoneTrials++;
        if (applied === 0 && wire !== fileSize) {
          report.failures.push(`${tag}: no fault fired but wireBytes ${wire} != ${fileSize}`);
        }
        if (wire < fileSize) report.failures.push(`${tag}: wireBytes ${wire} below the size`);
        if (wire > fileSize && applied === 0) report.failures.push(`${tag}: redo without fault`);
      } else {
        recordErrors(`storm ${tag}`, [error], secrets);
        if (findError(error, RetriesExhaustedError) === undefined) {
          report.failures.push(`${tag}: failed with ${String(error)}`);
        } else report.exhausted++;
        if (kind === "pull") {
          try {
            await Deno.lstat(file);
            report.failures.push(`${tag}: destination exists after failure`);
          } catch { /* absent, as required */ }
        }
      }
      await Deno.remove(file).catch(() => {});
      await Deno.remove(`${file}.parted-partial`).catch(() => {});
    }
  } finally {
    proxy.clearFaults();
    await removeDir(dir);
  }
  return report;
}
