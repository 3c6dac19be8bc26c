/**
 * The parted benchmark on CNCF Distribution, in one run: cold push against `curl -T` of the same
 * bytes and against skopeo copying them as one layer; re-push against one sequential sha256;
 * cold pull against `curl -o` plus sha256; resume with a complete partial against a single-core
 * hash; peak RSS of push and pull; and pull/push throughput by worker count. Medians of
 * `--runs` (default 3) runs; prints markdown tables.
 *
 * Usage: `deno run -A bench/parted_bench.ts [--size 4GiB] [--runs 3] [--no-skopeo]
 * [--no-workers-chart]`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { link, mkdir, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import { measure, type Measurement, median } from "./_measure.ts";
import { cpuLine } from "./_cpu.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "4GiB" },
    runs: { type: "string", default: "3" },
    "no-skopeo": { type: "boolean", default: false },
    "no-workers-chart": { type: "boolean", default: false },
  },
  strict: false,
});
const SIZES: Record<string, number> = { MiB: 1 << 20, GiB: 1 << 30 };
const sizeMatch = /^(\d+)(MiB|GiB)$/.exec(String(values.size));
if (sizeMatch === null) throw new RangeError("--size must look like 512MiB or 4GiB");
const SIZE = Number(sizeMatch[1]) * SIZES[sizeMatch[2]];
const RUNS = Number(values.runs);
const DENO = Deno.execPath();
const OP = new URL("./_parted_op.ts", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "ocipart-bench-" });
const src = `${dir}/src.bin`;
const PART = 512 * 1024 * 1024;

function ok(m: Measurement, what: string): Measurement {
  if (m.code !== 0) throw new Error(`${what} failed (${m.code}): ${m.stderr.slice(-2000)}`);
  return m;
}
const ours = (...args: string[]) => measure([DENO, "run", "-A", OP, ...args]);
const sha256Cli = (path: string) => measure(["openssl", "dgst", "-sha256", path]);

async function medianOf(
  what: string,
  run: () => Promise<Measurement>,
  before?: () => Promise<void>,
  after?: () => Promise<void>,
): Promise<{ wall: number; cpu: number; rss: number; commit: number }> {
  const all: Measurement[] = [];
  for (let i = 0; i < RUNS; i++) {
    await before?.();
    all.push(ok(await run(), what));
    await after?.();
  }
  return {
    wall: median(all.map((m) => m.wallSeconds)),
    cpu: median(all.map((m) => m.cpuSeconds)),
    rss: median(all.map((m) => m.peakRssMiB)),
    // A pull prints its commit's seconds (the flush before the rename); other runs print no number.
    commit: median(all.map((m) => Number(m.stdout.trim()) || 0)),
  };
}

async function withFreshRegistry<T>(fn: (host: string, url: string) => Promise<T>): Promise<T> {
  const registry = await startRegistry();
  try {
    return await fn(registry.host, registry.url);
  } finally {
    await registry.stop();
  }
}

async function uploadLocation(url: string, repository: string): Promise<string> {
  const response = await fetch(`${url}/v2/${repository}/blobs/uploads/`, { method: "POST" });
  await response.body?.cancel();
  return new URL(response.headers.get("location")!, url).href;
}

/** `curl -T` of the source as one blob: a session opened unmeasured, then the measured PUT. */
async function curlUpload(url: string, repository: string, digest: string): Promise<Measurement> {
  const location = await uploadLocation(url, repository);
  const sep = location.includes("?") ? "&" : "?";
  return measure([
    "curl",
    "-sS",
    "-f",
    "-o",
    "/dev/null",
    "-T",
    src,
    "-H",
    "content-type: application/octet-stream",
    `${location}${sep}digest=${encodeURIComponent(digest)}`,
  ]);
}

const fmt = (s: number) => s.toFixed(2);
const gbps = (s: number) => (SIZE / 1e9 / s).toFixed(2);

