/**
 * Blob library benchmark on the real Distribution registry, against curl on the same registry
 * in the same run: monolithic push vs `curl -T`, single-stream pull + verify vs `curl -o` +
 * `openssl dgst -sha256`, parallel pull (4 workers, 64 MiB chunks) vs `curl -o`, with the peak
 * RSS of each; both pulls again with `hashThreads: 0` (hashing inline). Prints a markdown table of medians and ratios.
 *
 * Usage: `deno run -A bench/blob_bench.ts [--size-mib 1024] [--runs 3]`. Each measured library
 * operation runs in its own process (`--op push|pull|ppull|pull0|ppull0`) so its peak RSS is its own.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { BlobClient } from "../src/blob/mod.ts";
import { fileBody } from "../src/transport/file_body.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { measure, type Measurement, median } from "./_measure.ts";
import { cpuLine } from "./_cpu.ts";

const MiB = 1024 * 1024;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    op: { type: "string" },
    host: { type: "string" },
    repo: { type: "string" },
    digest: { type: "string" },
    size: { type: "string" },
    file: { type: "string" },
    "size-mib": { type: "string", default: "1024" },
    "chunk-mib": { type: "string", default: "64" },
    runs: { type: "string", default: "3" },
  },
});

if (values.op !== undefined) {
  await child(values.op);
} else {
  await main();
}

/**
 * One library operation, measured from outside; prints its own seconds (without the runtime's
 * start-up) on standard output.
 */
async function child(op: string): Promise<void> {
  const started = performance.now();
  await operation(op);
  console.log(((performance.now() - started) / 1000).toFixed(3));
}

async function operation(op: string): Promise<void> {
  const repo = { host: values.host!, name: values.repo! };
  const digest = values.digest!;
  const size = Number(values.size);
  const file = values.file!;
  // "pull0" and "ppull0": the same pulls hashing inline (`hashThreads: 0`).
  const inline = op.endsWith("0");
  const chunkSize = Number(values["chunk-mib"]) * MiB;
  const parallel = op.startsWith("ppull") ? { workers: 4, chunkSize } : undefined;
  using client = new BlobClient({
    plainHttp: true,
    parallelPull: parallel,
    ...(inline ? { hashThreads: 0 } : {}),
  });
  if (op === "push") {
    await client.push(repo, digest, size, () => fileBody(file, 0, size));
    return;
  }
  const stream = await client.pull(repo, digest, { size });
  const out = await Deno.open(file, { write: true, create: true, truncate: true });
  await stream.pipeTo(out.writable);
}

async function main(): Promise<void> {
  const size = Number(values["size-mib"]) * MiB;
  const runs = Number(values.runs);
  const dir = await Deno.makeTempDir({ prefix: "blob-bench-" });
  try {
    await using registry = await startRegistry({ storageDir: `${dir}/storage` });
    const source = `${dir}/source.bin`;
    const target = `${dir}/target.bin`;
    const digest = await writePatternFile(source, size, 7);
    const self = new URL(import.meta.url).pathname;
    const deno = Deno.execPath();
    const op = (name: string, repo: string, file: string) =>
      measure([
        deno,
        "run",
        "-A",
        self,
        "--op",
        name,
        "--host",
        registry.host,
        "--repo",
        repo,
        "--digest",
        digest,
        "--size",
        String(size),
        "--file",
        file,
      ]);
    const curlPush = (repo: string) =>
      measure([
        "sh",
        "-c",
        `loc=$(curl -sf -X POST -o /dev/null -w '%{redirect_url}%header{location}' ` +
        `'${registry.url}/v2/${repo}/blobs/uploads/') && ` +
        `case "$loc" in http*) ;; *) loc='${registry.url}'"$loc";; esac && ` +
        `curl -sf -T '${source}' -X PUT -H 'Content-Type: application/octet-stream' ` +
        `"$loc&digest=${digest}" -o /dev/null`,
      ]);
    const blobUrl = `${registry.url}/v2/bench/pull/blobs/${digest}`;
    const curlPull = () =>
      measure([
        "sh",
        "-c",
        `curl -sf -o '${target}' '${blobUrl}' && openssl dgst -sha256 '${target}'`,
      ]);
    const curlGet = () => measure(["curl", "-sf", "-o", target, blobUrl]);

    const results: Record<string, Measurement[]> = {};
    const record = (name: string, m: Measurement) => {
      if (m.code !== 0) throw new Error(`${name} failed: ${m.stderr.slice(0, 500)}`);
      (results[name] ??= []).push(m);
    };
    // Seed the pulled repository once.
    record("seed", await op("push", "bench/pull", source));
    for (let run = 0; run < runs; run++) {
      record("push", await op("push", `bench/push${run}`, source));
      record("curl -T", await curlPush(`bench/curl${run}`));
      record("pull + verify", await op("pull", "bench/pull", target));
      record("curl -o + openssl", await curlPull());
      record("parallel pull 4×64 MiB", await op("ppull", "bench/pull", target));
      record("curl -o", await curlGet());
      record("pull + verify, hashThreads 0", await op("pull0", "bench/pull", target));
      record("parallel pull, hashThreads 0", await op("ppull0", "bench/pull", target));
    }
    const wall = (name: string) => median(results[name]!.map((m) => m.wallSeconds));
    const rss = (name: string) => Math.max(...results[name]!.map((m) => m.peakRssMiB));
    const row = (name: string, reference: string, target: string) => {
      const ratio = wall(name) / wall(reference);
      const mbps = size / MiB / wall(name);
      return `| ${name} | ${wall(name).toFixed(2)} s | ${mbps.toFixed(0)} MiB/s | ` +
        `${wall(reference).toFixed(2)} s (${reference}) | ${ratio.toFixed(2)}× (${target}) | ` +
        `${rss(name).toFixed(0)} MiB | ${rss(reference).toFixed(0)} MiB |`;
    };
    console.log(`Blob size ${size / MiB} MiB, median of ${runs} runs, Distribution on loopback.`);
    // Every ratio below depends on this CPU's hasher: it is printed beside them.
    console.log(`CPU: ${await cpuLine()}\n`);
    console.log(
      "| operation | wall | rate | reference | ratio (target) | peak RSS | reference RSS |",
    );
    console.log("|---|---|---|---|---|---|---|");
    console.log(row("push", "curl -T", "≤ 1.1×"));
    console.log(row("pull + verify", "curl -o + openssl", "≤ 1.0×"));
    console.log(row("parallel pull 4×64 MiB", "curl -o", "≤ 0.8×"));
    console.log(row("pull + verify, hashThreads 0", "curl -o + openssl", "≤ 1.0×"));
    console.log(row("parallel pull, hashThreads 0", "curl -o", "≤ 0.8×"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
