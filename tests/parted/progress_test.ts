/**
 * Progress as a program sees it on the real registry: throttled callbacks, values that never
 * go backwards, part counters and one event per part, on a first push, a re-push, a pull and
 * a resumed pull.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  fromFile,
  PartedClient,
  type PartEvent,
  type ProgressSnapshot,
  toDirectory,
  toFile,
} from "../../src/parted/mod.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";
import { ProgressTracker } from "../../src/parted/progress.ts";
import { overwrite } from "./_helpers.ts";

const P = 1024 * 1024;
const PARTS = 24;
const SIZE = PARTS * P - 5;

interface Recording {
  snapshots: ProgressSnapshot[];
  startedAt: number;
  endedAt: number;
}

async function record(run: (onProgress: (s: ProgressSnapshot) => void) => Promise<unknown>) {
  const snapshots: ProgressSnapshot[] = [];
  const startedAt = performance.now();
  await run((s) => snapshots.push(s));
  const recording: Recording = { snapshots, startedAt, endedAt: performance.now() };
  // No call after the transfer settled, not even a held-back one.
  await new Promise((resolve) => setTimeout(resolve, 250));
  assertEquals(snapshots.length, recording.snapshots.length);
  return recording;
}

/** Checks the contract every recording keeps; returns the part events in order. */
function checkContract({ snapshots, startedAt, endedAt }: Recording): PartEvent[] {
  const phases = new Set(snapshots.map((s) => s.phase)).size;
  const seconds = (endedAt - startedAt) / 1000;
  // At most ~10 a second, plus one per phase change (the final one included), with margin.
  const bound = Math.ceil(seconds * 10) + phases + 2;
  assert(snapshots.length <= bound, `${snapshots.length} calls in ${seconds}s (bound ${bound})`);
  let previous: ProgressSnapshot | undefined;
  for (const s of snapshots) {
    assert(s.transferredBytes! <= s.totalBytes, "transferredBytes never passes the total");
    assert(s.transferredBytes! >= s.completedBytes, "transferredBytes includes placed bytes");
    if (previous !== undefined) {
      assert(s.completedBytes >= previous.completedBytes, "completedBytes never decreases");
      assert(s.transferredBytes! >= previous.transferredBytes!, "transferredBytes never decreases");
      assert(s.partsDone! >= previous.partsDone!, "partsDone never decreases");
      assert(s.wireBytes >= previous.wireBytes, "wireBytes never decreases");
    }
    // Every run here has two workers: at most two parts move at once, none of them done.
    assert(s.partsActive! >= 0 && s.partsActive! <= 2, `${s.partsActive} parts active`);
    assert(s.partsDone! + s.partsActive! <= s.partsTotal!, "an active part is not done");
    previous = s;
  }
  const last = snapshots.at(-1)!;
  assertEquals(last.partsActive, 0);
  assertEquals(last.phase, "done");
  assertEquals(last.completedBytes, SIZE);
  assertEquals(last.transferredBytes, SIZE);
  assertEquals(last.partsDone, PARTS);
  assertEquals(last.partsTotal, PARTS);
  const events = snapshots.flatMap((s) => s.events ?? []);
  assertEquals(events.map((e) => e.index).sort((a, b) => a - b), [...Array(PARTS).keys()]);
  return events;
}

const kinds = (events: PartEvent[]) => {
  const count: Record<string, number> = {};
  for (const e of events) count[e.kind] = (count[e.kind] ?? 0) + 1;
  return count;
};

