/**
 * RSS flatness: many small transfers in one process must not grow memory without bound.
 *
 * API:
 * - `runRssCheck({ transfers, warmup }) → Promise<RssReport>` — against the strict fake
 *   registry, runs `transfers` round trips of a small 3-part file with one client (a pull
 *   each, and a push every `pushEvery`-th, default every one), sampling RSS after `warmup`
 *   transfers and at the end. The heap (JS heap plus external buffers) is sampled after every
 *   transfer, after a full collection when `gc()` is exposed, and compared as the lowest sample
 *   of the window after warm-up against the lowest of the last window: garbage awaiting
 *   collection does not read as growth while retained objects still do.
 *
 * @module
 */
import { PartedClient } from "../../src/parted/client.ts";
import { fromFile } from "../../src/parted/fs_source.ts";
import { toFile } from "../../src/parted/fs_partial.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";

/** RSS samples of a run, in MiB. */
export interface RssReport {
  transfers: number;
  warmupMiB: number;
  endMiB: number;
  growthMiB: number;
  /**
   * Growth of the JS heap plus external buffers after warm-up, low against low (a leak of
   * objects shows here).
   */
  heapGrowthMiB: number;
  failures: string[];
}

/** See the module doc. */
export async function runRssCheck(
  options: { transfers: number; warmup: number; pushEvery?: number },
): Promise<RssReport> {
  const dir = await makeTempDir("ocipart-rss-");
  const registry = await startFakeRegistry();
  using client = new PartedClient({ plainHttp: true });
  const failures: string[] = [];
  let warm = 0;
  const heapSamples: number[] = [];
  const heap = () => {
    const usage = Deno.memoryUsage();
    return usage.heapUsed + usage.external;
  };
  try {
    const file = `${dir}/small.bin`;
    const digest = await writePatternFile(file, 300 * 1024, 3);
    for (let i = 0; i < options.transfers; i++) {
      const ref = `${registry.host}/rss/file:v${i % 5}`;
      if (i % (options.pushEvery ?? 1) === 0 || i < 5) {
        await client.push(ref, fromFile(file), { partSize: 128 * 1024 });
      }
      await client.pull(ref, toFile(`${dir}/out.bin`));
      if ((await sha256File(`${dir}/out.bin`)) !== digest) failures.push(`transfer ${i}: bytes`);
      await Deno.remove(`${dir}/out.bin`);
      if (i + 1 === options.warmup) warm = Deno.memoryUsage().rss;
      if (i + 1 >= options.warmup) {
        // With `--v8-flags=--expose-gc` (the test and stress tasks) every sample follows a full
        // collection; without it the window lows stand in for one.
        (globalThis as { gc?: () => void }).gc?.();
        heapSamples.push(heap());
      }
    }
  } finally {
    await registry.close();
    await removeDir(dir);
  }
  const end = Deno.memoryUsage().rss;
  const window = Math.max(1, Math.min(20, Math.floor(heapSamples.length / 2)));
  const warmHeap = Math.min(...heapSamples.slice(0, window));
  const endHeap = Math.min(...heapSamples.slice(-window));
  const mib = (n: number) => Math.round((n / (1 << 20)) * 10) / 10;
  return {
    transfers: options.transfers,
    warmupMiB: mib(warm),
    endMiB: mib(end),
    growthMiB: mib(end - warm),
    heapGrowthMiB: mib(endHeap - warmHeap),
    failures,
  };
}
