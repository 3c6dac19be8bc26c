/**
 * A request time limit at the edge, as GHCR (an upload request is cut after 10 minutes) and zot
 * (a 60 s read timeout) set one, scaled down: the fault proxy in front of the real Distribution
 * reads each part body at a capped speed per connection and drops every exchange still
 * unanswered after 2 s, so a part that needs 3 s never fits. The push fails with the limit and
 * a part size that fits at the speed of one connection, and that size then passes the same edge.
 * An edge may also answer when its time is up (a gateway's 504 or 502) instead of dropping the
 * connection: the same limit, recognised the same way.
 */
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError, NetworkError, RetriesExhaustedError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { PartSizeError } from "../../src/parted/part_size_error.ts";
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertMatch,
  assertRejects,
} from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, hintLines, runCli, spawnCli } from "../cli/_cli.ts";
import {
  FAST_RETRY,
  isPowerOfTwo,
  MANIFEST_PUT,
  MiB,
  PART_PUT,
  partSizeError,
  rerunWords,
} from "./_hosted.ts";

/** The edge's limit on one request. */
const LIMIT_MS = 2000;

/** What a gateway answers when its time is up, instead of dropping the connection. */
function gatewayAnswer(status: 502 | 504) {
  const body = `<html><body><h1>${status} Gateway Time-out</h1></body></html>\n`;
  return { status, headers: { "content-type": "text/html" }, body };
}

registryTest(
  "request time limit: every attempt of a part is cut; the error names the limit and a part size that then passes",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    // 8 MiB/s per connection: a 24 MiB part needs 3 s, 4 MiB fits in 0.5 s.
    edge.fault({ ...PART_PUT, throttleRequest: 8 * MiB, cutAfterMs: LIMIT_MS, times: Infinity });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    const digest = await writePatternFile(src, 48 * MiB, 7);
    using client = new PartedClient({ plainHttp: true, retryPolicy: FAST_RETRY });
    const ref = `${edge.host}/hosted/time:v1`;

    const err = await assertRejects(() =>
      client.push(ref, fromFile(src), { partSize: 24 * MiB, workers: 2 })
    );
    const limit = partSizeError(err);
    assertEquals(limit.limit, "request-time");
    assertEquals(limit.partSize, 24 * MiB);
    assertEquals(limit.facts.attempts, 3, "the whole budget, every attempt cut");
    const cutAfter = limit.facts.cutAfterMs ?? 0;
    assert(cutAfter >= LIMIT_MS - 100 && cutAfter < LIMIT_MS + 1500, `cut after ${cutAfter} ms`);
    const size = limit.suggestedPartSize ?? 0;
    assert(isPowerOfTwo(size) && size >= MiB && size <= 8 * MiB, `suggested ${size}`);
    assertMatch(
      (err as Error).message,
      /^part [01]: upload: each of 3 attempts was cut after about 2\.\d s at [\d.]+ MiB\/s: the registry or a proxy in front of it limits how long a request may take; parts of \d MiB fit \(a new part size is a new artifact: every part is uploaded again\)$/,
    );
    assertEquals(retryable(err).retryable, false, "the same part size would fail again");
    assertInstanceOf(findError(err, RetriesExhaustedError), RetriesExhaustedError);
    assertEquals(edge.count(MANIFEST_PUT), 0, "no manifest");

    // The suggested size, through the same edge: every part fits in time.
    edge.log.length = 0;
    await client.push(ref, fromFile(src), { partSize: size, workers: 2 });
    const puts = edge.log.filter((r) => PART_PUT.path.test(r.path) && r.method === "PUT");
    assertEquals(puts.length, 48 * MiB / size + 1, "each part and the config once");
    assert(puts.every((r) => r.status === 201), "no upload cut");
    await client.pull(`${registry.host}/hosted/time:v1`, toFile(`${dir.path}/out.bin`));
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
  },
);