registryTest(
  "progress: throttled, monotonic, with part counters and one event per part (push, re-push, pull, resume)",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, SIZE);
    // One worker keeps parts arriving in sequence, so the run lasts long enough to throttle.
    using client = new PartedClient({ plainHttp: true });
    const ref = `${registry.host}/progress/a:v1`;
    const options = { partSize: P, workers: 2 };

    const pushed = await record((onProgress) =>
      client.push(ref, fromFile(src), { ...options, onProgress })
    );
    const pushEvents = checkContract(pushed);
    assertEquals(kinds(pushEvents), { uploaded: PARTS });
    assertEquals(pushed.snapshots.at(-1)!.partsSkipped, 0);

    const repushed = await record((onProgress) =>
      client.push(ref, fromFile(src), { ...options, onProgress })
    );
    assertEquals(kinds(checkContract(repushed)), { exists: PARTS });
    assertEquals(repushed.snapshots.at(-1)!.partsSkipped, PARTS);

    const dest = `${dir.path}/dest.bin`;
    const pulled = await record((onProgress) =>
      client.pull(ref, toFile(dest), { workers: 2, onProgress })
    );
    assertEquals(kinds(checkContract(pulled)), { verified: PARTS });

    // A torn part 5 in an otherwise complete partial: 23 parts are already present.
    await Deno.rename(dest, `${dest}.parted-partial`);
    await overwrite(`${dest}.parted-partial`, 5 * P + 10, new Uint8Array(1000));
    const resumed = await record((onProgress) =>
      client.pull(ref, toFile(dest), { workers: 2, onProgress })
    );
    const resumeEvents = checkContract(resumed);
    assertEquals(kinds(resumeEvents), { resumed: PARTS - 1, verified: 1 });
    assertEquals(resumeEvents.find((e) => e.kind === "verified")!.index, 5);
    assertEquals(resumed.snapshots.at(-1)!.partsSkipped, PARTS - 1);
    assertEquals(resumed.snapshots.at(-1)!.wireBytes, P, "only the torn part crossed the wire");
  },
);

registryTest("progress: a 64 MiB push calls back at most ~10 times a second", async () => {
  await using registry = await startRegistry();
  await using dir = await tempDir();
  const src = `${dir.path}/big.bin`;
  await writePatternFile(src, 64 * P);
  using client = new PartedClient({ plainHttp: true });
  const snapshots: ProgressSnapshot[] = [];
  let wireCalls = 0;
  const started = performance.now();
  await client.push(`${registry.host}/progress/big:v1`, fromFile(src), {
    partSize: 16 * P,
    onProgress: (s) => {
      snapshots.push(s);
      if (s.phase === "uploading") wireCalls++;
    },
  });
  const seconds = (performance.now() - started) / 1000;
  const phases = new Set(snapshots.map((s) => s.phase)).size;
  assert(
    snapshots.length <= Math.ceil(seconds * 10) + phases + 2,
    `${snapshots.length} calls in ${seconds.toFixed(2)}s`,
  );
  assert(wireCalls >= 1);
  assertEquals(snapshots.at(-1)!.transferredBytes, 64 * P);
});

