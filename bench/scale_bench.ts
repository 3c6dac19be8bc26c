/**
 * How the parted push and pull scale with the file size, on CNCF Distribution over loopback:
 * at each of `--sizes` (default 1 GiB, quick; e.g. `--sizes 1GiB,4GiB,16GiB`), a cold push and
 * a cold pull (default part size and workers) against `curl` in the same run, each its own
 * process. Prints wall time and its ratio to the reference, peak RSS, and CPU-seconds (user +
 * sys) per GiB: ours against the reference's, which is `curl -T` of the file as one blob plus
 * `openssl dgst -sha256` of it for the push, and for the pull `curl` of the parts into one file
 * plus `openssl dgst -sha256` of that file (the same bytes as the whole file, one connection).
 * The pull runs twice: with the default hashing threads, and with `hashThreads: 0`.
 *
 * Disk: at most twice the largest size at once (the source or the pulled file, and one
 * registry's storage); every file is removed as soon as it has served.
 *
 * Usage: `deno run -A bench/scale_bench.ts [--sizes 1GiB,4GiB,16GiB] [--runs 1]`.
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
    sizes: { type: "string", default: "1GiB" },
    runs: { type: "string", default: "1" },
  },
  strict: false,
});

const GiB = 1 << 30;
const UNITS: Record<string, number> = { MiB: 1 << 20, GiB };
function bytes(text: string): number {
  const m = /^(\d+)(MiB|GiB)$/.exec(text);
  if (m === null) throw new RangeError(`bad size ${text}: use e.g. 512MiB or 4GiB`);
  return Number(m[1]) * UNITS[m[2]];
}

const SIZES = String(values.sizes).split(",").map(bytes);
const RUNS = Number(values.runs);
const DENO = Deno.execPath();
const OP = new URL("./_parted_op.ts", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "ocipart-scale-" });
const src = `${dir}/src.bin`;
const out = `${dir}/out.bin`;

interface Figures {
  wall: number;
  cpu: number;
  rss: number;
}

function ok(m: Measurement, what: string): Measurement {
  if (m.code !== 0) throw new Error(`${what} failed (${m.code}): ${m.stderr.slice(-2000)}`);
  return m;
}

const figures = (all: Measurement[]): Figures => ({
  wall: median(all.map((m) => m.wallSeconds)),
  cpu: median(all.map((m) => m.cpuSeconds)),
  rss: median(all.map((m) => m.peakRssMiB)),
});

const sh = (script: string) => measure(["sh", "-c", script]);

/** Reads the registry's blob files once, so every pull starts from the page cache. */
async function warm(storageDir: string): Promise<void> {
  await new Deno.Command("sh", {
    args: ["-c", `find '${storageDir}' -type f -name data -exec cat {} + >/dev/null`],
  }).output();
}

/** `curl -T` of the source as one blob into a fresh registry, removed right after. */
async function curlPush(digest: string): Promise<Measurement> {
  const registry = await startRegistry();
  try {
    const url = registry.url;
    return ok(
      await sh(
        `loc=$(curl -sf -X POST -o /dev/null -w '%header{location}' '${url}/v2/bench/curl/blobs/uploads/') && ` +
          `case "$loc" in http*) ;; *) loc="${url}$loc";; esac && ` +
          `curl -sf -o /dev/null -T '${src}' -X PUT -H 'Content-Type: application/octet-stream' ` +
          `"$loc&digest=${encodeURIComponent(digest)}"`,
      ),
      "curl -T",
    );
  } finally {
    await registry.stop();
  }
}

/** The part digests of the pushed file, in file order. */
async function partDigests(url: string): Promise<string[]> {
  const response = await fetch(`${url}/v2/bench/scale/manifests/v1`, {
    headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
  });
  const manifest = await response.json() as { layers: { digest: string }[] };
  return manifest.layers.map((layer) => layer.digest);
}

interface Row {
  size: number;
  push: Figures;
  curlPush: Figures;
  pull: Figures;
  pullInline: Figures;
  curlPull: Figures;
}

