/**
 * SIGINT and SIGTERM mid-transfer: the CLI stops in order, exits 130/143 whatever error the
 * library reported, and leaves state a rerun resumes from. The transfer is held mid-way by a
 * fault proxy in front of the real registry (no timing: the signal is sent once `--progress
 * json` reports two parts in place, and the third part's request never finishes).
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, lines, runCli, spawnCli, stallFromThirdPart } from "./_cli.ts";
import { randomBytes } from "../fixtures/random.ts";

const KiB = 1024;
const PART = 256 * KiB;
const SIZE = 4 * PART;

async function writeRandomFile(path: string, size: number): Promise<Uint8Array> {
  const bytes = randomBytes(size);
  await Deno.writeFile(path, bytes);
  return bytes;
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

interface Record {
  completedBytes: number;
  wireBytes: number;
  totalBytes: number;
  phase: string;
  exitCode?: number;
}

/**
 * Runs the CLI, sends `signal` once a progress line shows two parts in place, and returns the
 * exit code, the JSON records and the non-JSON stderr lines.
 */
async function interrupt(
  args: string[],
  tmp: string,
  signal: "SIGINT" | "SIGTERM",
): Promise<{ code: number; records: Record[]; text: string[]; stdout: string }> {
  const child = spawnCli(args, { tmp });
  await child.stdin.close();
  const stdout = new Response(child.stdout).text();
  const records: Record[] = [];
  const text: string[] = [];
  let sent = false;
  for await (const line of lines(child.stderr)) {
    if (!line.startsWith("{")) {
      text.push(line);
      continue;
    }
    const record = JSON.parse(line) as Record;
    records.push(record);
    // Two parts in place and the third's first 1000 bytes received (the proxy then holds it):
    // the partial then holds what the rerun must not fetch again, however loaded the machine.
    if (!sent && record.completedBytes >= 2 * PART && record.wireBytes >= 2 * PART + 1000) {
      sent = true;
      child.kill(signal);
    }
  }
  const status = await child.status;
  assert(sent, `the transfer never reached two parts: ${JSON.stringify(records.at(-1))}`);
  return { code: status.code, records, text, stdout: await stdout };
}