registryTest(
  "progress: verify reports its hashing, part by part and within parts, also for a differing file",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/v.bin`;
    const parts = 3;
    // Hashing it lasts several throttle intervals even on a fast core (672 MiB: about 0.37 s at
    // 1.8 GB/s; 144 MiB took less than one interval there, so no snapshot fell inside a part).
    const partSize = 224 * P;
    await writePatternFile(src, parts * partSize);
    using client = new PartedClient({ plainHttp: true });
    const ref = `${registry.host}/progress/verify:v1`;
    await client.push(ref, fromFile(src), { partSize });
    // The middle part differs: it is counted as checked all the same.
    await overwrite(src, partSize + 7, new Uint8Array([1, 2, 3]));
    const recording = await record((onProgress) =>
      client.verify(ref, src, { workers: 1, onProgress })
    );
    const { snapshots } = recording;
    assertEquals(snapshots[0].phase, "verifying", "the first snapshot already says what runs");
    const last = snapshots.at(-1)!;
    assertEquals(last.phase, "done");
    assertEquals(last.completedBytes, parts * partSize);
    assertEquals(last.transferredBytes, parts * partSize);
    assertEquals(last.partsDone, parts);
    assertEquals(last.partsActive, 0);
    let previous: ProgressSnapshot | undefined;
    for (const s of snapshots) {
      assertEquals(s.wireBytes, 0, "verify moves nothing on the wire");
      assertEquals(s.events ?? [], [], "verify places no part");
      assert(s.partsActive! <= 1, "one worker hashes one part at a time");
      if (previous !== undefined) {
        assert(s.transferredBytes! >= previous.transferredBytes!, "never backwards");
      }
      previous = s;
    }
    // Hashed on one thread for several throttle intervals: the bytes move inside parts, not only
    // in whole-part steps.
    assert(
      snapshots.some((s) => s.transferredBytes! % partSize !== 0),
      snapshots.map((s) => s.transferredBytes).join(","),
    );
  },
);

Deno.test("progress: resumedBytes is in every pull snapshot, counts a kept beginning before its download, drops it when the part restarts, keeps it when the part lands", () => {
  const seen: ProgressSnapshot[] = [];
  let now = 0;
  const tracker = new ProgressTracker(30, 3, "verifying", (s) => seen.push(s), {
    now: () => (now += 1000),
    resume: true,
  });
  tracker.completePart(0, 10, "resumed");
  tracker.resumePrefix(1, 4);
  assertEquals(tracker.snapshot.resumeChecked, false, "the check of the partial still runs");
  tracker.resumePrefix(2, 6);
  tracker.resumeCheckDone();
  assertEquals(tracker.snapshot.resumeChecked, true);
  assertEquals([tracker.snapshot.resumedBytes, tracker.snapshot.transferredBytes], [20, 20]);
  tracker.addWire(6);
  tracker.landed(1, 6);
  tracker.completePart(1, 10, "verified");
  tracker.restartPart(2); // its beginning did not match: fetched again
  assertEquals(tracker.snapshot.resumedBytes, 14);
  tracker.setPhase("done");
  tracker.close();
  assert(seen.every((s) => typeof s.resumedBytes === "number"));
  assertEquals(seen.at(-1)?.resumedBytes, 14);
  assertEquals(seen.at(-1)?.transferredBytes, 26, "never goes back");
  const push = new ProgressTracker(10, 1, "hashing");
  assertEquals("resumedBytes" in push.snapshot, false, "not a pull's field");
});

Deno.test("progress: every snapshot of a pull names the file it writes, in a directory the artifact's title", async () => {
  await using registry = await startMemoryRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writePatternFile(source, 3 * P + 1);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/progress/path:v1`;
  await client.push(ref, fromFile(source), { partSize: P });
  const dir = `${tmp.path}/models`;
  await Deno.mkdir(dir);
  for (
    const [destination, path] of [
      [toDirectory(dir), `${dir}/weights.bin`],
      [toFile(`${tmp.path}/named.bin`), `${tmp.path}/named.bin`],
    ] as const
  ) {
    const { snapshots } = await record((onProgress) =>
      client.pull(ref, destination, { onProgress })
    );
    assert(snapshots.length > 0);
    assertEquals([...new Set(snapshots.map((s) => s.path))], [path]);
  }
  const push = new ProgressTracker(10, 1, "hashing");
  assertEquals("path" in push.snapshot, false, "not a push's field");
});

Deno.test("progress: the end of a pull's check is reported at once, as a phase change is", () => {
  const seen: ProgressSnapshot[] = [];
  const tracker = new ProgressTracker(30, 3, "verifying", (s) => seen.push(s), {
    now: () => 0,
    resume: true,
  });
  tracker.setPhase("downloading"); // reported at once
  tracker.completePart(0, 10, "resumed"); // within the 100 ms: held back
  assertEquals(seen.length, 1);
  tracker.resumeCheckDone();
  assertEquals(seen.length, 2, "not held back by the throttle");
  assertEquals([seen[1].resumeChecked, seen[1].resumedBytes], [true, 10]);
  tracker.close();
});
