/**
 * Pipes against files, through the CLI on Distribution on loopback: a pull to standard output
 * (`pull ref -`, read by `cat > /dev/null`) against a pull to a file, and a push from standard
 * input (`cat file | push ref -`) against a push of the file; each the median of `--runs`
 * (operations alternate within a run), with wall time, the CLI's peak RSS, the CPU seconds of the
 * command (the CLI and `cat` together) and those of the registry meanwhile: on loopback the two
 * cores are shared, so CPU work is time.
 *
 * `--rate MBIT` runs it on a per-connection-capped link instead (as root: `_netns.ts`).
 * `--compare CLI_TS` also runs the pipe operations with another build of the CLI (an older
 * checkout's `cli.ts`) in the same runs, for before and after figures side by side.
 * `--ops pull` or `--ops push` runs one half only; `--part-size` is passed to every push.
 * `--pin` puts the registry on the last core and every command on the others (taskset), as a
 * registry on another machine would be: its hashing no longer takes the commands' CPU.
 *
 * Usage: `deno run -A bench/pipes_bench.ts [--size 2GiB] [--runs 3] [--ops pull,push]
 * [--part-size 64MiB] [--rate 200] [--pin] [--compare ../other/cli.ts]`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseSize } from "../src/cli/arguments/size.ts";
import { flushWrites, measure, type Measurement, median } from "./_measure.ts";
import { cpuLine, onClientCores, pinToLastCore } from "./_cpu.ts";
import { capPorts, enterCappedNamespace } from "./_netns.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";
import { cliCommand } from "./_cli.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "2GiB" },
    runs: { type: "string", default: "3" },
    "part-size": { type: "string" },
    ops: { type: "string", default: "pull,push" },
    rate: { type: "string" },
    compare: { type: "string" },
    pin: { type: "boolean", default: false },
    inside: { type: "boolean", default: false },
  },
  strict: false,
});
if (values.rate !== undefined && !values.inside) {
  Deno.exit(await enterCappedNamespace(new URL(import.meta.url).pathname, Deno.args));
}
// The CLI's own size syntax (512MiB, 2GiB, 1G).
const SIZE = parseSize(String(values.size));
const RUNS = Number(values.runs);
const OPS = new Set(String(values.ops).split(","));
const cliOf = (path: string) => cliCommand(path).join(" ");
const CLI = cliOf(new URL("../cli.ts", import.meta.url).pathname);
const OTHER = typeof values.compare === "string" ? cliOf(values.compare) : undefined;
const PART = values["part-size"] === undefined ? "" : `--part-size ${values["part-size"]} `;

const dir = await Deno.makeTempDir({ prefix: "ocipart-pipes-" });
const file = `${dir}/src.bin`;
await writePatternFile(file, SIZE, 3);
await using registry = await startRegistry();
if (values.rate !== undefined) await capPorts([registry.port], Number(values.rate));
const PIN = values.pin === true;
if (PIN) await pinToLastCore(registry.pid);
// /proc reports CPU in USER_HZ ticks, 100 per second on Linux.
const registryCpu = async () => {
  const fields = (await Deno.readTextFile(`/proc/${registry.pid}/stat`)).split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
// A command's measurement with the registry's CPU seconds during it.
const registryCpus = new Map<Measurement, number>();
const sh = async (script: string) => {
  await flushWrites();
  const before = await registryCpu();
  const command = ["sh", "-c", script];
  const m = await measure(PIN ? onClientCores(command) : command);
  registryCpus.set(m, (await registryCpu()) - before);
  return m;
};
const ok = (m: Measurement, what: string) => {
  if (m.code !== 0) throw new Error(`${what} failed: ${m.stderr.slice(-1500)}`);
  return m;
};

const rows: Record<string, Measurement[]> = {};
const add = (name: string, m: Measurement) => (rows[name] ??= []).push(m);
const PUSH_FILE = "push of the file";
const PUSH_STDIN = "push from standard input";
const PULL_FILE = "pull to a file";
const PULL_STDOUT = "pull to standard output";
const COMPARED = " (compared CLI)";
for (let i = 0; i < RUNS; i++) {
  const ref = (kind: string) => `${registry.host}/pipes/${kind}${i}:v1`;
  const pushed = ref("f");
  ok(await sh(`${CLI} push --plain-http ${PART}${pushed} ${file}`), "push");
  if (OPS.has("push")) {
    const stdinPush = async (cli: string, label: string, kind: string) =>
      add(
        label,
        ok(
          await sh(`cat ${file} | ${cli} push --plain-http ${PART}--name src.bin ${ref(kind)} -`),
          label,
        ),
      );
    if (OTHER !== undefined) await stdinPush(OTHER, PUSH_STDIN + COMPARED, "c");
    add(PUSH_FILE, ok(await sh(`${CLI} push --plain-http ${PART}${ref("p")} ${file}`), PUSH_FILE));
    await stdinPush(CLI, PUSH_STDIN, "s");
  }
  if (OPS.has("pull")) {
    const stdoutPull = async (cli: string, label: string) =>
      add(label, ok(await sh(`${cli} pull --plain-http ${pushed} - | cat > /dev/null`), label));
    if (OTHER !== undefined) await stdoutPull(OTHER, PULL_STDOUT + COMPARED);
    await Deno.remove(`${dir}/out.bin`).catch(() => {});
    add(PULL_FILE, ok(await sh(`${CLI} pull --plain-http ${pushed} ${dir}/out.bin`), PULL_FILE));
    await stdoutPull(CLI, PULL_STDOUT);
  }
}
const link =
  (values.rate === undefined
    ? "loopback"
    : `${values.rate} mbit per connection (${Number(values.rate) / 8} MB/s)`) +
  (PIN
    ? `, the registry on core ${navigator.hardwareConcurrency - 1}, the commands on the others`
    : "");
console.log(`CPU: ${await cpuLine()}`);
console.log(
  `${values.size} in ${values["part-size"] ?? "512MiB"} parts, ${link}, medians of ${RUNS}; ` +
    "peak RSS of the shell's largest process\n",
);
console.log("| operation | wall | peak RSS | command CPU | registry CPU |");
console.log("| --- | ---: | ---: | ---: | ---: |");
for (const [name, all] of Object.entries(rows)) {
  const wall = median(all.map((m) => m.wallSeconds));
  const rss = median(all.map((m) => m.peakRssMiB));
  const cpu = median(all.map((m) => m.cpuSeconds));
  const reg = median(all.map((m) => registryCpus.get(m) ?? 0));
  console.log(
    `| ${name} | ${wall.toFixed(2)} s | ${rss.toFixed(0)} MiB | ${cpu.toFixed(2)} s | ${
      reg.toFixed(2)
    } s |`,
  );
}
const wall = (name: string) => median(rows[name].map((m) => m.wallSeconds));
console.log("");
for (const suffix of ["", ...(OTHER === undefined ? [] : [COMPARED])]) {
  if (rows[PULL_STDOUT + suffix] !== undefined) {
    const share = 100 * wall(PULL_FILE) / wall(PULL_STDOUT + suffix);
    console.log(`stdout pull throughput${suffix}: ${share.toFixed(0)} % of a pull to a file`);
  }
  if (rows[PUSH_STDIN + suffix] !== undefined) {
    const ratio = wall(PUSH_STDIN + suffix) / wall(PUSH_FILE);
    console.log(`stdin push wall${suffix}: ${ratio.toFixed(2)}× the push of the file`);
  }
}
await Deno.remove(dir, { recursive: true });
