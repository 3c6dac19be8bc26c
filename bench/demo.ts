/**
 * `deno task demo [--size 1GiB] [--part-size 64MiB] [--workers 8] [--embedded]`: generates a
 * file, starts a local registry (CNCF Distribution when `docker-registry` is installed, else the
 * embedded in-process registry from the `./testing` entry point), pushes the file, pulls it back,
 * verifies it, and prints throughput.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { fromFile, PartedClient, type ProgressSnapshot, toFile } from "../src/parted/mod.ts";
import { startMemoryRegistry } from "../src/testing/mod.ts";
import { registryAvailable, startRegistry } from "../tests/fixtures/registry.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "1GiB" },
    "part-size": { type: "string", default: "64MiB" },
    workers: { type: "string", default: "8" },
    embedded: { type: "boolean", default: false },
  },
});

/** Parses `123`, `64MiB`, `1GiB`, `2GB`. */
function parseSize(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|KB|MB|GB)?$/i.exec(text.trim());
  if (match === null) throw new RangeError(`not a size: ${text}`);
  const units: Record<string, number> = {
    b: 1,
    kib: 1024,
    mib: 1024 ** 2,
    gib: 1024 ** 3,
    kb: 1e3,
    mb: 1e6,
    gb: 1e9,
  };
  return Math.round(Number(match[1]) * units[(match[2] ?? "b").toLowerCase()]);
}

const size = parseSize(values.size!);
const partSize = parseSize(values["part-size"]!);
const workers = Number(values.workers);
const dir = await Deno.makeTempDir({ prefix: "ocipart-demo-" });
const mb = (bytes: number, ms: number) => `${(bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s`;

/** Writes `size` pseudo-random bytes (a 16 MiB random block, varied per block) and hashes them. */
async function generate(path: string): Promise<string> {
  const block = new Uint8Array(16 << 20);
  crypto.getRandomValues(block.subarray(0, 65536));
  for (let i = 65536; i < block.length; i += 65536) block.copyWithin(i, 0, 65536);
  const handle = await open(path, "w");
  const hash = createHash("sha256");
  try {
    for (let done = 0, n = 0; done < size; n++) {
      const view = new DataView(block.buffer);
      for (let i = 0; i < block.length; i += 4096) view.setUint32(i, n * 4099 + i);
      const take = Math.min(block.length, size - done);
      const chunk = block.subarray(0, take);
      await handle.write(chunk, 0, take, done);
      hash.update(chunk);
      done += take;
    }
  } finally {
    await handle.close();
  }
  return `sha256:${hash.digest("hex")}`;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  const handle = await open(path, "r");
  const buffer = new Uint8Array(4 << 20);
  try {
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return `sha256:${hash.digest("hex")}`;
}

function progressLine(label: string): (s: ProgressSnapshot) => void {
  let last = 0;
  return (s) => {
    const now = performance.now();
    if (now - last < 500 && s.phase !== "done") return;
    last = now;
    const landed = s.transferredBytes ?? s.completedBytes;
    const pct = s.totalBytes === 0 ? 100 : (100 * landed / s.totalBytes).toFixed(0);
    const skipped = s.partsSkipped ? `, ${s.partsSkipped} already present` : "";
    const parts = `${s.partsDone}/${s.partsTotal} parts${skipped}`;
    console.log(`  ${label}: ${s.phase} ${pct}% (${parts}, ${s.wireBytes} bytes on the wire)`);
  };
}

const useDistribution = !values.embedded && registryAvailable();
const registry = useDistribution ? await startRegistry() : await startMemoryRegistry();
try {
  console.log(
    `registry: ${
      useDistribution ? "CNCF Distribution (docker-registry)" : "embedded"
    } at ${registry.host}`,
  );
  const src = `${dir}/demo.bin`;
  console.log(`generating ${size} bytes …`);
  const digest = await generate(src);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/demo/file:v1`;

  let t = performance.now();
  const pushed = await client.push(ref, fromFile(src), {
    partSize,
    workers,
    onProgress: progressLine("push"),
  });
  const pushMs = performance.now() - t;
  console.log(`pushed ${pushed.digest} in ${pushMs.toFixed(0)} ms: ${mb(size, pushMs)}`);

  t = performance.now();
  await client.push(ref, fromFile(src), { partSize, workers });
  const repushMs = performance.now() - t;
  console.log(`re-push (every part present) in ${repushMs.toFixed(0)} ms: ${mb(size, repushMs)}`);

  const out = `${dir}/pulled.bin`;
  t = performance.now();
  await client.pull(ref, toFile(out), { workers, onProgress: progressLine("pull") });
  const pullMs = performance.now() - t;
  console.log(`pulled in ${pullMs.toFixed(0)} ms: ${mb(size, pullMs)}`);

  const ok = (await sha256Of(out)) === digest;
  console.log(ok ? "verified: pulled file equals the source" : "MISMATCH");
  if (!ok) Deno.exitCode = 1;
} finally {
  if ("stop" in registry) await registry.stop();
  else await registry.close();
  await Deno.remove(dir, { recursive: true });
}
