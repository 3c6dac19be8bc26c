/**
 * The bandwidth cap's sweep on CNCF Distribution over loopback, in one run: a parted push and
 * pull (8 workers, 8 parts) uncapped and at each `--caps` rate, each its own process. A cap the
 * link cannot reach should cost nothing (time against the uncapped run of the same file); a
 * cap that binds should be what the transfer achieves (rate against the cap). A binding cap moves
 * `cap × --seconds` bytes (at most `--size`), so the slow rates stay short. Times are the
 * operation's own (printed by `_parted_op.ts`), without the process's start-up; the achieved
 * rate is the file's bytes over the flow, the time between entering and leaving the uploading or
 * downloading phase (the push's hashing before its first upload and the pull's commit are not
 * the cap's), and the steady rate between 10 % and 90 % of the bytes (without the requests'
 * start and end). Prints a markdown table beside the CPU line.
 *
 * Usage: `deno run -A bench/caps_bench.ts [--size 1GiB] [--seconds 4]
 * [--caps 10MiB,100MiB,300MiB,1GiB,2GiB] [--runs 3]` (medians; each run goes round every
 * scenario in turn).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { cpuLine } from "./_cpu.ts";
import { measure, type Measurement, median } from "./_measure.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "1GiB" },
    seconds: { type: "string", default: "4" },
    caps: { type: "string", default: "10MiB,100MiB,300MiB,1GiB,2GiB" },
    runs: { type: "string", default: "3" },
  },
  strict: false,
});

const MiB = 1 << 20;
const UNITS: Record<string, number> = { MiB, GiB: 1 << 30 };
function bytes(text: string): number {
  const m = /^(\d+)(MiB|GiB)$/.exec(text);
  if (m === null) throw new RangeError(`bad size ${text}: use e.g. 512MiB or 1GiB`);
  return Number(m[1]) * UNITS[m[2]];
}

const SIZE = bytes(String(values.size));
const SECONDS = Number(values.seconds);
const RUNS = Number(values.runs);
const WORKERS = 8;
const DENO = Deno.execPath();
const OP = new URL("./_parted_op.ts", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "ocipart-caps-" });

interface Scenario {
  label: string;
  /** Bytes per second; undefined for uncapped. */
  cap: number | undefined;
  size: number;
}

const scenarios: Scenario[] = [{ label: "uncapped", cap: undefined, size: SIZE }];
for (const text of String(values.caps).split(",")) {
  const cap = bytes(text);
  // Whole MiB, so 8 parts of whole MiB.
  const size = Math.min(SIZE, Math.ceil((cap * SECONDS) / (WORKERS * MiB)) * WORKERS * MiB);
  scenarios.push({ label: `${text}/s`, cap, size });
}

/** The operation's own seconds (`transfer`) or its bytes' (`flow`), as it printed them. */
function reported(m: Measurement, what: string, name = "transfer"): number {
  if (m.code !== 0) throw new Error(`${what} failed (${m.code}): ${m.stderr.slice(-2000)}`);
  const found = new RegExp(`^${name} ([\\d.]+)$`, "m").exec(m.stderr);
  if (found === null) throw new Error(`${what}: no ${name} time in ${m.stderr.slice(-500)}`);
  return Number(found[1]);
}

interface Result {
  scenario: Scenario;
  op: "push" | "pull";
  seconds: number;
  flow: number;
  /** Bytes per second between 10 % and 90 % of the bytes. */
  steady: number;
  cpu: number;
}

/** One push and one pull of `s` on a fresh registry (nothing deduplicated). */
async function runOnce(s: Scenario, seed: number): Promise<[Measurement, Measurement]> {
  const src = `${dir}/src.bin`;
  const out = `${dir}/out.bin`;
  await writePatternFile(src, s.size, seed);
  const part = String(s.size / WORKERS);
  const rate = s.cap === undefined ? "0" : String(s.cap);
  const registry = await startRegistry();
  try {
    const ref = `${registry.host}/bench/caps:v1`;
    const push = await measure([DENO, "run", "-A", OP, "push", ref, src, part, "8", rate]);
    reported(push, `push ${s.label}`);
    // The pull reads the registry's files from the page cache, as the push left them.
    await new Deno.Command("sh", {
      args: ["-c", `find '${registry.storageDir}' -type f -name data -exec cat {} + >/dev/null`],
    }).output();
    const pull = await measure([DENO, "run", "-A", OP, "pull", ref, out, part, "8", rate]);
    reported(pull, `pull ${s.label}`);
    return [push, pull];
  } finally {
    await registry.stop();
    await Deno.remove(src).catch(() => {});
    await Deno.remove(out).catch(() => {});
  }
}

function result(s: Scenario, op: "push" | "pull", all: Measurement[]): Result {
  return {
    scenario: s,
    op,
    seconds: median(all.map((m) => reported(m, op))),
    flow: median(all.map((m) => reported(m, op, "flow"))),
    steady: median(all.map((m) => /^steady ([\d.]+)$/m.exec(m.stderr)?.[1]).map(Number)),
    cpu: median(all.map((m) => m.cpuSeconds)),
  };
}

try {
  await new Deno.Command(DENO, { args: ["cache", OP], stdout: "null", stderr: "null" }).output();
  // Runs go round every scenario in turn, so a machine whose speed drifts shifts them alike.
  const runs = scenarios.map(() => ({ push: [] as Measurement[], pull: [] as Measurement[] }));
  for (let run = 0; run < RUNS; run++) {
    for (const [i, s] of scenarios.entries()) {
      console.error(`run ${run + 1}, ${s.label}: ${s.size / MiB} MiB`);
      const [push, pull] = await runOnce(s, 60 + i);
      runs[i].push.push(push);
      runs[i].pull.push(pull);
    }
  }
  const results = scenarios.flatMap((s, i) => [
    result(s, "push", runs[i].push),
    result(s, "pull", runs[i].pull),
  ]);
  console.log(
    `\ncaps sweep: parted push and pull, 8 workers, 8 parts, medians of ${RUNS}; ` +
      `CPU: ${await cpuLine()}\n`,
  );
  console.log(
    "| cap | op | MiB | time s | time / uncapped | flow s | flow MiB/s | flow / cap | steady / cap | CPU s |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  const uncapped = (op: string) =>
    results.find((r) => r.op === op && r.scenario.cap === undefined)!;
  for (const r of results) {
    const rate = r.scenario.size / r.flow;
    const base = uncapped(r.op);
    const cap = r.scenario.cap;
    const toCap = cap === undefined ? "—" : `${(rate / cap).toFixed(3)}×`;
    const steady = cap === undefined ? "—" : `${(r.steady / cap).toFixed(3)}×`;
    const toUncapped = r.scenario.size === base.scenario.size
      ? `${(r.seconds / base.seconds).toFixed(3)}×`
      : "—";
    console.log(
      `| ${r.scenario.label} | ${r.op} | ${r.scenario.size / MiB} | ${
        r.seconds.toFixed(2)
      } | ${toUncapped} | ${r.flow.toFixed(2)} | ${
        (rate / MiB).toFixed(0)
      } | ${toCap} | ${steady} | ${r.cpu.toFixed(2)} |`,
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
