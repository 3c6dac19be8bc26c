/**
 * `deno task stress`: the reliability and security suite at full volume (minutes, not run by
 * CI). Prints a summary table and exits 1 on any failure. Reproduce with
 * `OCIPART_STRESS_SEED=<seed> deno task stress`; every failure line names its own seed.
 *
 * @module
 */
import { FUZZ_TARGETS, runFuzzTarget } from "../fuzz/fuzz.ts";
import { runManifestPullFuzz } from "../fuzz/manifest_pull.ts";
import { runFaultStorm } from "../reliability/fault_storm.ts";
import { runKillAnywhere } from "../reliability/kill_anywhere.ts";
import { runTwoPulls } from "../reliability/two_pulls.ts";
import { flushErrorCount, installErrorObserver } from "../fixtures/error_observer.ts";
import { formatLeakReport, scanLeakDir } from "../reliability/leak_report.ts";
import { runRssCheck } from "../reliability/rss.ts";

const SEED = Number(Deno.env.get("OCIPART_STRESS_SEED") ?? "20240607");
const rows: [string, string, string, number][] = [];
const failures: string[] = [];
const started = performance.now();

function row(name: string, count: string, detail: string, failed: string[]) {
  rows.push([name, count, detail, failed.length]);
  failures.push(...failed);
  console.error(`${name}: ${count} ${detail} — ${failed.length} failure(s)`);
}

console.error(`stress seed ${SEED}`);

// Every error the library builds in this process and in the kill-anywhere children (which
// inherit the directory) is collected and scanned for leaks at the end.
const leakDir = Deno.env.get("OCIPART_LEAK_SCAN_DIR") ||
  await Deno.makeTempDir({ prefix: "ocipart-stress-leaks-" });
const ownLeakDir = leakDir !== Deno.env.get("OCIPART_LEAK_SCAN_DIR");
installErrorObserver(leakDir);

const fuzzSeed = SEED;
for (const target of FUZZ_TARGETS) {
  const r = await runFuzzTarget(target, { seed: fuzzSeed, cases: 10_000 });
  row(
    `fuzz ${target.name}`,
    `${r.cases} cases`,
    `accepted ${r.accepted}, rejected ${r.rejected} (seed ${fuzzSeed})`,
    r.failures,
  );
}
const pulls = await runManifestPullFuzz({ seed: SEED, cases: 1000 });
row(
  "fuzz manifest pull",
  `${pulls.cases} pulls`,
  `rejected ${pulls.rejected}, pulled ${pulls.pulled}, blob GETs after unverified ${pulls.blobRequestsAfterUnverified}, destinations from unverified ${pulls.destinationsFromUnverified}`,
  pulls.failures,
);

const kills = await runKillAnywhere({
  seed: SEED,
  pushes: 50,
  pulls: 50,
  fileSize: 24 << 20,
  partSize: 1 << 20,
});
row(
  "kill anywhere (SIGKILL)",
  `${kills.pushes} pushes + ${kills.pulls} pulls`,
  `killed mid-transfer ${kills.killedMidway}, reruns completed ${kills.rerunsCompleted}, dest after kill: absent ${kills.destAbsentAfterKill} / complete ${kills.destCompleteAfterKill} / partial 0 allowed, parts already present ${kills.partsPresentBeforeRerun}, rerun PUTs ${kills.putsOnRerun} (= missing blobs)`,
  kills.failures,
);

const pairs = await runTwoPulls({
  seed: SEED,
  trials: 100,
  fileSize: 4 << 20,
  partSize: 256 << 10,
});
row(
  "two pulls, one destination",
  `${pairs.trials} pairs`,
  `overlapped (one refused, in use) ${pairs.refusedAsInUse}, one after the other ${pairs.bothCompleted}, corrupt commits ${pairs.corruptCommits}`,
  pairs.failures,
);

const storm = await runFaultStorm({
  seed: SEED,
  trials: 200,
  fileSize: 1 << 20,
  partSize: 128 << 10,
});
row(
  "fault storm",
  `${storm.trials} trials`,
  `completed ${storm.completed}, budget exhausted ${storm.exhausted}, faults fired ${storm.faultsApplied}, wire>size ${storm.redoneTrials}, mix ${
    JSON.stringify(storm.byFault)
  }`,
  storm.failures,
);

const rss = await runRssCheck({ transfers: 100, warmup: 20 });
const rssFailures = [...rss.failures];
if (rss.heapGrowthMiB >= 16) rssFailures.push(`heap grew ${rss.heapGrowthMiB} MiB`);
if (rss.growthMiB >= 160) rssFailures.push(`RSS grew ${rss.growthMiB} MiB`);
row(
  "RSS over small transfers",
  `${rss.transfers} push+pull`,
  `RSS after warm-up ${rss.warmupMiB} MiB, at end ${rss.endMiB} MiB, heap+external growth ${rss.heapGrowthMiB} MiB`,
  rssFailures,
);

flushErrorCount(); // this process has not unloaded yet
const leakReport = await scanLeakDir(leakDir);
if (ownLeakDir) await Deno.remove(leakDir, { recursive: true });
const leakFailures = leakReport.hits.map((hit) =>
  `leak [${hit.rules.join(", ")}] ${hit.where}: ${hit.text}`
);
if (leakReport.strings === 0) leakFailures.push("leak scan: nothing was collected");
row(
  "leak scan (whole run)",
  `${leakReport.strings} strings`,
  `${
    formatLeakReport(leakReport)
  }; rules: urls, hosts, host:port, queries, digests, hex runs, tokens, credentials, realms, registry and temp paths, planted secrets`,
  leakFailures,
);

const minutes = ((performance.now() - started) / 60_000).toFixed(1);
const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => String(r[i]).length), 8));
const line = (cells: string[]) => cells.map((c, i) => i < 3 ? c.padEnd(widths[i]) : c).join(" | ");
console.log(`\nocipart stress — seed ${SEED} — ${minutes} min`);
console.log(line(["scenario", "count", "detail", "failures"]));
console.log(widths.map((w) => "-".repeat(w)).join("-|-") + "-|---------");
for (const [a, b, c, d] of rows) console.log(line([a, b, c, String(d)]));
console.log(`\ntotal failures: ${failures.length}`);
for (const f of failures.slice(0, 50)) console.log(`  ${f}`);
Deno.exit(failures.length === 0 ? 0 : 1);
