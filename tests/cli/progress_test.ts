import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { formatBytes, formatRate, formatSeconds } from "../../src/cli/format.ts";
import { createProgressRenderer } from "../../src/cli/progress.ts";
import { ProgressBar } from "../../src/cli/progress_bar.ts";
import { JsonProgress } from "../../src/cli/progress_json.ts";
import { PlainProgress } from "../../src/cli/progress_plain.ts";
import { progressStatus } from "../../src/cli/progress_status.ts";
import type { TransferSnapshot } from "../../src/cli/progress_types.ts";
import { RateMeter } from "../../src/cli/rate_meter.ts";

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
  strictEqual(formatBytes(0), "0 B");
  strictEqual(formatBytes(1023), "1023 B");
  strictEqual(formatBytes(1024), "1.00 KiB");
  strictEqual(formatBytes(1.5 * 1024 ** 3), "1.50 GiB");
  strictEqual(formatBytes(150 * MiB), "150 MiB");
  strictEqual(formatBytes(1024 * 1024 - 1), "1.00 MiB");
  strictEqual(formatRate(undefined), "-- B/s");
  strictEqual(formatRate(215 * MiB), "215 MiB/s");
  strictEqual(formatSeconds(undefined), "--");
  strictEqual(formatSeconds(8.4), "8s");
  strictEqual(formatSeconds(185), "3m05s");
  strictEqual(formatSeconds(7380), "2h03m");
});

Deno.test("rate meter averages over its window and overall", () => {
  const meter = new RateMeter(1000);
  meter.sample(0, 0);
  strictEqual(meter.rate(), undefined);
  meter.sample(500, 500);
  meter.sample(1000, 1000);
  meter.sample(3000, 1000); // stalled for two seconds
  strictEqual(meter.rate(), 0, "the window forgets the early bytes");
  strictEqual(Math.round(meter.average()!), 333);
  strictEqual(meter.elapsed(), 3000);
});

Deno.test("rate meter stays small and exact under a flood of samples", () => {
  const meter = new RateMeter(5000);
  // One sample per 64 KiB at 1 GiB/s for 20 s: 327,680 samples.
  for (let i = 0; i <= 20 * 16384; i++) meter.sample(i / 16.384, i * 64 * 1024);
  strictEqual(Math.round(meter.rate()! / MiB), 1024);
  strictEqual(Math.round(meter.average()! / MiB), 1024);
});

Deno.test("status blends placed and transferred bytes and reaches 100% only when done", () => {
  deepStrictEqual(progressStatus(snap(0, 50 * MiB), 10 * MiB), {
    fraction: 0.5,
    shownBytes: 50 * MiB,
    etaSeconds: 5,
  });
  // Redone work can push wireBytes past the total; the display never exceeds it.
  strictEqual(progressStatus(snap(100 * MiB, 130 * MiB, "manifest"), 1).fraction, 0.999);
  strictEqual(progressStatus(snap(100 * MiB, 0, "done"), undefined).fraction, 1);
  strictEqual(progressStatus(snap(0, 0, "resolving", 0), undefined).fraction, 0);
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
  ok(draws.length <= 10, `${draws.length} redraws`);
  ok(draws.length >= 4, `${draws.length} redraws`);
  for (const draw of draws.slice(0, -1)) {
    ok(draw.endsWith("\x1b[K"), JSON.stringify(draw));
    ok(!draw.includes("\n"), "a redraw never starts a new line");
  }
  const last = draws.at(-1)!;
  ok(last.endsWith("\x1b[K\n"), JSON.stringify(last));
  ok(last.startsWith("done"), last);
  ok(last.includes("100%"), last);
  ok(last.includes("[========================================]"), last);
  ok(last.includes("100 MiB / 100 MiB"), last);
  ok(h.out.includes("uploading"), "the phase is shown");
  ok(draws.some((d) => /ETA \d+s/.test(d)), "an ETA is shown once a rate is known");
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
      ok(visible.length < columns, `${visible.length} >= ${columns}: ${visible}`);
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
  strictEqual(draws.length, 2, "finish draws the held-back state once");
  ok(!draws[1].includes("100%") && draws[1].includes("60%"), draws[1]);
  ok(h.out.endsWith("\x1b[K\n"));
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
  ok(!h.out.includes("\r") && !h.out.includes("\x1b"), "no control characters");
  // hashing, uploading, two interval lines over 10 s, and done (not repeated by finish).
  strictEqual(lines.length, 5, lines.join("\n"));
  ok(lines.at(-1)!.startsWith("done 100% 100 MiB / 100 MiB"), lines.at(-1));
  ok(/ in 10s$/.test(lines.at(-1)!), lines.at(-1));
});

