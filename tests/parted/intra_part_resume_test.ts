/**
 * Resume inside a part: a rerun keeps the beginning of each part an interrupted pull wrote and
 * continues it with a ranged GET, and the part's digest still decides. Against Distribution
 * through the fault proxy, whose log says what was asked for (the Range of every blob GET) and
 * how the registry answered, independently of the library's own counters.
 */
import { copyFile, open, truncate } from "node:fs/promises";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startThrottledRegistry } from "../fixtures/slow_link.ts";
import { DigestMismatchError, findError } from "../../mod.ts";
import {
  fromFile,
  PartedClient,
  type ProgressSnapshot,
  type PullResult,
  toFile,
} from "../../src/parted/mod.ts";
import { planParts } from "../../src/parted/plan.ts";
import { overwrite, recordingClock, sliceDigest } from "./_helpers.ts";
import { runCli, spawnCli } from "../cli/_cli.ts";
import { exists } from "../fixtures/expect.ts";

const MiB = 1024 * 1024;
/** The block of the written-prefix rule. */
const BLOCK = MiB;

interface Part {
  index: number;
  offset: number;
  size: number;
  digest: string;
}

/** The rule by brute force over a part's bytes on disk: up to the first all-zero block, then
 * back over the zeros that end the block before. */
async function writtenPrefix(path: string, part: Part): Promise<number> {
  const handle = await open(path, "r");
  try {
    const bytes = new Uint8Array(part.size);
    await handle.read(bytes, 0, part.size, part.offset);
    let end = part.size;
    for (let start = 0; start < part.size; start += BLOCK) {
      if (bytes.subarray(start, start + BLOCK).every((b) => b === 0)) {
        end = start;
        break;
      }
    }
    while (end > 0 && bytes[end - 1] === 0) end--;
    return end;
  } finally {
    await handle.close();
  }
}

/** A pushed artifact behind the fault proxy, a client and the paths of one pull. */
async function artifact(
  proxy: FaultProxy,
  dir: string,
  partSize: number,
  size: number,
  write: (path: string) => Promise<unknown> = (path) => writePatternFile(path, size, 3),
) {
  const src = `${dir}/src.bin`;
  await write(src);
  const client = new PartedClient({ plainHttp: true, clock: recordingClock() });
  const ref = `${proxy.host}/resume/inpart:v1`;
  await client.push(ref, fromFile(src), { partSize });
  const parts: Part[] = await Promise.all(
    planParts(size, partSize).map(async (p, index) => ({
      index,
      offset: p.offset,
      size: p.size,
      digest: await sliceDigest(src, p.offset, p.size),
    })),
  );
  const dest = `${dir}/dest.bin`;
  return { src, client, ref, parts, dest, partial: `${dest}.parted-partial` };
}

/** A partial file holding the first `written[i]` bytes of each part of `src`, zeros after. */
async function interruptedPartial(
  src: string,
  partial: string,
  parts: Part[],
  written: number[],
): Promise<void> {
  await copyFile(src, partial);
  for (const part of parts) {
    const keep = written[part.index];
    if (keep < part.size) {
      await overwrite(partial, part.offset + keep, new Uint8Array(part.size - keep));
    }
  }
}