try {
  // Transpile once up front, so no measured run pays for it (it costs ~100 MiB of RSS).
  await new Deno.Command(DENO, { args: ["cache", OP], stdout: "null", stderr: "null" }).output();
  console.error(`generating ${SIZE} bytes`);
  const fileDigest = await writePatternFile(src, SIZE, 42);

  // Cold push: a fresh registry every run so nothing is deduplicated.
  const coldPush = await medianOf(
    "cold push",
    () => withFreshRegistry((host) => ours("push", `${host}/bench/file:v1`, src)),
  );
  const curlPush = await medianOf(
    "curl -T",
    () => withFreshRegistry((_host, url) => curlUpload(url, "bench/curl", fileDigest)),
  );
  let skopeoPush: { wall: number; cpu: number; rss: number; commit: number } | undefined;
  if (!values["no-skopeo"]) {
    const layout = `${dir}/layout`;
    await mkdir(`${layout}/blobs/sha256`, { recursive: true });
    await link(src, `${layout}/blobs/sha256/${fileDigest.slice(7)}`);
    const config = new TextEncoder().encode("{}");
    const configDigest = `sha256:${createHash("sha256").update(config).digest("hex")}`;
    await writeFile(`${layout}/blobs/sha256/${configDigest.slice(7)}`, config);
    const manifest = new TextEncoder().encode(JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      artifactType: "application/vnd.example.bench",
      config: { mediaType: "application/vnd.oci.empty.v1+json", digest: configDigest, size: 2 },
      layers: [{
        mediaType: "application/vnd.oci.image.layer.v1.tar",
        digest: fileDigest,
        size: SIZE,
      }],
    }));
    const manifestDigest = `sha256:${createHash("sha256").update(manifest).digest("hex")}`;
    await writeFile(`${layout}/blobs/sha256/${manifestDigest.slice(7)}`, manifest);
    await writeFile(`${layout}/oci-layout`, '{"imageLayoutVersion":"1.0.0"}');
    await writeFile(
      `${layout}/index.json`,
      JSON.stringify({
        schemaVersion: 2,
        manifests: [{
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          digest: manifestDigest,
          size: manifest.byteLength,
          annotations: { "org.opencontainers.image.ref.name": "v1" },
        }],
      }),
    );
    skopeoPush = await medianOf("skopeo copy", () =>
      withFreshRegistry((host) =>
        measure([
          "skopeo",
          "copy",
          "--quiet",
          "--dest-tls-verify=false",
          `oci:${layout}:v1`,
          `docker://${host}/bench/skopeo:v1`,
        ])
      ));
  }

  // Warm registry: re-push, pulls, resume.
  const registry = await startRegistry();
  try {
    const ref = `${registry.host}/bench/file:v1`;
    ok(await ours("push", ref, src), "push");
    ok(await curlUpload(registry.url, "bench/file", fileDigest), "curl push");
    const rePush = await medianOf("re-push", () => ours("push", ref, src));
    const sequentialHash = await medianOf("openssl sha256", () => sha256Cli(src));
    const out = `${dir}/out.bin`;
    // Every pull (ours and curl's) starts with the registry's blobs in the page cache: the
    // working set of this run exceeds what the cache keeps, and a pull that happens to read
    // from disk measures the disk, not the client.
    const removeOut = async () => {
      await Deno.remove(out).catch(() => {});
      await Deno.remove(`${out}.parted-partial`).catch(() => {});
      await new Deno.Command("sh", {
        args: ["-c", `find '${registry.storageDir}' -type f -name data -exec cat {} + > /dev/null`],
      }).output();
    };
    const coldPull = await medianOf("cold pull", () => ours("pull", ref, out), removeOut);
    const curlPull = await medianOf("curl -o + sha256", async () => {
      const a = ok(
        await measure([
          "curl",
          "-sS",
          "-f",
          "-o",
          out,
          `${registry.url}/v2/bench/file/blobs/${fileDigest}`,
        ]),
        "curl -o",
      );
      const b = ok(await sha256Cli(out), "sha256");
      return {
        ...a,
        wallSeconds: a.wallSeconds + b.wallSeconds,
        cpuSeconds: a.cpuSeconds + b.cpuSeconds,
      };
    }, removeOut);
    const resume = await medianOf(
      "resume (complete partial)",
      () => ours("pull", ref, out),
      async () => {
        await removeOut();
        await Deno.copyFile(src, `${out}.parted-partial`);
      },
    );
    const singleCoreHash = await medianOf(
      "node:crypto single-core sha256",
      () =>
        measure([
          DENO,
          "eval",
          `import { createHash } from "node:crypto";
        import { open } from "node:fs/promises";
        const h = createHash("sha256"); const f = await open(${JSON.stringify(src)});
        const b = new Uint8Array(4 << 20);
        for (;;) { const { bytesRead } = await f.read(b, 0, b.length, null); if (!bytesRead) break; h.update(b.subarray(0, bytesRead)); }
        console.log(h.digest("hex"));`,
        ]),
    );

    console.log(
      `\nparted benchmark: ${SIZE} bytes, part size 512 MiB, 8 workers, medians of ${RUNS}`,
    );
    // Every ratio below depends on this CPU's hasher: it is printed beside them.
    console.log(`CPU: ${await cpuLine()}\n`);
    console.log("| measurement | ours (s) | reference | reference (s) | ratio | target |");
    console.log("|---|---|---|---|---|---|");
    const line = (name: string, a: number, refName: string, b: number, target: string) =>
      console.log(
        `| ${name} | ${fmt(a)} (${gbps(a)} GB/s) | ${refName} | ${fmt(b)} | ${
          (a / b).toFixed(2)
        }× | ${target} |`,
      );
    line("cold push", coldPush.wall, "curl -T", curlPush.wall, "≤ 0.85×");
    if (skopeoPush) {
      line("cold push", coldPush.wall, "skopeo copy (one layer)", skopeoPush.wall, "≤ 0.7×");
    }
    line("re-push", rePush.wall, "openssl sha256", sequentialHash.wall, "≤ 1.2×");
    line("cold pull", coldPull.wall, "curl -o + openssl sha256", curlPull.wall, "≤ 0.6×");
    // `curl -o` leaves its bytes in memory; our commit flushes them to disk before the rename.
    line(
      "cold pull, without the commit's flush",
      coldPull.wall - coldPull.commit,
      "curl -o + openssl sha256",
      curlPull.wall,
      "—",
    );
    line(
      "resume, complete partial",
      resume.wall,
      "single-core sha256 (node:crypto)",
      singleCoreHash.wall,
      "≤ 0.65×",
    );
    line("resume, complete partial", resume.wall, "openssl sha256", sequentialHash.wall, "—");
    console.log(
      `\nThe pull's commit (flush to disk, then rename), median: cold pull ${
        fmt(coldPull.commit)
      } s, resume ${fmt(resume.commit)} s.`,
    );
    console.log(`\n| process | CPU s | peak RSS MiB |\n|---|---|---|`);
    console.log(`| cold push (ours) | ${fmt(coldPush.cpu)} | ${coldPush.rss.toFixed(0)} |`);
    console.log(`| curl -T | ${fmt(curlPush.cpu)} | ${curlPush.rss.toFixed(0)} |`);
    if (skopeoPush) {
      console.log(`| skopeo copy | ${fmt(skopeoPush.cpu)} | ${skopeoPush.rss.toFixed(0)} |`);
    }
    console.log(`| re-push (ours) | ${fmt(rePush.cpu)} | ${rePush.rss.toFixed(0)} |`);
    console.log(`| cold pull (ours) | ${fmt(coldPull.cpu)} | ${coldPull.rss.toFixed(0)} |`);
    console.log(`| resume (ours) | ${fmt(resume.cpu)} | ${resume.rss.toFixed(0)} |`);

    if (!values["no-workers-chart"]) {
      console.log(`\n| workers | pull GB/s |\n|---|---|`);
      for (const workers of [1, 2, 4, 8]) {
        const m = await medianOf(
          `pull w${workers}`,
          () => ours("pull", ref, out, String(PART), String(workers)),
          removeOut,
        );
        console.log(`| ${workers} | ${gbps(m.wall)} |`);
      }
    }
  } finally {
    await registry.stop();
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
