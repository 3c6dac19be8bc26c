/**
 * This checkout against another version of the project, in one run on one registry: cold push,
 * re-push, cold pull and resume of the same file, the two versions alternating run by run so
 * that a change in the machine's state hits both alike. Prints medians, the ratio of this
 * checkout to the other, and each one's CPU seconds and peak RSS.
 *
 * Usage: `deno run -A bench/compare_bench.ts --baseline DIR [--size 2GiB] [--runs 5]
 * [--hash-threads N]`, where
 * DIR is a checkout of the other version (e.g. `git worktree add /tmp/base <commit>`). Without
 * `--baseline` it prints how to call it and exits 0, so `deno task bench` can run it.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseSize } from "../src/cli/arguments/size.ts";
import { measure, type Measurement, median } from "./_measure.ts";
import { cpuLine } from "./_cpu.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    baseline: { type: "string" },
    size: { type: "string", default: "2GiB" },
    runs: { type: "string", default: "5" },
    "hash-threads": { type: "string", default: "" },
  },
  strict: false,
});
if (typeof values.baseline !== "string") {
  console.log("compare_bench: give --baseline DIR (a checkout of the version to compare with)");
  Deno.exit(0);
}
// The CLI's own size syntax (512MiB, 2GiB, 1G).
const SIZE = parseSize(String(values.size));
const RUNS = Number(values.runs);
const DENO = Deno.execPath();
const VERSIONS = {
  this: new URL("./_parted_op.ts", import.meta.url).pathname,
  baseline: `${values.baseline}/bench/_parted_op.ts`,
} as const;
type Version = keyof typeof VERSIONS;
const dir = await Deno.makeTempDir({ prefix: "ocipart-compare-" });
const src = `${dir}/src.bin`;
const out = `${dir}/out.bin`;

// `--hash-threads N` gives both versions the same hashing mode (else each its own default).
const HASH_THREADS = String(values["hash-threads"]);

function op(version: Version, ...args: string[]): Promise<Measurement> {
  const [verb, ref, path] = args;
  const command = [DENO, "run", "-A", VERSIONS[version], verb, ref, path, "", "", "", HASH_THREADS];
  return measure(command).then((m) => {
    if (m.code !== 0) throw new Error(`${version} ${args[0]} failed: ${m.stderr.slice(-2000)}`);
    return m;
  });
}

/** Runs `scenario` for both versions, alternating, `RUNS` times each; medians per version. */
async function alternate(
  scenario: (version: Version) => Promise<Measurement>,
): Promise<Record<Version, { wall: number; cpu: number; rss: number }>> {
  const runs: Record<Version, Measurement[]> = { this: [], baseline: [] };
  for (let i = 0; i < RUNS; i++) {
    // Which goes first alternates too, so neither always meets a warmer machine.
    const order: Version[] = i % 2 === 0 ? ["baseline", "this"] : ["this", "baseline"];
    for (const version of order) runs[version].push(await scenario(version));
  }
  const summary = (all: Measurement[]) => ({
    wall: median(all.map((m) => m.wallSeconds)),
    cpu: median(all.map((m) => m.cpuSeconds)),
    rss: median(all.map((m) => m.peakRssMiB)),
  });
  return { this: summary(runs.this), baseline: summary(runs.baseline) };
}

async function dropOut(storageDir: string): Promise<void> {
  await Deno.remove(out).catch(() => {});
  await Deno.remove(`${out}.parted-partial`).catch(() => {});
  // The registry's blobs in the page cache for every pull, so no pull measures the disk.
  await new Deno.Command("sh", {
    args: ["-c", `find '${storageDir}' -type f -name data -exec cat {} + > /dev/null`],
  }).output();
}

try {
  for (const path of Object.values(VERSIONS)) {
    await new Deno.Command(DENO, { args: ["cache", path], stdout: "null" }).output();
  }
  await writePatternFile(src, SIZE, 42);
  const rows: [string, Record<Version, { wall: number; cpu: number; rss: number }>][] = [];
  rows.push([
    "cold push",
    await alternate(async (version) => {
      const registry = await startRegistry();
      try {
        return await op(version, "push", `${registry.host}/bench/file:v1`, src);
      } finally {
        await registry.stop();
      }
    }),
  ]);
  const registry = await startRegistry();
  try {
    const ref = `${registry.host}/bench/file:v1`;
    await op("this", "push", ref, src);
    rows.push(["re-push", await alternate((version) => op(version, "push", ref, src))]);
    rows.push([
      "cold pull",
      await alternate(async (version) => {
        await dropOut(registry.storageDir);
        return await op(version, "pull", ref, out);
      }),
    ]);
    rows.push([
      "resume, complete partial",
      await alternate(async (version) => {
        await dropOut(registry.storageDir);
        await Deno.copyFile(src, `${out}.parted-partial`);
        return await op(version, "pull", ref, out);
      }),
    ]);
  } finally {
    await registry.stop();
  }
  console.log(`\nthis checkout against ${values.baseline}: ${SIZE} bytes, medians of ${RUNS}`);
  console.log(`CPU: ${await cpuLine()}\n`);
  console.log(
    "| scenario | this (s) | baseline (s) | ratio | CPU s this / baseline | RSS MiB this / baseline |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const [name, r] of rows) {
    console.log(
      `| ${name} | ${r.this.wall.toFixed(2)} | ${r.baseline.wall.toFixed(2)} | ${
        (r.this.wall / r.baseline.wall).toFixed(3)
      }× | ${r.this.cpu.toFixed(2)} / ${r.baseline.cpu.toFixed(2)} | ${r.this.rss.toFixed(0)} / ${
        r.baseline.rss.toFixed(0)
      } |`,
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
