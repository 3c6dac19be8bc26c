/**
 * The fleet benchmark: N machines (one `PartedClient` each, default 8) pull one artifact at
 * once (default 512 MiB in 64 MiB parts), directly from the upstream registry and through a
 * pull-through cache (Distribution in proxy mode) given to each as a mirror: cold, warm, and
 * primed (one machine first, then the others). For each: wall time and the blob bytes the
 * upstream served, counted at a small counting front in front of it. Every pulled file is
 * verified by the pull itself (each part against the manifest's digest). Prints a markdown
 * table.
 *
 * Usage: `deno run -A bench/fleet_bench.ts [--fleet-size 512MiB] [--fleet-part 64MiB]
 * [--machines 8]` (also run by `deno task bench`; `deno task bench:fleet` alone).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { cpuLine } from "./_cpu.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";
import { startCountingFront, startPullThroughCache } from "../tests/fixtures/pull_through_cache.ts";
import type { CountingFront } from "../tests/fixtures/pull_through_cache.ts";
import { fromFile, type MirrorTable, PartedClient, toFile } from "../src/parted/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    "fleet-size": { type: "string", default: "512MiB" },
    "fleet-part": { type: "string", default: "64MiB" },
    machines: { type: "string", default: "8" },
  },
  strict: false,
});
const MiB = 1 << 20;
function mebibytes(text: unknown, flag: string): number {
  const match = /^(\d+)(MiB|GiB)$/.exec(String(text));
  if (match === null) throw new RangeError(`${flag} must look like 64MiB or 1GiB`);
  return Number(match[1]) * (match[2] === "GiB" ? 1024 * MiB : MiB);
}
const SIZE = mebibytes(values["fleet-size"], "--fleet-size");
const PART = mebibytes(values["fleet-part"], "--fleet-part");
const MACHINES = Number(values.machines);
const REPO = "fleet/model";

interface Row {
  scenario: string;
  seconds: number;
  upstreamBytes: number;
}

/** `machines` pulls at once of `ref`, each its own client; resolves with the wall seconds. */
async function pullAll(
  ref: string,
  machines: number,
  dir: string,
  mirrors: MirrorTable | undefined,
): Promise<number> {
  const started = performance.now();
  await Promise.all(Array.from({ length: machines }, async (_, i) => {
    using client = new PartedClient({ plainHttp: true, ...(mirrors ? { mirrors } : {}) });
    await client.pull(ref, toFile(`${dir}/machine-${i}.bin`));
  }));
  const seconds = (performance.now() - started) / 1000;
  for (let i = 0; i < machines; i++) await Deno.remove(`${dir}/machine-${i}.bin`);
  return seconds;
}

/** One scenario: the pulls, timed, and the upstream's blob bytes they cost. */
async function scenario(
  name: string,
  front: CountingFront,
  run: () => Promise<number>,
): Promise<Row> {
  front.reset();
  const seconds = await run();
  return { scenario: name, seconds, upstreamBytes: front.bytesServed(/\/blobs\/sha256:/) };
}

async function main(): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ocipart-fleet-" });
  await using upstream = await startRegistry();
  await using front = await startCountingFront(upstream.url);
  try {
    await writePatternFile(`${dir}/src.bin`, SIZE, 3);
    using pusher = new PartedClient({ plainHttp: true });
    const pushed = await pusher.push(`${upstream.host}/${REPO}:v1`, fromFile(`${dir}/src.bin`), {
      partSize: PART,
    });
    await Deno.remove(`${dir}/src.bin`);
    const ref = `${front.host}/${REPO}@${pushed.digest}`;
    const viaCache = (host: string): MirrorTable => ({
      [front.host]: [{ location: host, plainHttp: true }],
    });
    const rows: Row[] = [];
    rows.push(
      await scenario(
        "direct from the upstream",
        front,
        () => pullAll(ref, MACHINES, dir, undefined),
      ),
    );
    {
      await using cache = await startPullThroughCache({
        upstream: front.url,
        countUpstream: false,
      });
      const mirrors = viaCache(cache.registry.host);
      rows.push(
        await scenario(
          "through the cache, cold",
          front,
          () => pullAll(ref, MACHINES, dir, mirrors),
        ),
      );
      rows.push(
        await scenario(
          "through the cache, warm",
          front,
          () => pullAll(ref, MACHINES, dir, mirrors),
        ),
      );
    }
    {
      await using cache = await startPullThroughCache({
        upstream: front.url,
        countUpstream: false,
      });
      const mirrors = viaCache(cache.registry.host);
      rows.push(
        await scenario(
          `through the cache, primed (1, then ${MACHINES - 1})`,
          front,
          async () =>
            (await pullAll(ref, 1, dir, mirrors)) +
            (await pullAll(ref, MACHINES - 1, dir, mirrors)),
        ),
      );
    }
    await print(rows);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function print(rows: Row[]): Promise<void> {
  const total = SIZE * MACHINES;
  console.log(
    `${MACHINES} machines pull one ${SIZE / MiB} MiB artifact (${
      Math.ceil(SIZE / PART)
    } parts of ` +
      `${PART / MiB} MiB, 8 workers each) at once; Distribution 2.8 upstream and cache on ` +
      `loopback; ${await cpuLine()}\n`,
  );
  console.log("| scenario | wall time | upstream blob bytes | × artifact | machines' MB/s |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const row of rows) {
    const ratio = row.upstreamBytes / SIZE;
    console.log(
      `| ${row.scenario} | ${row.seconds.toFixed(2)} s | ${
        (row.upstreamBytes / MiB).toFixed(0)
      } MiB | ` +
        `${ratio.toFixed(2)} | ${(total / 1e6 / row.seconds).toFixed(0)} |`,
    );
  }
}

await main();