async function runSize(size: number): Promise<Row> {
  console.error(`generating ${size / GiB} GiB`);
  const digest = await writePatternFile(src, size, 77);
  const hash = [];
  const curlT = [];
  for (let i = 0; i < RUNS; i++) {
    hash.push(ok(await measure(["openssl", "dgst", "-sha256", src]), "openssl"));
    curlT.push(await curlPush(digest));
  }
  const hashed = figures(hash);
  const pushes: Measurement[] = [];
  // A fresh registry per push, so nothing is deduplicated; the last one serves the pulls.
  let registry = await startRegistry();
  try {
    const ref = () => `${registry.host}/bench/scale:v1`;
    for (let i = 0; i < RUNS; i++) {
      if (i > 0) {
        await registry.stop();
        registry = await startRegistry();
      }
      pushes.push(ok(await measure([DENO, "run", "-A", OP, "push", ref(), src]), "push"));
    }
    await Deno.remove(src);
    const parts = (await partDigests(registry.url)).map((d) =>
      `'${registry.url}/v2/bench/scale/blobs/${d}'`
    );
    const pulls: Measurement[] = [];
    const inline: Measurement[] = [];
    const curlO: Measurement[] = [];
    for (let i = 0; i < RUNS; i++) {
      await warm(registry.storageDir);
      pulls.push(ok(await measure([DENO, "run", "-A", OP, "pull", ref(), out]), "pull"));
      await Deno.remove(out);
      await warm(registry.storageDir);
      const hashInline = [OP, "pull", ref(), out, "", "", "", "0"];
      inline.push(ok(await measure([DENO, "run", "-A", ...hashInline]), "pull"));
      await Deno.remove(out);
      await warm(registry.storageDir);
      curlO.push(
        ok(
          await sh(`curl -sf ${parts.join(" ")} > '${out}' && openssl dgst -sha256 '${out}'`),
          "curl",
        ),
      );
      await Deno.remove(out);
    }
    // The push's reference wall time is curl's alone; its CPU adds the hash a push needs.
    const withHash = (f: Figures): Figures => ({ ...f, cpu: f.cpu + hashed.cpu });
    return {
      size,
      push: figures(pushes),
      curlPush: withHash(figures(curlT)),
      pull: figures(pulls),
      pullInline: figures(inline),
      curlPull: figures(curlO),
    };
  } finally {
    await registry.stop();
    await Deno.remove(src).catch(() => {});
    await Deno.remove(out).catch(() => {});
  }
}

try {
  await new Deno.Command(DENO, { args: ["cache", OP], stdout: "null", stderr: "null" }).output();
  const rows: Row[] = [];
  for (const size of SIZES) rows.push(await runSize(size));
  console.log(
    `\nscale: parted push and pull (default part size and workers) against curl, medians of ${RUNS}`,
  );
  console.log(`CPU: ${await cpuLine()}\n`);
  console.log(
    "| size | op | ours s | reference s | ratio | ours peak RSS MiB | ours CPU s/GiB | reference CPU s/GiB |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    const gib = r.size / GiB;
    const line = (op: string, ours: Figures, ref: Figures, name: string) =>
      console.log(
        `| ${gib} GiB | ${op} | ${ours.wall.toFixed(2)} | ${name} ${ref.wall.toFixed(2)} | ${
          (ours.wall / ref.wall).toFixed(2)
        }× | ${ours.rss.toFixed(0)} | ${(ours.cpu / gib).toFixed(2)} | ${
          (ref.cpu / gib).toFixed(2)
        } |`,
      );
    line("push", r.push, r.curlPush, "`curl -T` (+ openssl CPU)");
    line("pull", r.pull, r.curlPull, "`curl` + openssl");
    line("pull, `hashThreads: 0`", r.pullInline, r.curlPull, "`curl` + openssl");
  }
  console.log(
    "\nThe push's wall ratio is against `curl -T` alone; its reference CPU adds `openssl dgst` " +
      "of the file (a push must hash it). The pull's reference is `curl` then `openssl dgst`. " +
      "`hashThreads: 0` hashes on the receiving thread: no hand-over to a hashing thread.",
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}
