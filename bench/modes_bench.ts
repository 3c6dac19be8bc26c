/**
 * Peak memory and wall time of a CLI push and pull in every way a user reaches a registry:
 * plain HTTP, TLS with a CA-signed certificate, a pinned self-signed certificate and
 * `--insecure`, each direct and through a proxy (tinyproxy), on real Distribution registries on
 * loopback. With `--baseline DIR` (a checkout of another version) that version runs the same
 * operations alternately, for a before/after table from one run.
 *
 * Usage: `deno run -A bench/modes_bench.ts [--size 1GiB] [--runs 1] [--baseline DIR]`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseSize } from "../src/cli/arguments/size.ts";
import { measure, type Measurement, median } from "./_measure.ts";
import { cpuLine } from "./_cpu.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { makeSelfSigned } from "../tests/fixtures/tls.ts";
import { startTinyproxy, tinyproxyAvailable } from "../tests/fixtures/tinyproxy.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";
import { cliCommand } from "./_cli.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "1GiB" },
    runs: { type: "string", default: "1" },
    baseline: { type: "string" },
  },
  strict: false,
});
// The CLI's own size syntax (512MiB, 2GiB, 1G).
const SIZE = parseSize(String(values.size));
const RUNS = Number(values.runs);
const CLIS: Record<string, string> = {
  this: new URL("../cli.ts", import.meta.url).pathname,
  ...(typeof values.baseline === "string" ? { baseline: `${values.baseline}/cli.ts` } : {}),
};

const dir = await Deno.makeTempDir({ prefix: "ocipart-modes-" });
const file = `${dir}/src.bin`;
const out = `${dir}/out.bin`;
await writePatternFile(file, SIZE, 5);
const selfSigned = await makeSelfSigned(dir);
await using plain = await startRegistry();
await using signed = await startRegistry({ tls: true });
await using pinned = await startRegistry({ tls: selfSigned });
await using proxy = tinyproxyAvailable() ? await startTinyproxy() : undefined;
const caFile = `${dir}/ca.pem`;
await Deno.writeTextFile(caFile, signed.caCert!);

const modes = [
  { name: "plain HTTP", host: plain.host, flags: ["--plain-http"] },
  { name: "TLS, CA-signed", host: signed.host, flags: ["--ca-file", caFile] },
  { name: "TLS, pinned self-signed", host: pinned.host, flags: ["--ca-file", selfSigned.certPath] },
  { name: "TLS, --insecure", host: pinned.host, flags: ["--insecure"] },
];

async function cli(version: string, args: string[], env: Record<string, string>) {
  const m = await measure([...cliCommand(CLIS[version]), ...args], { env });
  if (m.code !== 0) throw new Error(`${version} ${args[0]} failed: ${m.stderr.slice(-1500)}`);
  return m;
}

console.log(`CPU: ${await cpuLine()}`);
console.log(`file: ${values.size}, medians of ${RUNS}; peak RSS of the whole process\n`);
console.log("| mode | version | push wall | push peak | pull wall | pull peak |");
console.log("| --- | --- | ---: | ---: | ---: | ---: |");
let tag = 0;
for (const viaProxy of proxy ? [false, true] : [false]) {
  const env: Record<string, string> = viaProxy && proxy
    ? { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url }
    : {};
  for (const mode of modes) {
    for (const version of Object.keys(CLIS)) {
      const pushes: Measurement[] = [];
      const pulls: Measurement[] = [];
      for (let i = 0; i < RUNS; i++) {
        // A new repository and tag each time: every push uploads, every pull downloads.
        const ref = `${mode.host}/modes/r${++tag}:v1`;
        pushes.push(await cli(version, ["push", ...mode.flags, ref, file], env));
        await Deno.remove(out).catch(() => {});
        pulls.push(await cli(version, ["pull", ...mode.flags, ref, out], env));
      }
      const wall = (all: Measurement[]) => `${median(all.map((m) => m.wallSeconds)).toFixed(2)} s`;
      const peak = (all: Measurement[]) => `${median(all.map((m) => m.peakRssMiB)).toFixed(0)} MiB`;
      const name = `${mode.name}${viaProxy ? ", through a proxy" : ""}`;
      console.log(
        `| ${name} | ${version} | ${wall(pushes)} | ${peak(pushes)} | ${wall(pulls)} | ${
          peak(pulls)
        } |`,
      );
    }
  }
}
if (!proxy) console.log("\ntinyproxy is not installed: the proxied rows were skipped");
await Deno.remove(dir, { recursive: true });