/** What the blob GETs of the log asked for: each part's Range start and the answer's status. */
function blobGets(proxy: FaultProxy, parts: Part[]) {
  return proxy.log.filter((r) => r.method === "GET" && r.route === "blob").map((r) => {
    const part = parts.find((p) => r.path.endsWith(`/${p.digest}`))!;
    const start = Number(/^bytes=(\d+)-$/.exec(r.headers.range ?? "")?.[1] ?? 0);
    return { part: part.index, start, status: r.status, bytes: part.size - start };
  });
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

// 6 parts of 1 MiB hash inline; 6 parts of 4 MiB make a file large enough to hash on threads.
for (
  const { P, label } of [{ P: MiB, label: "hashed inline" }, { P: 4 * MiB, label: "on threads" }]
) {
  registryTest(
    `in-part resume: a part interrupted anywhere inside continues from its written bytes, the last part too (${label})`,
    async () => {
      await using registry = await startRegistry();
      await using proxy = await startFaultProxy({ target: registry.url });
      await using dir = await tempDir();
      const size = 5 * P + P / 2 + 7; // the last part is shorter
      const { src, client, ref, parts, dest, partial } = await artifact(proxy, dir.path, P, size);
      using _ = client;
      // One byte; a block boundary; inside a block; all but the last byte; nothing; half of
      // the last part.
      const written = [
        1,
        P === MiB ? P / 2 : 2 * BLOCK,
        P / 2 + 12_345,
        P - 1,
        0,
        (P / 2 + 7) >> 1,
      ];
      await interruptedPartial(src, partial, parts, written);
      const prefixes = await Promise.all(parts.map((part) => writtenPrefix(partial, part)));
      assert(prefixes.every((p, i) => p <= written[i] && p >= written[i] - 64), `${prefixes}`);

      proxy.log.length = 0;
      const snapshots: ProgressSnapshot[] = [];
      const result = await client.pull(ref, toFile(dest), {
        onProgress: (s) => snapshots.push(s),
      });
      assertEquals(await sha256File(dest), await sha256File(src));
      assert(!(await exists(partial)));

      const gets = blobGets(proxy, parts);
      assertEquals(gets.length, 6, "one GET per part");
      for (const part of parts) {
        const get = gets.find((g) => g.part === part.index)!;
        assertEquals(get.start, prefixes[part.index], `part ${part.index}: Range start`);
        assertEquals(get.status, prefixes[part.index] > 0 ? 206 : 200);
      }
      const missing = sum(parts.map((p) => p.size - prefixes[p.index]));
      assertEquals(sum(gets.map((g) => g.bytes)), missing, "asked only for the missing bytes");
      assertEquals(
        result,
        {
          path: dest,
          digest: result.digest,
          size,
          bytesFetched: missing,
          bytesResumed: sum(prefixes),
          bytesResumedInParts: sum(prefixes),
          partsFetched: 6,
          partsResumed: 0,
          partsContinued: 5,
        } satisfies PullResult,
      );

      // Every snapshot says what was found on disk.
      assert(snapshots.every((s) => typeof s.resumedBytes === "number"), "resumedBytes always");
      assertEquals(snapshots.at(-1)?.resumedBytes, sum(prefixes));
      assert(
        snapshots.every((s, i) => i === 0 || s.resumedBytes! >= snapshots[i - 1].resumedBytes!),
        "nothing found is given up here: resumedBytes only grows",
      );
      assert(
        snapshots.every((s, i) =>
          i === 0 || s.transferredBytes! >= snapshots[i - 1].transferredBytes!
        ),
        "transferredBytes never decreases",
      );

      // A fresh pull reports nothing resumed, in every snapshot.
      await Deno.remove(dest);
      const fresh: ProgressSnapshot[] = [];
      const again = await client.pull(ref, toFile(dest), { onProgress: (s) => fresh.push(s) });
      assert(fresh.every((s) => s.resumedBytes === 0));
      assertEquals([again.bytesFetched, again.bytesResumed, again.partsContinued], [size, 0, 0]);
    },
  );
}

registryTest(
  "in-part resume: a torn block inside the written bytes refetches that part whole, spending an attempt, never a digest mismatch",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const P = 4 * MiB;
    const size = 6 * P;
    const { src, client, ref, parts, dest, partial } = await artifact(proxy, dir.path, P, size);
    using _ = client;
    const written = [P, P, P / 2 + 999, P, P, P];
    await interruptedPartial(src, partial, parts, written);
    // Garbage in the middle of part 2's written bytes (a write the disk tore).
    await overwrite(partial, parts[2].offset + P / 4, new Uint8Array(4096).fill(0xa5));
    const prefix = await writtenPrefix(partial, parts[2]);

    proxy.log.length = 0;
    const result = await client.pull(ref, toFile(dest));
    assertEquals(await sha256File(dest), await sha256File(src));
    const gets = blobGets(proxy, parts);
    assertEquals(gets.map((g) => [g.part, g.start, g.status]), [
      [2, prefix, 206], // the continuation, which hashes wrong
      [2, 0, 200], // the next attempt: the part whole
    ]);
    assertEquals(result.bytesFetched, P - prefix + P);
    assertEquals([result.partsResumed, result.partsContinued, result.bytesResumed], [5, 0, 5 * P]);

    // With a budget of one attempt the pull fails, but not as a digest mismatch, and the
    // beginning it could not trust is forgotten: the rerun fetches that part whole.
    await Deno.remove(dest);
    await interruptedPartial(src, partial, parts, written);
    await overwrite(partial, parts[2].offset + P / 4, new Uint8Array(4096).fill(0xa5));
    using strict = new PartedClient({ plainHttp: true, retryPolicy: { maxAttempts: 1 } });
    const err = await strict.pull(ref, toFile(dest)).then(() => undefined, (e) => e);
    assert(err !== undefined, "the pull failed");
    assertEquals(findError(err, DigestMismatchError), undefined, `${err}`);
    assert(!(await exists(dest)));
    proxy.log.length = 0;
    const rerun = await strict.pull(ref, toFile(dest));
    assertEquals(await sha256File(dest), await sha256File(src));
    assertEquals(blobGets(proxy, parts).map((g) => [g.part, g.start]), [[2, 0]]);
    assertEquals(rerun.bytesFetched, P);
  },
);