registryTest(
  "request time limit answered with a 504 by the edge: the error names the limit and a part size that then passes",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    // 8 MiB/s per connection: a 24 MiB part needs 3 s; the gateway answers 504 at 2 s.
    edge.fault({
      ...PART_PUT,
      throttleRequest: 8 * MiB,
      cutAfterMs: LIMIT_MS,
      cutAnswer: gatewayAnswer(504),
      times: Infinity,
    });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    const digest = await writePatternFile(src, 48 * MiB, 16);
    using client = new PartedClient({ plainHttp: true, retryPolicy: FAST_RETRY });
    const ref = `${edge.host}/hosted/gateway:v1`;

    const err = await assertRejects(() =>
      client.push(ref, fromFile(src), { partSize: 24 * MiB, workers: 2 })
    );
    const puts = edge.log.filter((r) => PART_PUT.path.test(r.path) && r.method === "PUT");
    // Those of the other worker's part still running when the push failed have no answer.
    const answered = puts.flatMap((r) => r.status === undefined ? [] : [r.status]);
    assert(answered.length >= 3 && answered.every((status) => status === 504), `${answered}`);
    assertEquals(findError(err, HttpStatusError)?.status, 504, "the gateway's answer");
    const limit = partSizeError(err);
    assertEquals(limit.limit, "request-time");
    assertEquals(limit.partSize, 24 * MiB);
    assertEquals(limit.facts.attempts, 3, "the whole budget, every attempt answered 504");
    const cutAfter = limit.facts.cutAfterMs ?? 0;
    assert(cutAfter >= LIMIT_MS - 100 && cutAfter < LIMIT_MS + 1500, `cut after ${cutAfter} ms`);
    const size = limit.suggestedPartSize ?? 0;
    assert(isPowerOfTwo(size) && size >= MiB && size <= 8 * MiB, `suggested ${size}`);
    assertMatch(
      (err as Error).message,
      /^part [01]: upload: each of 3 attempts was cut after about 2\.\d s at [\d.]+ MiB\/s: the registry or a proxy in front of it limits how long a request may take; parts of \d MiB fit \(a new part size is a new artifact: every part is uploaded again\)$/,
    );
    assertEquals(retryable(err).retryable, false, "the same part size would fail again");
    assertEquals(edge.count(MANIFEST_PUT), 0, "no manifest");

    edge.log.length = 0;
    await client.push(ref, fromFile(src), { partSize: size, workers: 2 });
    const fitted = edge.log.filter((r) => PART_PUT.path.test(r.path) && r.method === "PUT");
    assert(fitted.every((r) => r.status === 201), "no upload answered 504");
    await client.pull(`${registry.host}/hosted/gateway:v1`, toFile(`${dir.path}/out.bin`));
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
  },
);

registryTest(
  "request time limit with a per-connection cap: the size fits one upload's speed, not the sum of the workers'",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    // 6 MiB/s on each of 3 connections (18 MiB/s together): 16 MiB parts need 2.7 s.
    edge.fault({ ...PART_PUT, throttleRequest: 6 * MiB, cutAfterMs: LIMIT_MS, times: Infinity });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    await writePatternFile(src, 48 * MiB, 8);
    using client = new PartedClient({ plainHttp: true, retryPolicy: FAST_RETRY });
    const ref = `${edge.host}/hosted/capped:v1`;
    const err = await assertRejects(() =>
      client.push(ref, fromFile(src), { partSize: 16 * MiB, workers: 3 })
    );
    const limit = partSizeError(err);
    const speed = limit.facts.bytesPerSecond ?? Infinity;
    assert(speed < 9 * MiB, `one connection's speed, not the workers' sum: ${speed}`);
    const size = limit.suggestedPartSize ?? 0;
    assert(size <= 6 * MiB, `fits one connection: ${size}`);
    edge.log.length = 0;
    await client.push(ref, fromFile(src), { partSize: size, workers: 3 });
    assert(
      edge.log.filter((r) => r.method === "PUT").every((r) => r.status === 201),
      "every part fits",
    );
  },
);

registryTest(
  "cuts at different times, or within a second, are not a time limit: the budget's usual failure",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    await writePatternFile(src, 24 * MiB, 9);
    using client = new PartedClient({ plainHttp: true, retryPolicy: FAST_RETRY });
    const push = (tag: string) =>
      client.push(`${edge.host}/hosted/drops:${tag}`, fromFile(src), {
        partSize: 24 * MiB,
        workers: 1,
      });

    // Cut after 1.2 s, 2.4 s, 1.3 s: a flaky link, not a limit.
    for (const [nth, cutAfterMs] of [[1, 1200], [2, 2400], [3, 1300]]) {
      edge.fault({ ...PART_PUT, nth, throttleRequest: 4 * MiB, cutAfterMs });
    }
    const uneven = await assertRejects(() => push("uneven"), RetriesExhaustedError);
    assertEquals(findError(uneven, PartSizeError), undefined);
    assertInstanceOf(findError(uneven, NetworkError), NetworkError);

    // Every attempt dropped at 0.3 s: a connection that fails, no time anyone would set.
    edge.clearFaults();
    edge.fault({ ...PART_PUT, throttleRequest: 4 * MiB, cutAfterMs: 300, times: Infinity });
    const quick = await assertRejects(() => push("quick"), RetriesExhaustedError);
    assertEquals(findError(quick, PartSizeError), undefined);
  },
);

