/**
 * The parted benchmark on a per-connection-capped link: CNCF Distribution and every client run
 * in a network namespace whose loopback gives each TCP connection to or from the registry port
 * its own HTB class at `--rate` (default 200 mbit = 25 MB/s), the way object storage and CDNs
 * cap each connection. Scenarios: 1 GiB with 128 MiB parts, and 4 GiB with the default part
 * size; each pushes and pulls with ocipart, `curl` (one stream; the pull adds `openssl dgst`)
 * and `skopeo copy` (which copies the parts concurrently as the layers they are), in the same
 * run, against the ideal `size / (min(workers, parts) × rate)`. Every ratio is printed beside the
 * CPU line: model, SHA extensions, node:crypto sha256 speed. Then the blob library's parallel
 * pull (4 workers × 32 MiB of a 128 MiB blob) and its single stream against one `curl -o`
 * stream (ideal 0.25×). Last, pulls only (the S3 emulator ingests too slowly to bench pushes) from
 * Distribution on S3 storage (moto behind the S3 gate, `tests/fixtures/s3.ts`), registry and
 * storage ports both capped: 512 MiB in 64 MiB parts, skipped when moto is not installed.
 *
 * Needs root, `ip` and `tc` (iproute2); without them it prints why and exits 0.
 *
 * Usage: `deno run -A bench/capped_bench.ts [--rate 200] [--scenarios 1GiB:128MiB,4GiB]
 * [--workers 8] [--pin] [--parted-only|--blob-only|--s3-only]` (rate in mbit per connection;
 * `--pin` puts the registry on the last core and the clients on the others).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { cpuLine, onClientCores, pinToLastCore } from "./_cpu.ts";
import { capPorts, enterCappedNamespace } from "./_netns.ts";
import { measure, type Measurement } from "./_measure.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { motoPython, startS3Registry } from "../tests/fixtures/s3.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    rate: { type: "string", default: "200" },
    scenarios: { type: "string", default: "1GiB:128MiB,4GiB" },
    "blob-only": { type: "boolean", default: false },
    "s3-only": { type: "boolean", default: false },
    workers: { type: "string", default: "8" },
    inside: { type: "boolean", default: false },
    pin: { type: "boolean", default: false },
    "parted-only": { type: "boolean", default: false },
  },
  strict: false,
});
const RATE_MBIT = Number(values.rate);
const WORKERS = Number(values.workers);
// `--pin`: the registry on the last core, every client on the others (taskset), so the
// registry's hashing never takes the client's core: the push's floor on this machine.
const PIN = values.pin === true;
const CORES = navigator.hardwareConcurrency;
const DEFAULT_PART = 512 * 1024 * 1024;
const UNITS: Record<string, number> = { MiB: 1 << 20, GiB: 1 << 30 };

if (!values.inside) {
  const status = await enterCappedNamespace(new URL(import.meta.url).pathname, Deno.args);
  Deno.exit(status);
}

function bytes(text: string): number {
  const m = /^(\d+)(MiB|GiB)$/.exec(text);
  if (m === null) throw new RangeError(`bad size ${text}: use e.g. 512MiB or 4GiB`);
  return Number(m[1]) * UNITS[m[2]];
}

interface Scenario {
  size: number;
  part: number;
  label: string;
}

const scenarios: Scenario[] = String(values.scenarios).split(",").map((item) => {
  const [size, part] = item.split(":");
  return {
    size: bytes(size),
    part: part === undefined ? DEFAULT_PART : bytes(part),
    label: part === undefined ? `${size}, default parts` : `${size}, ${part} parts`,
  };
});

const DENO = Deno.execPath();
const OP = new URL("./_parted_op.ts", import.meta.url).pathname;
const BLOB_OP = new URL("./blob_bench.ts", import.meta.url).pathname;
const MiB = 1024 * 1024;
const dir = await Deno.makeTempDir({ prefix: "ocipart-capped-" });

function ok(m: Measurement, what: string): number {
  if (m.code !== 0) throw new Error(`${what} failed (${m.code}): ${m.stderr.slice(-2000)}`);
  return m.wallSeconds;
}

/** A fresh registry whose port is capped; stopped after `fn`. */
async function withCappedRegistry<T>(fn: (host: string, url: string) => Promise<T>): Promise<T> {
  const registry = await startRegistry();
  try {
    await capPorts([registry.port], RATE_MBIT);
    if (PIN) await pinToLastCore(registry.pid);
    return await fn(registry.host, registry.url);
  } finally {
    await registry.stop();
  }
}

/** `command` on the client's cores (all but the registry's with `--pin`). */
function client(command: string[]): string[] {
  return PIN ? onClientCores(command) : command;
}

const sh = (script: string) => measure(client(["sh", "-c", script]));