/** 6 parts of 4 MiB; part 1 has an all-zero block inside (its second MiB), part 3 is zeros. */
async function zeroBlockFile(path: string): Promise<void> {
  const P = 4 * MiB;
  await writePatternFile(path, 6 * P, 5);
  await overwrite(path, P + MiB, new Uint8Array(MiB));
  await overwrite(path, 3 * P, new Uint8Array(P));
}

registryTest(
  "in-part resume: zeros that are data verify (an all-zero part, a part with an all-zero block); a prefix stops at such a block and continues from there",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const P = 4 * MiB;
    const size = 6 * P;
    const { src, client, ref, parts, dest, partial } = await artifact(
      proxy,
      dir.path,
      P,
      size,
      zeroBlockFile,
    );
    using _ = client;
    const pull = async () => {
      proxy.log.length = 0;
      const result = await client.pull(ref, toFile(dest));
      assertEquals(await sha256File(dest), await sha256File(src));
      await Deno.remove(dest);
      return { result, gets: blobGets(proxy, parts) };
    };

    // Complete on disk: every part verifies, zeros included; nothing is fetched.
    await copyFile(src, partial);
    const complete = await pull();
    assertEquals([complete.gets.length, complete.result.partsResumed], [0, 6]);

    // Sized and never written: the all-zero part is already right; the others come whole.
    await Deno.writeFile(partial, new Uint8Array());
    await truncate(partial, size);
    const zeros = await pull();
    const fetched = zeros.gets.map((g) => [g.part, g.start]).sort((a, b) => a[0] - b[0]);
    assertEquals(fetched, [[0, 0], [1, 0], [2, 0], [4, 0], [5, 0]], "parts fetched, whole");
    assertEquals(zeros.result.partsResumed, 1);

    // Part 1 written up to 3 MiB: its written bytes stop counting at its all-zero block, and
    // the continuation from there verifies.
    await interruptedPartial(src, partial, parts, [P, 3 * MiB, P, P, P, P]);
    const early = await pull();
    assertEquals(early.gets.map((g) => [g.part, g.start, g.status]), [[1, MiB, 206]]);
    assertEquals(early.result.bytesFetched, P - MiB);
  },
);

registryTest(
  "in-part resume: a registry that ignores the Range of a continuation is read from byte zero in the same attempt",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const P = 4 * MiB;
    const size = 4 * P + 100;
    const { src, client, ref, parts, dest, partial } = await artifact(proxy, dir.path, P, size);
    using _ = client;
    await interruptedPartial(src, partial, parts, [P / 2, P / 3, P, 7, 50]);
    proxy.fault({ method: "GET", path: /\/blobs\//, ignoreRange: true, times: Infinity });
    proxy.log.length = 0;
    const snapshots: ProgressSnapshot[] = [];
    const result = await client.pull(ref, toFile(dest), { onProgress: (s) => snapshots.push(s) });
    assertEquals(await sha256File(dest), await sha256File(src));
    const gets = blobGets(proxy, parts);
    assertEquals(gets.length, 4, "one request per part continued: no extra attempt");
    assert(gets.every((g) => g.start > 0 && g.status === 200), "ranged requests answered whole");
    assertEquals(result.bytesFetched, size - P);
    assertEquals([result.partsContinued, result.bytesResumed, result.bytesResumedInParts], [
      0,
      P,
      0,
    ]);
    assertEquals(snapshots.at(-1)?.resumedBytes, P, "the beginnings fetched again are not kept");
  },
);

registryTest(
  "in-part resume: a pull cancelled while every part's stream is stalled at a different point leaves beginnings a rerun continues",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url, seed: 11 });
    await using dir = await tempDir();
    const P = 4 * MiB;
    const size = 6 * P - 1234;
    const { src, client, ref, parts, dest, partial } = await artifact(proxy, dir.path, P, size);
    using _ = client;
    // Every part's body stops at a different point; the caller cancels once all arrived.
    const cuts = [1, MiB - 1, MiB, 2 * MiB + 5, P - 1, 3 * MiB];
    for (const [i, cut] of cuts.entries()) {
      proxy.fault({ method: "GET", path: new RegExp(parts[i].digest), stallAfter: cut });
    }
    const stop = new AbortController();
    const err = await client.pull(ref, toFile(dest), {
      workers: 6,
      signal: stop.signal,
      onProgress: (s) => {
        if (s.wireBytes >= sum(cuts)) stop.abort(new Error("interrupted"));
      },
    }).then(() => undefined, (e) => e);
    assertEquals((err as Error)?.message, "interrupted");
    proxy.clearFaults();
    const prefixes = await Promise.all(parts.map((part) => writtenPrefix(partial, part)));
    assert(prefixes.every((p, i) => p <= cuts[i] && p > cuts[i] - 64), `kept ${prefixes}`);

    proxy.log.length = 0;
    const result = await client.pull(ref, toFile(dest));
    assertEquals(await sha256File(dest), await sha256File(src));
    const starts = blobGets(proxy, parts).sort((a, b) => a.part - b.part).map((g) => g.start);
    assertEquals(starts, prefixes, "each part asked from its written bytes on");
    assertEquals(result.bytesFetched, size - sum(prefixes));
    assertEquals(result.partsContinued, 6);
  },
);

