import { assert, assertEquals, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { UsageError } from "../../src/cli/arguments/usage_error.ts";
import { formatBytes, formatRate, formatSeconds } from "../../src/cli/words/format.ts";
import { createProgressRenderer } from "../../src/cli/progress/progress.ts";
import { ProgressBar } from "../../src/cli/progress/progress_bar.ts";
import { interruptedLine } from "../../src/cli/progress/progress_interrupted.ts";
import { JsonProgress } from "../../src/cli/progress/progress_json.ts";
import { PlainProgress } from "../../src/cli/progress/progress_plain.ts";
import { progressStatus } from "../../src/cli/progress/progress_status.ts";
import type { TransferSnapshot } from "../../src/cli/progress/progress_types.ts";
import { RateMeter } from "../../src/cli/progress/rate_meter.ts";

const MiB = 1024 * 1024;

function harness(columns = 100) {
  let out = "";
  let clock = 0;
  const timers: Array<{ at: number; run: () => void; cancelled: boolean }> = [];
  const schedule = (run: () => void, delayMs: number) => {
    const timer = { at: clock + delayMs, run, cancelled: false };
    timers.push(timer);
    return () => void (timer.cancelled = true);
  };
  return {
    options: {
      write: (t: string) => void (out += t),
      now: () => clock,
      columns: () => columns,
      schedule,
    },
    /** Moves the clock and fires the timers that came due. */
    advance: (ms: number) => {
      clock += ms;
      for (const timer of timers.splice(0)) {
        if (timer.cancelled) continue;
        if (timer.at <= clock) timer.run();
        else timers.push(timer);
      }
    },
    pendingTimers: () => timers.filter((t) => !t.cancelled).length,
    get out() {
      return out;
    },
  };
}

const snap = (
  completedBytes: number,
  wireBytes: number,
  phase = "uploading",
  totalBytes = 100 * MiB,
): TransferSnapshot => ({ completedBytes, wireBytes, totalBytes, phase });

Deno.test("formatting of sizes, rates and durations", () => {
  assertStrictEquals(formatBytes(0), "0 B");
  assertStrictEquals(formatBytes(1023), "1023 B");
  assertStrictEquals(formatBytes(1024), "1.00 KiB");
  assertStrictEquals(formatBytes(1.5 * 1024 ** 3), "1.50 GiB");
  assertStrictEquals(formatBytes(150 * MiB), "150 MiB");
  assertStrictEquals(formatBytes(1024 * 1024 - 1), "1.00 MiB");
  assertStrictEquals(formatRate(undefined), "-- B/s");
  assertStrictEquals(formatRate(215 * MiB), "215 MiB/s");
  assertStrictEquals(formatSeconds(undefined), "--");
  assertStrictEquals(formatSeconds(8.4), "8s");
  assertStrictEquals(formatSeconds(185), "3m05s");
  assertStrictEquals(formatSeconds(7380), "2h03m");
});

Deno.test("rate meter averages over its window and overall", () => {
  const meter = new RateMeter(1000);
  meter.sample(0, 0);
  assertStrictEquals(meter.rate(), undefined);
  meter.sample(500, 500);
  meter.sample(1000, 1000);
  meter.sample(3000, 1000); // stalled for two seconds
  assertStrictEquals(meter.rate(), 0, "the window forgets the early bytes");
  assertStrictEquals(Math.round(meter.average()!), 333);
  assertStrictEquals(meter.elapsed(), 3000);
});

Deno.test("rate meter stays small and exact under a flood of samples", () => {
  const meter = new RateMeter(5000);
  // One sample per 64 KiB at 1 GiB/s for 20 s: 327,680 samples.
  for (let i = 0; i <= 20 * 16384; i++) meter.sample(i / 16.384, i * 64 * 1024);
  assertStrictEquals(Math.round(meter.rate()! / MiB), 1024);
  assertStrictEquals(Math.round(meter.average()! / MiB), 1024);
});

Deno.test("status blends placed and transferred bytes and reaches 100% only when done", () => {
  assertEquals(progressStatus(snap(0, 50 * MiB), 10 * MiB), {
    fraction: 0.5,
    shownBytes: 50 * MiB,
    etaSeconds: 5,
  });
  // Redone work can push wireBytes past the total; the display never exceeds it.
  assertStrictEquals(progressStatus(snap(100 * MiB, 130 * MiB, "manifest"), 1).fraction, 0.999);
  assertStrictEquals(progressStatus(snap(100 * MiB, 0, "done"), undefined).fraction, 1);
  assertStrictEquals(progressStatus(snap(0, 0, "resolving", 0), undefined).fraction, 0);
});

Deno.test("bar redraws in place, throttled, and ends at 100% with a newline", () => {
  const h = harness();
  const bar = new ProgressBar(h.options);
  bar.update(snap(0, 0, "hashing"));
  for (let i = 1; i <= 100; i++) {
    h.advance(5); // 200 updates a second
    bar.update(snap(0, i * MiB));
  }
  bar.update(snap(100 * MiB, 100 * MiB, "done"));
  bar.finish(0);
  const draws = h.out.split("\r").slice(1);
  // 500 ms of updates at <= 10 redraws/s, plus phase changes and the final draw.
  assert(draws.length <= 10, `${draws.length} redraws`);
  assert(draws.length >= 4, `${draws.length} redraws`);
  for (const draw of draws.slice(0, -1)) {
    assert(draw.endsWith("\x1b[K"), JSON.stringify(draw));
    assert(!draw.includes("\n"), "a redraw never starts a new line");
  }
  const last = draws.at(-1)!;
  assert(last.endsWith("\x1b[K\n"), JSON.stringify(last));
  assert(last.startsWith("done"), last);
  assert(last.includes("100%"), last);
  assert(last.includes("[========================================]"), last);
  assert(last.includes(" 100/100 MiB "), last);
  assert(h.out.includes("uploading"), "the phase is shown");
  assert(draws.some((d) => /ETA \d+s/.test(d)), "an ETA is shown once a rate is known");
});

Deno.test("bar never draws wider than the terminal", () => {
  for (const columns of [20, 40, 60, 200]) {
    const h = harness(columns);
    const bar = new ProgressBar(h.options);
    bar.update(snap(0, 0, "downloading", 123 * 1024 ** 3));
    h.advance(1000);
    bar.update(snap(0, 3 * 1024 ** 3, "downloading", 123 * 1024 ** 3));
    bar.finish(1);
    for (const draw of h.out.split("\r").slice(1)) {
      const visible = draw.replace("\x1b[K", "").replace("\n", "");
      assert(visible.length < columns, `${visible.length} >= ${columns}: ${visible}`);
    }
  }
});

Deno.test("bar on failure keeps the last state, below 100%", () => {
  const h = harness();
  const bar = new ProgressBar(h.options);
  bar.update(snap(50 * MiB, 50 * MiB, "downloading"));
  h.advance(10);
  bar.update(snap(50 * MiB, 60 * MiB, "downloading")); // held back by the throttle
  bar.finish(130);
  bar.finish(130);
  const draws = h.out.split("\r").slice(1);
  assertStrictEquals(draws.length, 2, "finish draws the held-back state once");
  assert(!draws[1].includes("100%") && draws[1].includes("60%"), draws[1]);
  assert(h.out.endsWith("\x1b[K\n"));
});

Deno.test("bar after a failure that is not a stop signal: its line erased for the report", () => {
  const h = harness();
  const bar = new ProgressBar(h.options);
  bar.update(snap(0, 0, "hashing"));
  bar.update(snap(0, 0, "uploading"));
  assert(h.out.includes("checking"), h.out);
  bar.finish(6);
  bar.update(snap(0, 0, "uploading"));
  bar.finish(6);
  // The line goes back to its start and is erased, without a newline: the report starts there.
  assert(h.out.endsWith("\r\x1b[K"), JSON.stringify(h.out));
  assert(!h.out.includes("\n"), JSON.stringify(h.out));
  // A verification that finished and found a difference (exit 5) keeps its done state.
  const v = harness();
  const verify = new ProgressBar(v.options);
  verify.update(snap(100 * MiB, 0, "done"));
  verify.finish(5);
  assert(v.out.endsWith("\x1b[K\n") && v.out.includes("100%"), JSON.stringify(v.out));
});

Deno.test("plain lines appear on phase changes and every five seconds", () => {
  const h = harness();
  const plain = new PlainProgress(h.options);
  plain.update(snap(0, 0, "hashing"));
  plain.update(snap(0, 0, "uploading"));
  for (let i = 1; i <= 100; i++) {
    h.advance(100);
    plain.update(snap(0, i * MiB));
  }
  plain.update(snap(100 * MiB, 100 * MiB, "done"));
  plain.finish(0);
  const lines = h.out.trimEnd().split("\n");
  assert(!h.out.includes("\r") && !h.out.includes("\x1b"), "no control characters");
  // hashing, checking (the part lookup before a byte moved), uploading once bytes move, one
  // line 5 s after that, and done (not repeated by finish).
  assertEquals(lines.map((l) => l.split(" ")[0]), [
    "hashing",
    "checking",
    "uploading",
    "uploading",
    "done",
  ], lines.join("\n"));
  assert(lines.at(-1)!.startsWith("done 100% 100/100 MiB "), lines.at(-1));
  assert(/ in 10s$/.test(lines.at(-1)!), lines.at(-1));
});

Deno.test("plain final line after a failure names the exit code", () => {
  const h = harness();
  const plain = new PlainProgress(h.options);
  plain.update(snap(0, 10 * MiB, "downloading"));
  plain.finish(5);
  assert(h.out.trimEnd().split("\n").at(-1)!.endsWith("stopped (exit 5)"), h.out);
});

Deno.test("json lines parse, are throttled, and the last one carries the exit code", () => {
  const h = harness();
  const json = new JsonProgress(h.options);
  json.update(snap(0, 0, "uploading"));
  for (let i = 1; i <= 100; i++) {
    h.advance(10);
    json.update(snap(Math.floor(i / 25) * 25 * MiB, i * MiB));
  }
  json.update(snap(100 * MiB, 100 * MiB, "done"));
  json.finish(0);
  const lines = h.out.trimEnd().split("\n").map((l) => JSON.parse(l));
  assert(lines.length <= 14, `${lines.length} lines for 1 s of updates`);
  for (const line of lines.slice(0, -1)) {
    assertEquals(Object.keys(line), ["completedBytes", "wireBytes", "totalBytes", "phase"]);
  }
  assertEquals(lines.at(-1), {
    completedBytes: 100 * MiB,
    wireBytes: 100 * MiB,
    totalBytes: 100 * MiB,
    phase: "done",
    exitCode: 0,
  });
});

Deno.test("a snapshot held back by the throttle is shown when the interval ends", () => {
  for (
    const make of [
      (h: ReturnType<typeof harness>) => new ProgressBar(h.options),
      (h: ReturnType<typeof harness>) => new JsonProgress(h.options),
    ]
  ) {
    const h = harness();
    const renderer = make(h);
    renderer.update(snap(0, 1 * MiB, "downloading"));
    h.advance(10);
    renderer.update(snap(0, 2 * MiB, "downloading")); // throttled, then the transfer stalls
    assert(!h.out.includes("  2/100 MiB") && !h.out.includes(`"wireBytes":${2 * MiB}`), h.out);
    h.advance(100);
    assert(h.out.includes("  2/100 MiB") || h.out.includes(`"wireBytes":${2 * MiB}`), h.out);
    renderer.update(snap(0, 3 * MiB, "downloading"));
    renderer.finish(130);
    assertStrictEquals(
      h.pendingTimers(),
      0,
      "finish cancels the held-back draw and the stall redraw",
    );
  }
});

Deno.test("json completedBytes never decreases, even if a snapshot did", () => {
  const h = harness();
  const json = new JsonProgress(h.options);
  json.update(snap(50, 50, "downloading"));
  h.advance(200);
  json.update(snap(10, 60, "downloading"));
  json.finish(1);
  const lines = h.out.trimEnd().split("\n").map((l) => JSON.parse(l));
  assertEquals(lines.map((l) => l.completedBytes), [50, 50, 50]);
  assertStrictEquals(lines.at(-1).exitCode, 1);
});

Deno.test("json without any snapshot still ends with a line carrying the exit code", () => {
  const h = harness();
  const json = new JsonProgress(h.options);
  json.finish(3);
  assertEquals(JSON.parse(h.out), {
    completedBytes: 0,
    wireBytes: 0,
    totalBytes: 0,
    phase: "resolving",
    exitCode: 3,
  });
});

Deno.test("auto is a bar on a terminal and plain lines elsewhere", () => {
  const options = { write: () => {} };
  assert(createProgressRenderer("auto", options, true) instanceof ProgressBar);
  assert(createProgressRenderer("auto", options, false) instanceof PlainProgress);
  assertStrictEquals(createProgressRenderer("none", options, true), undefined);
  assert(createProgressRenderer("bar", options, false) instanceof ProgressBar);
  assert(createProgressRenderer("plain", options, true) instanceof PlainProgress);
  assert(createProgressRenderer("json", options, true) instanceof JsonProgress);
});

const GiB = 1024 * MiB;

/** A mid-transfer snapshot of a 286 MiB pull with part counters, as the library reports it. */
const partSnap = (transferredBytes: number, phase = "downloading"): TransferSnapshot => ({
  completedBytes: Math.floor(transferredBytes / (32 * MiB)) * 32 * MiB,
  transferredBytes,
  wireBytes: transferredBytes,
  totalBytes: 286 * MiB,
  phase,
  partsDone: Math.floor(transferredBytes / (32 * MiB)),
  partsSkipped: 0,
  partsTotal: 9,
  events: [],
});

/** The visible text of each redraw; a line erased after a failure is not one. */
const visibleDraws = (out: string) =>
  out.split("\r").slice(1).map((d) => d.replace("\x1b[K", "").replace(/\n[^]*$/, ""))
    .filter((d) => d !== "");

Deno.test("bar at 40 to 100 columns: a bar and the percentage, then the time left, never cut", () => {
  const expectations: Array<[number, RegExp]> = [
    [40, /^downloading {2}41% \[=+>\s*\]$/],
    [42, /^downloading {2}41% \[=+>\s*\] ETA \d+s$/],
    [50, /^downloading {2}41% \[=+>\s*\] ETA \d+s$/],
    [80, /^downloading {2}41% \[=+>\s*\] 120\/286 MiB {2}3\/9 parts, 2 active {2}ETA \d+s$/],
    [
      100,
      /^downloading {2}41% \[=+>\s*\] 120\/286 MiB {2}3\/9 parts, 2 active {2}\s*\S+ MiB\/s {2}ETA \d+s$/,
    ],
  ];
  for (const [columns, pattern] of expectations) {
    const h = harness(columns);
    const bar = new ProgressBar(h.options);
    bar.update({ ...partSnap(0), partsActive: 2 });
    h.advance(1000);
    bar.update({ ...partSnap(120 * MiB), partsActive: 2 });
    const draws = visibleDraws(h.out);
    const last = draws.at(-1)!.trimEnd();
    assert(pattern.test(last), `${columns} columns: ${last}`);
    // Room for the terminal's two-character ^C echo after the cursor: it never wraps.
    for (const draw of draws) assert(draw.length <= columns - 2, `${columns}: ${draw}`);
    assert(!/\bE$|\bET$/.test(last), `the ETA is never cut: ${last}`);
  }
});

Deno.test("bar: every width from 20 to 200 fits, and from 40 keeps the bar", () => {
  for (let columns = 20; columns <= 200; columns++) {
    const h = harness(columns);
    const bar = new ProgressBar(h.options);
    bar.update({ ...partSnap(0, "downloading"), totalBytes: 123 * GiB });
    h.advance(1000);
    bar.update({ ...partSnap(3 * GiB, "downloading"), totalBytes: 123 * GiB });
    bar.update({ ...partSnap(3 * GiB, "committing"), totalBytes: 123 * GiB });
    bar.finish(1);
    for (const draw of visibleDraws(h.out)) {
      assert(draw.length < columns, `${columns}: ${draw}`);
      if (columns >= 40) assert(/\[[=> ]{10,}\]/.test(draw), `${columns}: no bar in ${draw}`);
    }
  }
});

Deno.test("bar moves with bytes landed, never backwards, and says what a resume found", () => {
  const h = harness(100);
  const bar = new ProgressBar(h.options);
  // A resume: 8 of 9 parts already on disk, the last one landing in steps.
  const resumed = (landed: number, phase = "downloading"): TransferSnapshot => ({
    completedBytes: 256 * MiB,
    transferredBytes: 256 * MiB + landed,
    wireBytes: landed,
    totalBytes: 286 * MiB,
    phase,
    partsDone: 8,
    partsSkipped: 8,
    partsTotal: 9,
    resumedBytes: 256 * MiB,
  });
  for (let landed = 0; landed <= 30 * MiB; landed += 3 * MiB) {
    h.advance(200);
    bar.update(resumed(landed));
  }
  bar.update({ ...resumed(30 * MiB, "done"), completedBytes: 286 * MiB, partsDone: 9 });
  bar.finish(0);
  const percents = visibleDraws(h.out).map((d) => Number(/(\d+)%/.exec(d)![1]));
  assert(percents.length >= 10, `${percents}`);
  for (let i = 1; i < percents.length; i++) assert(percents[i] >= percents[i - 1], `${percents}`);
  assert(new Set(percents).size >= 5, `the bar moves while the last part lands: ${percents}`);
  assert(h.out.endsWith("\n8 of 9 parts already present\n"), JSON.stringify(h.out.slice(-80)));
  // What the resume found is said once, on a line of its own above the bar.
  assert(
    h.out.startsWith("resuming: 256 MiB of 286 MiB on disk\n\r"),
    JSON.stringify(h.out.slice(0, 80)),
  );
  assertStrictEquals(h.out.split("resuming:").length, 2, "said once");
  assert(visibleDraws(h.out).every((d) => / 8\/9 parts |9\/9 parts/.test(d)), h.out);
});

Deno.test("plain prints one line per part event and the parts already present", () => {
  const h = harness();
  const plain = new PlainProgress(h.options);
  const base = { totalBytes: 3 * MiB, partsTotal: 3, wireBytes: 0 };
  plain.update({ ...base, completedBytes: 0, phase: "uploading", partsDone: 0, partsSkipped: 0 });
  plain.update({
    ...base,
    completedBytes: 2 * MiB,
    phase: "uploading",
    partsDone: 2,
    partsSkipped: 1,
    events: [{ kind: "exists", index: 0, size: MiB }, { kind: "uploaded", index: 1, size: MiB }],
  });
  plain.update({
    ...base,
    completedBytes: 3 * MiB,
    phase: "done",
    partsDone: 3,
    partsSkipped: 1,
    events: [{ kind: "uploaded", index: 2, size: MiB }],
  });
  plain.finish(0);
  const lines = h.out.trimEnd().split("\n");
  assertEquals(lines.filter((l) => l.startsWith("part ")), [
    "part 1/3 exists (already in the registry) 1.00 MiB",
    "part 2/3 uploaded 1.00 MiB",
    "part 3/3 uploaded 1.00 MiB",
  ]);
  assertStrictEquals(lines.at(-1), "1 of 3 parts already present");
});

Deno.test("json writes the done state once, from finish, and keeps every part event", () => {
  const h = harness();
  const json = new JsonProgress(h.options);
  json.update({ ...partSnap(0), events: [{ kind: "verified", index: 0, size: 1 }] });
  json.update({ ...partSnap(MiB), events: [{ kind: "verified", index: 1, size: 1 }] }); // held
  json.update({
    ...partSnap(286 * MiB, "done"),
    events: [{ kind: "verified", index: 2, size: 1 }],
  });
  json.finish(0);
  const lines = h.out.trimEnd().split("\n").map((l) => JSON.parse(l));
  assertStrictEquals(lines.filter((l) => l.phase === "done").length, 1, h.out);
  assertStrictEquals(lines.at(-1).exitCode, 0);
  assertEquals(lines.flatMap((l) => l.events ?? []).map((e: { index: number }) => e.index), [
    0,
    1,
    2,
  ]);
});

/** A 3 GiB pull in 6 parts as the library reports it: a resume check, every part at once. */
function pullSequence(): Array<{ afterMs: number; snapshot: TransferSnapshot }> {
  const total = 3 * GiB;
  const part = total / 6;
  const base = { totalBytes: total, partsTotal: 6, partsSkipped: 0 };
  const steps: Array<{ afterMs: number; snapshot: TransferSnapshot }> = [{
    afterMs: 0,
    snapshot: { ...base, phase: "resolving", completedBytes: 0, wireBytes: 0, partsDone: 0 },
  }];
  // The resume pass hashes the partial file: one part matches.
  for (const hashed of [0, 0.3, 0.7, 1]) {
    steps.push({
      afterMs: 150,
      snapshot: {
        ...base,
        phase: "verifying",
        completedBytes: hashed === 1 ? part : 0,
        transferredBytes: hashed * part,
        wireBytes: 0,
        partsDone: hashed === 1 ? 1 : 0,
        partsSkipped: hashed === 1 ? 1 : 0,
        partsActive: hashed === 1 ? 0 : 2,
      },
    });
  }
  // Five parts download at once, at speeds from a trickle to a flood, with pauses.
  let landed = 0;
  const gaps = [10, 40, 400, 2000, 90, 7000, 120, 30, 3000, 200];
  for (let i = 0; landed < 5 * part; i++) {
    landed = Math.min(5 * part, landed + (i % 3 === 0 ? 1000 : i % 3 === 1 ? 40 * MiB : 300 * MiB));
    const done = Math.max(0, Math.floor((landed / (5 * part) - 0.9) * 50));
    const partsDone = Math.min(5, done);
    steps.push({
      afterMs: gaps[i % gaps.length],
      snapshot: {
        ...base,
        phase: "downloading",
        completedBytes: part + partsDone * part,
        transferredBytes: part + landed,
        wireBytes: landed,
        partsDone: 1 + partsDone,
        partsSkipped: 1,
        partsActive: 5 - partsDone,
      },
    });
  }
  const end = { ...steps.at(-1)!.snapshot, completedBytes: total, partsDone: 6, partsActive: 0 };
  steps.push({ afterMs: 100, snapshot: { ...end, phase: "committing" } });
  steps.push({ afterMs: 100, snapshot: { ...end, phase: "done" } });
  return steps;
}

Deno.test("bar layout: every frame of a transfer has the same width and the same field positions", () => {
  for (const columns of [50, 60, 80, 100, 120, 160]) {
    const h = harness(columns);
    const bar = new ProgressBar(h.options);
    for (const { afterMs, snapshot } of pullSequence()) {
      h.advance(afterMs);
      bar.update(snapshot);
    }
    bar.finish(0);
    const draws = visibleDraws(h.out);
    assert(draws.length > 20, `${draws.length} frames`);
    const labels = new Set(draws.map((d) => d.split(" ")[0]));
    for (const label of ["resolving", "checking", "downloading", "committing", "done"]) {
      assert(labels.has(label), `${columns}: no ${label} frame in ${[...labels]}`);
    }
    const widths = new Set(draws.map((d) => d.length));
    assertStrictEquals(
      widths.size,
      1,
      `${columns} columns, widths ${[...widths]}:\n${draws.join("\n")}`,
    );
    // Where each field is: the percentage's sign, the bar, the sizes, the parts, the time left.
    const positions = (d: string) =>
      [/%/, /\[/, /\]/, /\d\/\d/, / parts/, / (ETA|in) /].map((re) => re.exec(d)?.index ?? -1);
    const first = JSON.stringify(positions(draws.find((d) => d.includes("ETA"))!));
    for (const draw of draws) {
      const at = positions(draw);
      if (!/ (ETA|in) /.test(draw)) at[5] = JSON.parse(first)[5]; // no time while resolving
      assertStrictEquals(JSON.stringify(at), first, `${columns} columns:\n${draw}`);
    }
  }
});

Deno.test("parts counter: every part at once shows the parts in flight, and each part done draws", () => {
  const h = harness(100);
  const bar = new ProgressBar(h.options);
  const total = 6 * 512 * MiB;
  for (let done = 0; done <= 6; done++) {
    h.advance(20); // parts finish closer together than the redraw interval
    bar.update({
      completedBytes: done * 512 * MiB,
      transferredBytes: Math.max(done * 512 * MiB, 0.94 * total),
      wireBytes: 0.94 * total,
      totalBytes: total,
      phase: "downloading",
      partsDone: done,
      partsTotal: 6,
      partsActive: 6 - done,
    });
  }
  const draws = visibleDraws(h.out);
  for (let done = 0; done < 6; done++) {
    const text = `${done}/6 parts, ${6 - done} active`;
    assert(
      draws.some((d) => d.includes(` ${text} `)),
      `no frame with ${text}:\n${draws.join("\n")}`,
    );
  }
  assert(/ 6\/6 parts {11}/.test(draws.at(-1)!), draws.at(-1));
});

/** A re-push: the parts hash and are found in the registry one by one; nothing is sent. */
function repushSnapshots(wireFrom = Infinity): TransferSnapshot[] {
  const part = 512 * MiB;
  const list: TransferSnapshot[] = [{
    completedBytes: 0,
    wireBytes: 0,
    totalBytes: 6 * part,
    phase: "hashing",
    partsDone: 0,
    partsTotal: 6,
  }];
  for (let done = 1; done <= 6; done++) {
    const wire = done >= wireFrom ? (done - wireFrom + 1) * 64 * MiB : 0;
    list.push({
      completedBytes: done * part,
      transferredBytes: done * part,
      wireBytes: wire,
      totalBytes: 6 * part,
      phase: "uploading",
      partsDone: done,
      partsTotal: 6,
      partsActive: 0,
    });
  }
  return list;
}

Deno.test("a re-push is checking, with the speed of the check and a time left, never an upload", () => {
  // The library's first snapshot of a push may already be `uploading` (its first phase change).
  for (const skipHashing of [false, true]) {
    repushIsChecking(repushSnapshots().slice(skipHashing ? 1 : 0));
  }
});

function repushIsChecking(snapshots: TransferSnapshot[]): void {
  const h = harness(120);
  const bar = new ProgressBar(h.options);
  const plainLines: string[] = [];
  const plain = new PlainProgress({ ...h.options, write: (t) => void plainLines.push(t) }, {
    intervalMs: 500,
  });
  for (const snapshot of snapshots) {
    h.advance(300);
    bar.update(snapshot);
    plain.update(snapshot);
  }
  const draws = visibleDraws(h.out);
  assert(!h.out.includes("uploading"), `nothing was uploaded:\n${draws.join("\n")}`);
  assert(!plainLines.join("").includes("uploading"), plainLines.join(""));
  const checking = draws.filter((d) => d.startsWith("checking"));
  assert(checking.length >= 5, draws.join("\n"));
  // 512 MiB checked every 300 ms: the speed of the check, and the time it still needs.
  assert(checking.slice(1).every((d) => /\d\.\d+ GiB\/s {2}ETA \d+s/.test(d)), checking.join("\n"));
  assert(
    plainLines.some((l) => /^checking \d+% .* GiB\/s ETA \d+s\n$/.test(l)),
    plainLines.join(""),
  );
}

Deno.test("the label switches from checking to uploading when bytes really move", () => {
  const h = harness(120);
  const bar = new ProgressBar(h.options);
  for (const snapshot of repushSnapshots(4)) {
    h.advance(300);
    bar.update(snapshot);
  }
  const labels = visibleDraws(h.out).map((d) => d.split(" ")[0]);
  assertEquals([...new Set(labels)], ["hashing", "checking", "uploading"], labels.join(","));
  const firstUpload = labels.indexOf("uploading");
  assertStrictEquals(labels.slice(firstUpload).every((l) => l === "uploading"), true, `${labels}`);
});

Deno.test("verify's hashing is checking, with its speed, on the bar and in plain lines", () => {
  const h = harness(100);
  const bar = new ProgressBar(h.options);
  const plainLines: string[] = [];
  const plain = new PlainProgress({ ...h.options, write: (t) => void plainLines.push(t) }, {
    intervalMs: 1000,
  });
  const total = 3 * GiB;
  for (let hashed = 0; hashed <= total; hashed += 128 * MiB) {
    h.advance(100);
    const snapshot = {
      completedBytes: Math.floor(hashed / (512 * MiB)) * 512 * MiB,
      transferredBytes: hashed,
      wireBytes: 0,
      totalBytes: total,
      phase: "verifying",
      partsDone: Math.floor(hashed / (512 * MiB)),
      partsTotal: 6,
      partsActive: 2,
    };
    bar.update(snapshot);
    plain.update(snapshot);
  }
  const last = visibleDraws(h.out).at(-1)!;
  assert(
    /^checking {5}99% \[=+>\] 3\.00\/3\.00 GiB {2}6\/6 parts, 2 active {2}1\.25 GiB\/s {2}ETA 0s/
      .test(last),
    last,
  );
  const checkLine =
    /^checking \d+% \d\.\d\d\/3\.00 GiB \d\/6 parts, 2 active 1\.\d\d GiB\/s ETA \ds\n$/;
  assert(plainLines.filter((l) => checkLine.test(l)).length >= 2, plainLines.join(""));
});

Deno.test("auto without a terminal: silent for 30 s, then a line at each phase and at least every 30 s, even stalled", () => {
  const h = harness();
  const auto = createProgressRenderer("auto", h.options, false)!;
  const lines = () => h.out === "" ? [] : h.out.trimEnd().split("\n");
  const at = (done: number, phase = "downloading"): TransferSnapshot => ({
    ...partSnap(done, phase),
    partsActive: 2,
    events: done > 0 ? [{ kind: "verified", index: 0, size: 32 * MiB }] : [],
  });
  auto.update(at(0, "resolving"));
  auto.update(at(0));
  h.advance(10_000);
  auto.update(at(40 * MiB)); // within the first 30 s: nothing, phase changes included
  assertStrictEquals(lines().length, 0, h.out);
  h.advance(20_000); // 30 s after the start, without a new snapshot
  assertStrictEquals(lines().length, 1, h.out);
  assert(
    /^downloading 13% 40\/286 MiB 1\/9 parts, 2 active \S+ \S+\/s ETA \S+$/.test(lines()[0]),
    lines()[0],
  );
  // Stalled: a line every 30 s all the same, and the speed falls to nothing.
  h.advance(30_000);
  h.advance(30_000);
  assertStrictEquals(lines().length, 3, h.out);
  assert(lines()[2].includes(" 0 B/s ETA --"), lines()[2]);
  assert(!h.out.includes("part 1/9"), "no per-part lines in a log");
  auto.update(at(286 * MiB, "committing"));
  assertStrictEquals(lines().length, 4, "a phase change writes at once");
  auto.finish(1);
  assertStrictEquals(lines().length, 5, "the final line says how it ended");
  assert(lines()[4].endsWith("stopped (exit 1)"), lines()[4]);
  assertStrictEquals(h.pendingTimers(), 0, "finish stops the heartbeat");
  assert(!h.out.includes("\r") && !h.out.includes("\x1b"), "no control characters");
});

Deno.test("auto without a terminal: a transfer shorter than 30 s leaves the log as it was", () => {
  const h = harness();
  const auto = createProgressRenderer("auto", h.options, false)!;
  auto.update(partSnap(0, "resolving"));
  auto.update(partSnap(0));
  h.advance(29_000);
  auto.update(partSnap(286 * MiB, "committing"));
  auto.update({ ...partSnap(286 * MiB, "done"), partsSkipped: 3 });
  auto.finish(0);
  assertStrictEquals(h.out, "");
  assertStrictEquals(h.pendingTimers(), 0, "the quiet start's timer is gone");
});

Deno.test("bar: a stall redraws every second with the speed falling", () => {
  const h = harness(100);
  const bar = new ProgressBar(h.options);
  bar.update(partSnap(0));
  h.advance(1000);
  bar.update(partSnap(100 * MiB)); // 100 MiB/s, then nothing more arrives
  const before = visibleDraws(h.out).length;
  for (let i = 0; i < 6; i++) h.advance(1000);
  const draws = visibleDraws(h.out);
  assert(draws.length >= before + 5, `${draws.length - before} redraws in a 6 s stall`);
  assert(/ 0 B\/s {2}ETA -- /.test(draws.at(-1)!), draws.at(-1));
});

Deno.test("bar: interrupt redraws the line over the ^C echo and ends it, once; nothing after", () => {
  const h = harness(100);
  const bar = new ProgressBar(h.options);
  bar.update(partSnap(0));
  h.advance(1000);
  bar.update(partSnap(120 * MiB));
  const before = h.out.length;
  bar.interrupt();
  const ending = h.out.slice(before);
  assert(
    ending.startsWith("\rdownloading  41% [") && ending.endsWith("\x1b[K\n"),
    JSON.stringify(ending),
  );
  assertStrictEquals(ending.split("\r").length, 2, "one redraw");
  bar.update(partSnap(130 * MiB));
  h.advance(5000);
  bar.interrupt();
  bar.finish(130);
  assertStrictEquals(h.out.length, before + ending.length, JSON.stringify(h.out.slice(before)));
  assertStrictEquals(h.pendingTimers(), 0);
  // Stopped before anything was drawn: the echo's line is cleared, and nothing else is written.
  const early = harness(100);
  const idle = new ProgressBar(early.options);
  idle.interrupt();
  idle.finish(130);
  assertStrictEquals(early.out, "\r\x1b[K");
});

Deno.test("resuming: each renderer says once what a resumed pull found on disk", () => {
  const resumed = (transferred: number, phase = "downloading"): TransferSnapshot => ({
    ...partSnap(transferred, phase),
    resumedBytes: 96 * MiB,
  });
  const h = harness();
  const plain = new PlainProgress(h.options);
  plain.update(partSnap(0, "resolving"));
  plain.update(resumed(96 * MiB));
  plain.update(resumed(100 * MiB));
  assertStrictEquals(h.out.split("\n")[1], "resuming: 96.0 MiB of 286 MiB on disk", h.out);
  assertStrictEquals(h.out.split("resuming:").length, 2, h.out);

  const j = harness();
  const json = new JsonProgress(j.options);
  json.update(partSnap(0, "downloading"));
  j.advance(10); // within the throttle interval: the first word of a resume is written at once
  json.update(resumed(96 * MiB));
  const records = j.out.trimEnd().split("\n").map((l) => JSON.parse(l));
  assertStrictEquals(records.length, 2, j.out);
  assertStrictEquals(records[1].resumedBytes, 96 * MiB);

  // A fresh pull (nothing found) says nothing.
  const f = harness();
  const fresh = new ProgressBar(f.options);
  fresh.update({ ...partSnap(0), resumedBytes: 0 });
  fresh.finish(0);
  assert(!f.out.includes("resuming"), f.out);
});

Deno.test("a resume whose downloads start during the check: what it found first, then the download at its own speed", () => {
  // 300 MiB in 5 parts; an earlier pull left 174 MiB. The check finds them over a second while
  // the torn parts already download at 30 MiB/s; then the download goes on alone.
  const total = 300 * MiB;
  const at = (ms: number, checked: boolean): TransferSnapshot => {
    const wire = Math.round((30 * MiB * ms) / 1000);
    const found = checked ? 174 * MiB : Math.min(174 * MiB, Math.round((174 * MiB * ms) / 1000));
    return {
      completedBytes: 0,
      transferredBytes: found + wire,
      wireBytes: wire,
      totalBytes: total,
      phase: ms === 0 ? "verifying" : "downloading",
      partsDone: 0,
      partsSkipped: 0,
      partsTotal: 5,
      partsActive: 5,
      resumedBytes: found,
      resumeChecked: checked,
      path: "downloads/weights.bin",
    };
  };
  const h = harness(110);
  const bar = new ProgressBar(h.options);
  const p = harness(110);
  const plain = new PlainProgress(p.options, { intervalMs: 500 });
  for (let ms = 0; ms <= 3000; ms += 100) {
    const snapshot = at(ms, ms > 1000);
    bar.update(snapshot);
    plain.update(snapshot);
    h.advance(100);
    p.advance(100);
  }
  for (const [name, out] of [["bar", h.out], ["plain", p.out]]) {
    const frames = out.split(/[\r\n]/).map((d) => d.replace("\x1b[K", "")).filter((d) => d !== "");
    const resuming = frames.indexOf("resuming: 174 MiB of 300 MiB on disk");
    assert(resuming > 0, `${name}: ${frames.join("\n")}`);
    assertStrictEquals(frames.filter((f) => f.startsWith("resuming:")).length, 1, name);
    // Before it, the check only; after it, the download, at the speed of the bytes received.
    for (const frame of frames.slice(0, resuming)) {
      assert(frame.startsWith("checking "), `${name}, before the resuming line: ${frame}`);
    }
    const downloading = frames.slice(resuming + 1);
    assert(downloading.length > 0, name);
    for (const frame of downloading) {
      assert(frame.startsWith("downloading "), `${name}: ${frame}`);
      // Never the 174 MiB found on disk counted as received: at most the 30 MiB/s received
      // (a line written between two snapshots shows a little less).
      const speed = Number(/ ([\d.]+) MiB\/s /.exec(frame)?.[1]);
      assert(speed >= 25 && speed <= 30, `${name}, the speed of what is received: ${frame}`);
    }
  }
});

Deno.test("interrupted: what was kept and that the same command resumes, for each transfer", () => {
  const last: TransferSnapshot = {
    completedBytes: 3 * 512 * MiB,
    wireBytes: 3 * 512 * MiB,
    totalBytes: 3 * GiB,
    phase: "downloading",
    partsDone: 3,
    partsTotal: 6,
  };
  // From standard input: no "of N" (the input had not ended) and no manifest.
  assertStrictEquals(
    interruptedLine({ kind: "push", fromStdin: true }, last),
    "3 parts (1.50 GiB) of the input uploaded and kept by the registry, no manifest written; " +
      "the same command with the same input skips them",
  );
  assertStrictEquals(
    interruptedLine({ kind: "push", fromStdin: true }, undefined),
    "no part was uploaded yet and no manifest written; run it again",
  );
  // To standard output: nothing is kept, and no partial file is named.
  const piped = { kind: "pull", destination: "-", intoDirectory: false, toStdout: true } as const;
  assertStrictEquals(
    interruptedLine(piped, last),
    "3 of 6 parts written; a pull to standard output keeps nothing to resume from; " +
      "run the same command to start again",
  );
  assertStrictEquals(
    interruptedLine(piped, undefined),
    "a pull to standard output keeps nothing to resume from; run the same command to start again",
  );
  const file = { kind: "pull", destination: "out/w.bin", intoDirectory: false } as const;
  assertStrictEquals(
    interruptedLine(file, { ...last, path: "out/w.bin" }),
    "1.50 GiB of 3.00 GiB kept (3 of 6 parts complete) in out/w.bin.parted-partial; " +
      "run the same command to resume",
  );
  // Into a directory: the partial is named by the file the pull's snapshots name, and the
  // bytes landed in parts still in flight count, so "0 parts complete" is not "nothing kept".
  const directory = { kind: "pull", destination: "downloads", intoDirectory: true } as const;
  assertStrictEquals(
    interruptedLine(directory, {
      ...last,
      completedBytes: 0,
      transferredBytes: 172 * MiB,
      totalBytes: 300 * MiB,
      partsDone: 0,
      partsTotal: 5,
      path: "downloads/weights.bin",
      resumeChecked: true,
    }),
    "172 MiB of 300 MiB kept (0 of 5 parts complete) in downloads/weights.bin.parted-partial; " +
      "run the same command to resume",
  );
  // What a resume found on disk (part prefixes included) is kept too.
  assertStrictEquals(
    interruptedLine(directory, { ...last, resumedBytes: 2.1 * GiB, path: "downloads/w.bin" }),
    "2.10 GiB of 3.00 GiB kept (3 of 6 parts complete) in downloads/w.bin.parted-partial; " +
      "run the same command to resume",
  );
  // Stopped while an earlier pull's partial was being checked: the count is not all it holds.
  assertStrictEquals(
    interruptedLine(file, { ...last, phase: "verifying", resumeChecked: false }),
    "the check of out/w.bin.parted-partial was not finished; the file is kept; run the same " +
      "command to resume",
  );
  assertStrictEquals(
    interruptedLine({ kind: "push" }, last),
    "3 of 6 parts (1.50 GiB of 3.00 GiB) uploaded and kept by the registry; run the same " +
      "command to resume",
  );
  assertStrictEquals(
    interruptedLine({ kind: "copy" }, last),
    "3 of 6 parts (1.50 GiB of 3.00 GiB) copied and kept by the target registry; run the same " +
      "command to resume",
  );
  assertStrictEquals(
    interruptedLine(file, undefined),
    "no part was complete yet; run the same command to resume",
  );
  assertStrictEquals(
    interruptedLine({ kind: "push" }, { ...last, completedBytes: 0, partsDone: 0 }),
    "no part was uploaded yet; run the same command to start again",
  );
  assertStrictEquals(
    interruptedLine({ kind: "verify" }, last),
    "3 of 6 parts compared; run the same command to compare every part",
  );
  // A path the user typed, or a title the registry chose, cannot drive the terminal.
  const typed = interruptedLine(
    { kind: "pull", destination: "a\x1b]0;pwned\x07b", intoDirectory: false },
    last,
  );
  assert(
    // deno-lint-ignore no-control-regex
    !/[\x00-\x1f]/.test(typed) && typed.includes("a\\x1b]0;pwned\\x07b.parted-partial"),
    typed,
  );
  const titled = interruptedLine(directory, { ...last, path: "d/\u202ew.bin" });
  assert(titled.includes("d/\\u202ew.bin.parted-partial"), titled);
});

Deno.test("verify takes --progress like push and pull, auto by default", () => {
  const ref = "127.0.0.1:5000/m/w:v1";
  const parsed = parseCommandLine(["verify", "--progress", "plain", ref, "w.bin"]);
  assertStrictEquals(parsed.kind === "verify" && parsed.progress, "plain");
  const plainDefault = parseCommandLine(["verify", ref, "w.bin"]);
  assertStrictEquals(plainDefault.kind === "verify" && plainDefault.progress, "auto");
  assertThrows(() => parseCommandLine(["verify", "--progress", "fancy", ref, "w.bin"]), UsageError);
  assertThrows(() => parseCommandLine(["inspect", "--progress", "bar", ref]), UsageError);
});