Deno.test("plain final line after a failure names the exit code", () => {
  const h = harness();
  const plain = new PlainProgress(h.options);
  plain.update(snap(0, 10 * MiB, "downloading"));
  plain.finish(5);
  ok(h.out.trimEnd().split("\n").at(-1)!.endsWith("stopped (exit 5)"), h.out);
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
  ok(lines.length <= 14, `${lines.length} lines for 1 s of updates`);
  for (const line of lines.slice(0, -1)) {
    deepStrictEqual(Object.keys(line), ["completedBytes", "wireBytes", "totalBytes", "phase"]);
  }
  deepStrictEqual(lines.at(-1), {
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
    ok(!h.out.includes("2.00 MiB") && !h.out.includes(`"wireBytes":${2 * MiB}`), h.out);
    h.advance(100);
    ok(h.out.includes("2.00 MiB") || h.out.includes(`"wireBytes":${2 * MiB}`), h.out);
    renderer.update(snap(0, 3 * MiB, "downloading"));
    renderer.finish(130);
    strictEqual(h.pendingTimers(), 0, "finish cancels the held-back draw");
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
  deepStrictEqual(lines.map((l) => l.completedBytes), [50, 50, 50]);
  strictEqual(lines.at(-1).exitCode, 1);
});

Deno.test("json without any snapshot still ends with a line carrying the exit code", () => {
  const h = harness();
  const json = new JsonProgress(h.options);
  json.finish(3);
  deepStrictEqual(JSON.parse(h.out), {
    completedBytes: 0,
    wireBytes: 0,
    totalBytes: 0,
    phase: "resolving",
    exitCode: 3,
  });
});

Deno.test("auto is a bar on a terminal and nothing elsewhere", () => {
  const options = { write: () => {} };
  ok(createProgressRenderer("auto", options, true) instanceof ProgressBar);
  strictEqual(createProgressRenderer("auto", options, false), undefined);
  strictEqual(createProgressRenderer("none", options, true), undefined);
  ok(createProgressRenderer("bar", options, false) instanceof ProgressBar);
  ok(createProgressRenderer("plain", options, true) instanceof PlainProgress);
  ok(createProgressRenderer("json", options, true) instanceof JsonProgress);
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

/** The visible text of each redraw. */
const visibleDraws = (out: string) =>
  out.split("\r").slice(1).map((d) => d.replace("\x1b[K", "").replace(/\n[^]*$/, ""));

Deno.test("bar at 40, 50 and 80 columns: a bar, the percentage and the time left, never cut", () => {
  const expectations: Array<[number, RegExp[]]> = [
    [40, [/^downloading\s+41% \[=+>\s*\] ETA \d+s$/]],
    [50, [/^downloading\s+41% \[=+>\s*\] ETA \d+s$/]],
    [80, [
      /^downloading\s+41% \[=+>\s*\] 120 MiB \/ 286 MiB\s+3\/9 parts\s+\S+ MiB\/s\s+ETA \d+s$/,
    ]],
  ];
  for (const [columns, patterns] of expectations) {
    const h = harness(columns);
    const bar = new ProgressBar(h.options);
    bar.update(partSnap(0));
    h.advance(1000);
    bar.update(partSnap(120 * MiB));
    const draws = visibleDraws(h.out);
    const last = draws.at(-1)!;
    for (const pattern of patterns) ok(pattern.test(last), `${columns} columns: ${last}`);
    for (const draw of draws) ok(draw.length < columns, `${columns}: ${draw}`);
    ok(!/\bE$|\bET$/.test(last), `the ETA is never cut: ${last}`);
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
      ok(draw.length < columns, `${columns}: ${draw}`);
      if (columns >= 40) ok(/\[[=> ]{10,}\]/.test(draw), `${columns}: no bar in ${draw}`);
    }
  }
});

Deno.test("bar moves with bytes landed, never backwards, and says how many parts were present", () => {
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
  });
  for (let landed = 0; landed <= 30 * MiB; landed += 3 * MiB) {
    h.advance(200);
    bar.update(resumed(landed));
  }
  bar.update({ ...resumed(30 * MiB, "done"), completedBytes: 286 * MiB, partsDone: 9 });
  bar.finish(0);
  const percents = visibleDraws(h.out).map((d) => Number(/(\d+)%/.exec(d)![1]));
  ok(percents.length >= 10, `${percents}`);
  for (let i = 1; i < percents.length; i++) ok(percents[i] >= percents[i - 1], `${percents}`);
  ok(new Set(percents).size >= 5, `the bar moves while the last part lands: ${percents}`);
  ok(h.out.endsWith("\n8 of 9 parts already present\n"), JSON.stringify(h.out.slice(-80)));
  ok(visibleDraws(h.out).some((d) => d.includes(" 8/9 parts (8 present) ")), h.out);
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
  deepStrictEqual(lines.filter((l) => l.startsWith("part ")), [
    "part 1/3 exists (already in the registry) 1.00 MiB",
    "part 2/3 uploaded 1.00 MiB",
    "part 3/3 uploaded 1.00 MiB",
  ]);
  strictEqual(lines.at(-1), "1 of 3 parts already present");
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
  strictEqual(lines.filter((l) => l.phase === "done").length, 1, h.out);
  strictEqual(lines.at(-1).exitCode, 0);
  deepStrictEqual(lines.flatMap((l) => l.events ?? []).map((e: { index: number }) => e.index), [
    0,
    1,
    2,
  ]);
});