registryTest(
  "in-part resume: Ctrl-C (and kill -9) at ~70% of a 6-part pull over a slow link; the rerun fetches at most 35% of the file",
  { needs: ["nginx"] },
  async () => {
    await using slow = await startThrottledRegistry("1m");
    await using proxy = await startFaultProxy({ target: slow.registry.url });
    await using dir = await tempDir();
    const P = 4 * MiB;
    const size = 6 * P - 4321;
    const src = `${dir.path}/weights.bin`;
    const digest = await writePatternFile(src, size, 21);
    using client = new PartedClient({ plainHttp: true });
    await client.push(`${slow.registry.host}/resume/slow:v1`, fromFile(src), { partSize: P });
    const parts: Part[] = await Promise.all(
      planParts(size, P).map(async (p, index) => ({
        index,
        offset: p.offset,
        size: p.size,
        digest: await sliceDigest(src, p.offset, p.size),
      })),
    );

    for (const signal of ["SIGINT", "SIGKILL"] as const) {
      const dest = `${dir.path}/${signal}.bin`;
      const partial = `${dest}.parted-partial`;
      // Six parts at 1 MiB/s each, all at once: about 4 s. Stop once 70% is on disk.
      const first = spawnCli(
        ["pull", "--plain-http", "--progress", "none", `${slow.nginx.host}/resume/slow:v1`, dest],
        { tmp: dir.path },
      );
      await first.stdin.close();
      const output = first.output();
      let onDisk = 0;
      while (onDisk < 0.7 * size) {
        await new Promise((r) => setTimeout(r, 20));
        onDisk = ((await Deno.stat(partial).catch(() => undefined))?.blocks ?? 0) * 512;
      }
      first.kill(signal);
      const stopped = await output;
      assert(stopped.code !== 0, `${signal}: the first pull was stopped`);
      assert(!(await exists(dest)), "no destination after the stop");
      const stoppedAt = ((await Deno.stat(partial)).blocks ?? 0) * 512;

      proxy.log.length = 0;
      const rerun = await runCli(
        ["pull", "--plain-http", "--json", `${proxy.host}/resume/slow:v1`, dest],
        { tmp: dir.path },
      );
      assertEquals(rerun.code, 0, rerun.stderr);
      const result = JSON.parse(rerun.stdout) as PullResult;
      assertEquals(await sha256File(dest), digest);
      // What the rerun asked the registry for, from the proxy's log.
      const asked = sum(blobGets(proxy, parts).map((g) => g.bytes));
      assertEquals(result.bytesFetched, asked);
      console.log(
        `${signal} at ${(100 * stoppedAt / size).toFixed(0)}% on disk: the rerun fetched ` +
          `${
            (100 * result.bytesFetched / size).toFixed(1)
          }% (${result.partsContinued} parts continued)`,
      );
      assert(result.bytesFetched <= 0.35 * size, `rerun fetched ${result.bytesFetched} of ${size}`);
      assertEquals(result.bytesFetched + result.bytesResumed, size);
    }
  },
);