registryTest(
  "cli: a request time limit prints the command to run with a part size that fits, and it pushes",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    edge.fault({ ...PART_PUT, throttleRequest: 8 * MiB, cutAfterMs: LIMIT_MS, times: Infinity });
    await using tmp = await tempDir();
    const src = `${tmp.path}/weights.bin`;
    await writePatternFile(src, 48 * MiB, 10);
    const ref = `${edge.host}/hosted/cli-time:v1`;
    const args = ["--plain-http", "--part-size", "24MiB", "--workers", "2", ref, src];
    const failed = await runCli(["push", "--progress", "none", ...args], { tmp: tmp.path });
    assertEquals(failed.code, 1, failed.stderr);
    assertEquals(failed.stdout, "");
    const [error, why] = failureLines(failed.stderr);
    assertMatch(
      error,
      /^ocipart push: part [01]: upload: each of 4 attempts was cut after about 2\.\d s/,
    );
    assertEquals(why, "ocipart push: no sentinel matched (exit 1)");
    assertEquals(
      failed.stderr.split("\n")[0],
      `ocipart push: ${edge.host} cut every upload of a 24MiB part after about the same time: ` +
        "it, or a proxy in front of it, limits how long a request may take",
    );
    const hint = hintLines(failed.stderr);
    assertMatch(
      hint[0],
      /^ocipart push: hint: push again with --part-size \dMiB \(a part then fits the time limit at the speed measured\); no part already uploaded at 24MiB is reused \(a new part size makes a new artifact\)\. Run:$/,
    );
    const words = rerunWords(failed.stderr);
    const size = words[3];
    assertEquals(words, [
      "ocipart",
      "push",
      "--part-size",
      size,
      "--progress",
      "none",
      "--plain-http",
      "--workers",
      "2",
      ref,
      src,
    ]);
    const rerun = await runCli(words.slice(1), { tmp: tmp.path });
    assertEquals(rerun.code, 0, rerun.stderr);
    assertMatch(rerun.stdout, /^sha256:[0-9a-f]{64}\n$/);
  },
);

registryTest(
  "cli: a request time limit answered with a 502 prints the limit and the command with a part size that fits",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    edge.fault({
      ...PART_PUT,
      throttleRequest: 8 * MiB,
      cutAfterMs: LIMIT_MS,
      cutAnswer: gatewayAnswer(502),
      times: Infinity,
    });
    await using tmp = await tempDir();
    const src = `${tmp.path}/weights.bin`;
    await writePatternFile(src, 48 * MiB, 17);
    const ref = `${edge.host}/hosted/cli-gateway:v1`;
    const args = ["--plain-http", "--part-size", "24MiB", "--workers", "2", ref, src];
    const failed = await runCli(["push", "--progress", "none", ...args], { tmp: tmp.path });
    assertEquals(failed.code, 1, failed.stderr);
    assertEquals(failed.stdout, "");
    const answered = edge.log.flatMap((r) =>
      r.method === "PUT" && r.status !== undefined ? [r.status] : []
    );
    assert(answered.length >= 4 && answered.every((status) => status === 502), `${answered}`);
    assertEquals(
      failed.stderr.split("\n")[0],
      `ocipart push: ${edge.host} cut every upload of a 24MiB part after about the same time: ` +
        "it, or a proxy in front of it, limits how long a request may take",
    );
    const [error, why] = failureLines(failed.stderr);
    assertMatch(
      error,
      /^ocipart push: part [01]: upload: each of 4 attempts was cut after about 2\.\d s at [\d.]+ MiB\/s: .*; parts of \d MiB fit /,
    );
    assertEquals(why, "ocipart push: no sentinel matched (exit 1)");
    assert(!failed.stderr.includes("Gateway"), "the gateway's body is never shown");
    const hint = hintLines(failed.stderr);
    assertMatch(
      hint[0],
      /^ocipart push: hint: push again with --part-size \dMiB \(a part then fits the time limit at the speed measured\); no part already uploaded at 24MiB is reused \(a new part size makes a new artifact\)\. Run:$/,
    );
    const words = rerunWords(failed.stderr);
    const size = words[3];
    assertEquals(error.match(/parts of (\d) MiB fit/)?.[1], size.replace("MiB", ""));
    const rerun = await runCli(words.slice(1), { tmp: tmp.path });
    assertEquals(rerun.code, 0, rerun.stderr);
    assertMatch(rerun.stdout, /^sha256:[0-9a-f]{64}\n$/);
  },
);

registryTest(
  "cli: Ctrl-C while cut uploads are retried exits 130 without a hint",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    edge.fault({ ...PART_PUT, throttleRequest: 8 * MiB, cutAfterMs: LIMIT_MS, times: Infinity });
    await using tmp = await tempDir();
    const src = `${tmp.path}/weights.bin`;
    await writePatternFile(src, 24 * MiB, 15);
    const child = spawnCli(
      ["push", "--plain-http", "--part-size", "24MiB", `${edge.host}/hosted/stop:v1`, src],
      { tmp: tmp.path },
    );
    await child.stdin.close();
    const stderr = new Response(child.stderr).text();
    void new Response(child.stdout).text();
    // Once the first attempt has been cut.
    while (edge.log.filter((r) => r.method === "PUT").length < 2) {
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill("SIGINT");
    const status = await child.status;
    const text = await stderr;
    assertEquals(status.code, 130, text);
    assertEquals(hintLines(text), [], "no rerun advice after a stop");
  },
);