registryTest("130: SIGINT mid-pull keeps a partial that a rerun completes", async () => {
  await using registry = await startRegistry();
  const proxy = await startFaultProxy({ target: registry.url });
  try {
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    const bytes = await writeRandomFile(source, SIZE);
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "256KiB", `${registry.host}/models/sig:v1`, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);

    // Parts 0 and 1 arrive whole; part 2 sends a few bytes and then nothing.
    stallFromThirdPart(proxy);
    const dest = `${tmp.path}/out.bin`;
    const run = await interrupt(
      [
        "pull",
        "--plain-http",
        "--workers",
        "1",
        "--progress",
        "json",
        `${proxy.host}/models/sig:v1`,
        dest,
      ],
      tmp.path,
      "SIGINT",
    );
    assertStrictEquals(run.code, 130, run.text.join("\n"));
    assertStrictEquals(run.stdout, "");
    assertStrictEquals(
      run.records.at(-1)!.exitCode,
      130,
      "the last progress line agrees with the exit",
    );
    // The report: the error line says what was kept and that the same command resumes, then
    // the signal; nothing else (the CLI's own abort reason would only repeat the signal). Two
    // whole parts, and what of the third landed before the stall (whether the last progress
    // snapshot before the signal already counted those 1000 bytes is a matter of timing), are
    // kept.
    const report = run.text.filter((l) => l !== "stopping… (Ctrl-C again to quit now)");
    assertStrictEquals(report.length, 2, run.text.join("\n"));
    assert(
      [512, 513].some((kib) =>
        report[0] ===
          `ocipart pull: ${kib} KiB of 1.00 MiB kept (2 of 4 parts complete) in ` +
            `${dest}.parted-partial; run the same command to resume`
      ),
      report[0],
    );
    assertStrictEquals(report[1], "ocipart pull: interrupted by SIGINT (exit 130)");
    assertEquals(failureLines(run.text.join("\n")), report);
    await Deno.stat(`${dest}.parted-partial`); // kept for resume
    await Deno.stat(dest).then(() => assert(false, "destination must not exist"), () => {});

    // The rerun (straight to the registry) fetches only the parts that were not in place.
    const rerun = await runCli(
      [
        "pull",
        "--plain-http",
        "--workers",
        "1",
        "--progress",
        "json",
        `${registry.host}/models/sig:v1`,
        dest,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(rerun.code, 0, rerun.stderr);
    assertStrictEquals(sha256(await Deno.readFile(dest)), sha256(bytes));
    const last = JSON.parse(rerun.stderr.trimEnd().split("\n").at(-1)!) as Record;
    assertStrictEquals(last.completedBytes, SIZE);
    // Parts 0 and 1 are verified on disk, not fetched; part 2 continues after the 1,000 bytes
    // it had received (fewer when the random data ends them with zeros).
    const kept = 2 * PART - (last.wireBytes as number);
    assert(kept > 1000 - 64 && kept <= 1000, `fetched ${last.wireBytes}`);
  } finally {
    await proxy.close();
  }
});

registryTest(
  "130: SIGINT mid-pull into a directory names the partial file by its path",
  async () => {
    await using registry = await startRegistry();
    const proxy = await startFaultProxy({ target: registry.url });
    try {
      await using tmp = await tempDir();
      const source = `${tmp.path}/weights.bin`;
      const bytes = await writeRandomFile(source, SIZE);
      const ref = `${registry.host}/models/sigdir:v1`;
      const push = await runCli(["push", "--plain-http", "--part-size", "256KiB", ref, source], {
        tmp: tmp.path,
      });
      assertStrictEquals(push.code, 0, push.stderr);
      stallFromThirdPart(proxy);
      const dir = `${tmp.path}/downloads`;
      await Deno.mkdir(dir);
      const args = ["pull", "--plain-http", "--workers", "1", "--progress", "json"];
      const run = await interrupt(
        [...args, `${proxy.host}/models/sigdir:v1`, dir],
        tmp.path,
        "SIGINT",
      );
      assertStrictEquals(run.code, 130, run.text.join("\n"));
      const [kept, why] = failureLines(run.text.join("\n"));
      assert(
        [512, 513].some((kib) =>
          kept ===
            `ocipart pull: ${kib} KiB of 1.00 MiB kept (2 of 4 parts complete) in ` +
              `${dir}/weights.bin.parted-partial; run the same command to resume`
        ),
        kept,
      );
      assertStrictEquals(why, "ocipart pull: interrupted by SIGINT (exit 130)");
      await Deno.stat(`${dir}/weights.bin.parted-partial`); // the file named is there
      // The same command (straight to the registry) finishes from it.
      const rerun = await runCli([...args, ref, dir], { tmp: tmp.path });
      assertStrictEquals(rerun.code, 0, rerun.stderr);
      assertStrictEquals(sha256(await Deno.readFile(`${dir}/weights.bin`)), sha256(bytes));
    } finally {
      await proxy.close();
    }
  },
);

registryTest("143: SIGTERM mid-push leaves parts a rerun skips", async () => {
  await using registry = await startRegistry();
  const proxy = await startFaultProxy({ target: registry.url });
  try {
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    const bytes = await writeRandomFile(source, SIZE);
    // Parts 0 and 1 upload; the third upload PUT never gets an answer.
    proxy.fault({ method: "PUT", path: /\/blobs\/uploads\//, nth: 3, times: Infinity, hang: true });
    const run = await interrupt(
      [
        "push",
        "--plain-http",
        "--workers",
        "1",
        "--part-size",
        "256KiB",
        "--progress",
        "json",
        `${proxy.host}/models/sig:v2`,
        source,
      ],
      tmp.path,
      "SIGTERM",
    );
    assertStrictEquals(run.code, 143, run.text.join("\n"));
    assertStrictEquals(run.stdout, "", "no digest: nothing was published");
    assertStrictEquals(run.records.at(-1)!.exitCode, 143);
    // SIGTERM says no "stopping…": the report is what was kept, then the signal.
    assertEquals(run.text, [
      "ocipart push: 2 of 4 parts (512 KiB of 1.00 MiB) uploaded and kept by the registry; " +
      "run the same command to resume",
      "ocipart push: terminated by SIGTERM (exit 143)",
    ]);
    const manifest = await fetch(`${registry.url}/v2/models/sig/manifests/v2`, {
      headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
    });
    await manifest.body?.cancel();
    assertStrictEquals(manifest.status, 404, "a stopped push publishes no manifest");

    const rerun = await runCli(
      [
        "push",
        "--plain-http",
        "--workers",
        "1",
        "--part-size",
        "256KiB",
        "--progress",
        "json",
        `${registry.host}/models/sig:v2`,
        source,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(rerun.code, 0, rerun.stderr);
    assert(/^sha256:[0-9a-f]{64}\n$/.test(rerun.stdout));
    const last = JSON.parse(rerun.stderr.trimEnd().split("\n").at(-1)!) as Record;
    assertStrictEquals(last.completedBytes, SIZE);
    assertStrictEquals(last.wireBytes, 2 * PART, "the parts already in the registry were skipped");

    const dest = `${tmp.path}/out.bin`;
    const pull = await runCli(["pull", "--plain-http", `${registry.host}/models/sig:v2`, dest], {
      tmp: tmp.path,
    });
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(sha256(await Deno.readFile(dest)), sha256(bytes));
  } finally {
    await proxy.close();
  }
});

registryTest("130: SIGINT mid-copy says the copied parts stay in the target registry", async () => {
  await using from = await startRegistry();
  await using to = await startRegistry();
  const proxy = await startFaultProxy({ target: to.url });
  try {
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    await writeRandomFile(source, SIZE);
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "256KiB", `${from.host}/models/sig:v3`, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    // Parts 0 and 1 reach the target; the third part's PUT never gets an answer.
    proxy.fault({ method: "PUT", path: /\/blobs\/uploads\//, nth: 3, times: Infinity, hang: true });
    const run = await interrupt(
      [
        "copy",
        "--plain-http",
        "--workers",
        "1",
        "--progress",
        "json",
        `${from.host}/models/sig:v3`,
        `${proxy.host}/mirror/sig:v3`,
      ],
      tmp.path,
      "SIGINT",
    );
    assertStrictEquals(run.code, 130, run.text.join("\n"));
    assertEquals(run.text, [
      "stopping… (Ctrl-C again to quit now)",
      "ocipart copy: 2 of 4 parts (512 KiB of 1.00 MiB) copied and kept by the target " +
      "registry; run the same command to resume",
      "ocipart copy: interrupted by SIGINT (exit 130)",
    ]);
  } finally {
    await proxy.close();
  }
});

registryTest(
  "a stalled pull still writes plain lines on time, its speed falling to 0 B/s",
  async () => {
    await using registry = await startRegistry();
    const proxy = await startFaultProxy({ target: registry.url });
    try {
      await using tmp = await tempDir();
      const source = `${tmp.path}/weights.bin`;
      await writeRandomFile(source, SIZE);
      const push = await runCli(
        ["push", "--plain-http", "--part-size", "256KiB", `${registry.host}/models/sig:v4`, source],
        { tmp: tmp.path },
      );
      assertStrictEquals(push.code, 0, push.stderr);
      // Part 0 arrives whole; part 1 sends a few bytes and then nothing, for as long as it takes.
      proxy.fault({
        method: "GET",
        path: /\/blobs\/sha256:/,
        nth: 2,
        times: Infinity,
        stallAfter: 1000,
      });
      const child = spawnCli(
        [
          "pull",
          "--plain-http",
          "--workers",
          "1",
          "--progress",
          "plain",
          `${proxy.host}/models/sig:v4`,
          `${tmp.path}/out.bin`,
        ],
        { tmp: tmp.path },
      );
      await child.stdin.close();
      const stdout = new Response(child.stdout).text();
      const seen: Array<{ at: number; line: string }> = [];
      // A display that stays silent through the stall must not hold the test for minutes.
      const limit = setTimeout(() => child.kill("SIGINT"), 20_000);
      for await (const line of lines(child.stderr)) {
        seen.push({ at: performance.now(), line });
        const stalled = seen.filter((s) => s.line.startsWith("downloading 25% "));
        // Two lines of the same stalled state, one interval apart: the display is alive.
        if (stalled.length === 2) child.kill("SIGINT");
      }
      clearTimeout(limit);
      assertStrictEquals((await child.status).code, 130, seen.map((s) => s.line).join("\n"));
      await stdout;
      const stalled = seen.filter((s) => s.line.startsWith("downloading 25% "));
      assert(stalled.length >= 2, seen.map((s) => s.line).join("\n"));
      assert(stalled[1].line.includes(" 0 B/s ETA --"), stalled[1].line);
      const gap = stalled[1].at - stalled[0].at;
      assert(gap > 4000 && gap < 9000, `${Math.round(gap)} ms between two lines (5 s expected)`);
    } finally {
      await proxy.close();
    }
  },
);