/** `curl -T` of the whole file as one blob (the session opened inside the same command). */
function curlPush(url: string, src: string, digest: string): Promise<Measurement> {
  return sh(
    `loc=$(curl -sf -X POST -o /dev/null -w '%header{location}' '${url}/v2/bench/curl/blobs/uploads/') && ` +
      `case "$loc" in http*) ;; *) loc="${url}$loc";; esac && ` +
      `curl -sf -o /dev/null -T '${src}' -X PUT -H 'Content-Type: application/octet-stream' ` +
      `"$loc&digest=${encodeURIComponent(digest)}"`,
  );
}

/** `curl -o` of the blob and `openssl dgst -sha256` of the file. */
function curlPull(url: string, digest: string, out: string): Promise<Measurement> {
  return sh(
    `curl -sf -o '${out}' '${url}/v2/bench/curl/blobs/${digest}' && openssl dgst -sha256 '${out}'`,
  );
}

const skopeo = (from: string, to: string) =>
  measure(client([
    "skopeo",
    "copy",
    "--quiet",
    "--src-tls-verify=false",
    "--dest-tls-verify=false",
    from,
    to,
  ]));

interface Row {
  op: string;
  ours: number;
  ideal: number;
  curl: number;
  skopeo: number;
}

async function runScenario(s: Scenario): Promise<Row[]> {
  const src = `${dir}/src.bin`;
  const out = `${dir}/out.bin`;
  const layout = `${dir}/layout`;
  console.error(`generating ${s.size} bytes`);
  const digest = await writePatternFile(src, s.size, 42);
  const parts = Math.ceil(s.size / s.part);
  const ideal = s.size / (Math.min(WORKERS, parts) * RATE_MBIT * 125_000);
  const clean = () => Deno.remove(out).catch(() => {});
  const times: Record<string, number> = {};
  await withCappedRegistry(async (host) => {
    const ref = `${host}/bench/file:v1`;
    const args = [String(s.part), String(WORKERS)];
    const op = (verb: string, path: string) =>
      measure(client([DENO, "run", "-A", OP, verb, ref, path, ...args]));
    times.oursPush = ok(await op("push", src), "push");
    await clean();
    times.oursPull = ok(await op("pull", out), "pull");
    await clean();
    await Deno.remove(layout, { recursive: true }).catch(() => {});
    times.skopeoPull = ok(await skopeo(`docker://${ref}`, `oci:${layout}:v1`), "skopeo pull");
  });
  await withCappedRegistry(async (_host, url) => {
    times.curlPush = ok(await curlPush(url, src, digest), "curl -T");
    times.curlPull = ok(await curlPull(url, digest, out), "curl -o");
    await clean();
  });
  await withCappedRegistry(async (host) => {
    const to = `docker://${host}/bench/skopeo:v1`;
    times.skopeoPush = ok(await skopeo(`oci:${layout}:v1`, to), "skopeo push");
  });
  await Deno.remove(layout, { recursive: true }).catch(() => {});
  await Deno.remove(src);
  return [
    { op: "push", ours: times.oursPush, ideal, curl: times.curlPush, skopeo: times.skopeoPush },
    { op: "pull", ours: times.oursPull, ideal, curl: times.curlPull, skopeo: times.skopeoPull },
  ];
}

interface BlobTimes {
  curl: number;
  single: number;
  parallel: number;
  /** The same two pulls without the runtime's start-up (timed inside the process). */
  singleInside: number;
  parallelInside: number;
}

/** Seconds of curl, our single stream and our 4 × 32 MiB parallel pull of a 128 MiB blob. */
async function runBlobScenario(): Promise<BlobTimes> {
  const size = 128 * MiB;
  const src = `${dir}/blob.bin`;
  const out = `${dir}/blob-out.bin`;
  const digest = await writePatternFile(src, size, 43);
  try {
    return await withCappedRegistry(async (host, url) => {
      ok(await curlPush(url, src, digest), "curl -T");
      const curl = ok(
        await sh(`curl -sf -o '${out}' '${url}/v2/bench/curl/blobs/${digest}'`),
        "curl",
      );
      const ours = (op: string) =>
        measure([
          DENO,
          "run",
          "-A",
          BLOB_OP,
          "--op",
          op,
          "--host",
          host,
          "--repo",
          "bench/curl",
          "--digest",
          digest,
          "--size",
          String(size),
          "--file",
          out,
          "--chunk-mib",
          "32",
        ]);
      const single = await ours("pull");
      const parallel = await ours("ppull");
      return {
        curl,
        single: ok(single, "blob pull"),
        parallel: ok(parallel, "blob parallel pull"),
        singleInside: Number(single.stdout.trim()),
        parallelInside: Number(parallel.stdout.trim()),
      };
    });
  } finally {
    await Deno.remove(src);
    await Deno.remove(out).catch(() => {});
  }
}

