/**
 * Pipes against files, through the CLI on Distribution on loopback: a pull to standard output
 * (`pull ref -`, read by `cat > /dev/null`) against a pull to a file, and a push from standard
 * input (`cat file | push ref -`) against a push of the file; each the median of `--runs`, with
 * wall time and the CLI's peak RSS.
 *
 * Usage: `deno run -A bench/pipes_bench.ts [--size 2GiB] [--runs 3]`.
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
  options: { size: { type: "string", default: "2GiB" }, runs: { type: "string", default: "3" } },
  strict: false,
});
// The CLI's own size syntax (512MiB, 2GiB, 1G).
const SIZE = parseSize(String(values.size));
const RUNS = Number(values.runs);
const CLI = `${Deno.execPath()} run -A ${new URL("../cli.ts", import.meta.url).pathname}`;

const dir = await Deno.makeTempDir({ prefix: "ocipart-pipes-" });
const file = `${dir}/src.bin`;
await writePatternFile(file, SIZE, 3);
await using registry = await startRegistry();
const sh = (script: string) => measure(["sh", "-c", script]);
const ok = (m: Measurement, what: string) => {
  if (m.code !== 0) throw new Error(`${what} failed: ${m.stderr.slice(-1500)}`);
  return m;
};

const rows: Record<string, Measurement[]> = {};
const add = (name: string, m: Measurement) => (rows[name] ??= []).push(m);
for (let i = 0; i < RUNS; i++) {
  const ref = (kind: string) => `${registry.host}/pipes/${kind}${i}:v1`;
  add("push of the file", ok(await sh(`${CLI} push --plain-http ${ref("f")} ${file}`), "push"));
  add(
    "push from standard input",
    ok(await sh(`cat ${file} | ${CLI} push --plain-http --name src.bin ${ref("s")} -`), "push -"),
  );
  await Deno.remove(`${dir}/out.bin`).catch(() => {});
  add(
    "pull to a file",
    ok(await sh(`${CLI} pull --plain-http ${ref("f")} ${dir}/out.bin`), "pull"),
  );
  add(
    "pull to standard output",
    ok(await sh(`${CLI} pull --plain-http ${ref("f")} - | cat > /dev/null`), "pull -"),
  );
}
console.log(`CPU: ${await cpuLine()}`);
console.log(`${values.size}, medians of ${RUNS}; peak RSS of the shell's largest process\n`);
console.log("| operation | wall | peak RSS |");
console.log("| --- | ---: | ---: |");
for (const [name, all] of Object.entries(rows)) {
  const wall = median(all.map((m) => m.wallSeconds));
  const rss = median(all.map((m) => m.peakRssMiB));
  console.log(`| ${name} | ${wall.toFixed(2)} s | ${rss.toFixed(0)} MiB |`);
}
const ratio = (a: string, b: string) =>
  median(rows[a].map((m) => m.wallSeconds)) / median(rows[b].map((m) => m.wallSeconds));
console.log(
  `\nstdout pull throughput: ${
    (100 / ratio("pull to standard output", "pull to a file")).toFixed(0)
  } % of a pull to a file`,
);
console.log(
  `stdin push wall: ${
    ratio("push from standard input", "push of the file").toFixed(2)
  }× the push of the file`,
);
await Deno.remove(dir, { recursive: true });