function printBlobScenario(r: BlobTimes, cpu: string) {
  console.log(
    "\n| blob, 128 MiB | ours s | `curl -o` s | ours / curl | target | CPU |\n|---|---|---|---|---|---|",
  );
  const row = (name: string, s: number, target: string) =>
    console.log(
      `| ${name} | ${s.toFixed(1)} | ${r.curl.toFixed(1)} | ${
        (s / r.curl).toFixed(2)
      }× | ${target} | ${cpu} |`,
    );
  row("single-stream pull + verify", r.single, "—");
  row("parallel pull, 4 × 32 MiB", r.parallel, "≤ 0.28×");
  row("single-stream pull, without runtime start-up", r.singleInside, "—");
  row("parallel pull, without runtime start-up", r.parallelInside, "≤ 0.28×");
}

/** Pulls from Distribution on S3 storage, every storage and registry connection capped. */
async function s3Scenario(cpu: string): Promise<void> {
  if (motoPython() === undefined) {
    console.log("\nS3 pulls skipped: no Python with moto[server] (set OCIPART_PYTHON)");
    return;
  }
  const size = 512 * MiB;
  const part = 64 * MiB;
  const src = `${dir}/s3.bin`;
  const out = `${dir}/s3-out.bin`;
  const layout = `${dir}/s3-layout`;
  const digest = await writePatternFile(src, size, 44);
  const s3 = await startS3Registry();
  try {
    await capPorts([s3.registry.port, s3.gate.port], RATE_MBIT);
    const { host, url } = s3.registry;
    const ref = `${host}/bench/file:v1`;
    const args = [String(part), String(WORKERS)];
    ok(await measure([DENO, "run", "-A", OP, "push", ref, src, ...args]), "push");
    ok(await curlPush(url, src, digest), "curl -T");
    const ours = ok(await measure([DENO, "run", "-A", OP, "pull", ref, out, ...args]), "pull");
    await Deno.remove(out);
    const curl = ok(
      await sh(
        `curl -sfL -o '${out}' '${url}/v2/bench/curl/blobs/${digest}' && openssl dgst -sha256 '${out}'`,
      ),
      "curl -L",
    );
    const skopeoPull = ok(await skopeo(`docker://${ref}`, `oci:${layout}:v1`), "skopeo pull");
    const ideal = size / (Math.min(WORKERS, size / part) * RATE_MBIT * 125_000);
    const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
    console.log(
      "\n| S3 storage, 512 MiB, 64 MiB parts | ours s | ideal s | ours / ideal | `curl -L -o` + sha256 s | ours / curl | skopeo s | ours / skopeo | CPU |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|");
    console.log(
      `| pull | ${ours.toFixed(1)} | ${ideal.toFixed(1)} | ${x(ours, ideal)} | ${
        curl.toFixed(1)
      } | ${x(ours, curl)} | ${skopeoPull.toFixed(1)} | ${x(ours, skopeoPull)} | ${cpu} |`,
    );
  } finally {
    await s3.stop();
    await Deno.remove(src);
    await Deno.remove(out).catch(() => {});
    await Deno.remove(layout, { recursive: true }).catch(() => {});
  }
}

try {
  await new Deno.Command(DENO, { args: ["cache", OP], stdout: "null", stderr: "null" }).output();
  const cpu = await cpuLine();
  const mbps = RATE_MBIT / 8;
  console.log(
    `\ncapped link: ${RATE_MBIT} mbit (${mbps} MB/s) per connection, ${WORKERS} workers` +
      (PIN ? `; registry on core ${CORES - 1}, clients on the others` : ""),
  );
  console.log(`CPU: ${cpu}\n`);
  console.log(
    "| scenario | op | ours s | ideal s | ours / ideal (≤ 1.15×) | curl s | ours / curl | " +
      "skopeo s | ours / skopeo (< 1×) | CPU |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  const only = values["blob-only"] || values["s3-only"];
  for (const s of only ? [] : scenarios) {
    for (const r of await runScenario(s)) {
      const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
      console.log(
        `| ${s.label} | ${r.op} | ${r.ours.toFixed(1)} | ${r.ideal.toFixed(1)} | ${
          x(r.ours, r.ideal)
        } | ${r.curl.toFixed(1)} | ${x(r.ours, r.curl)} | ${r.skopeo.toFixed(1)} | ${
          x(r.ours, r.skopeo)
        } | ${cpu} |`,
      );
    }
  }
  if (!values["s3-only"] && !values["parted-only"]) {
    printBlobScenario(await runBlobScenario(), cpu);
  }
  if (!values["blob-only"] && !values["parted-only"]) await s3Scenario(cpu);
} finally {
  await Deno.remove(dir, { recursive: true });
}
