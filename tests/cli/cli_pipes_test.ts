/**
 * Transfers through pipes, as a user types them: `ocipart pull <ref> -` writes the file to
 * standard output (each part only once it verified), `ocipart push <ref> -` pushes standard
 * input, against the real registry (CNCF Distribution).
 */
import { patternBytes, sha256Bytes, writePatternFile } from "../fixtures/files.ts";
import { assert, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { UsageError } from "../../src/cli/arguments/usage_error.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { cliArgv, cliEnv, PROJECT_ROOT, runCli, spawnCli, stallFromThirdPart } from "./_cli.ts";
import { pushed, stopWhileStalled, untilReaderLeaves } from "./_pipes.ts";

const KiB = 1024;
/** A pull over plain HTTP that draws no progress. */
const QUIET_PULL = ["pull", "--plain-http", "--progress", "none"];
const PART = 64 * KiB;

/** Runs the CLI with `stdin` bytes and returns stdout as bytes. */
async function runBytes(args: string[], tmp: string, stdin?: Uint8Array) {
  const child = spawnCli(args, { tmp });
  const writer = child.stdin.getWriter();
  if (stdin !== undefined) await writer.write(stdin).catch(() => {});
  await writer.close().catch(() => {});
  const out = await child.output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

registryTest("pull -: the file on stdout, equal to the file (sha256)", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const bytes = patternBytes(5 * PART + 123);
  const ref = await pushed(bytes, `${registry.host}/pipes/data:v1`, "64KiB", tmp.path);
  const pull = await runBytes(["pull", "--plain-http", "--workers", "3", ref, "-"], tmp.path);
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(sha256Bytes(pull.stdout), sha256Bytes(bytes));
  assertStrictEquals(pull.stderr.includes("sha256:"), false);
});

registryTest(
  "pull -: a corrupted part gives exit 5, none of its bytes, and words that say so; blob pull - says to discard",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const bytes = patternBytes(4 * PART, 3);
    const ref = await pushed(bytes, `${registry.host}/pipes/bad:v1`, "64KiB", tmp.path);
    const digest = sha256Bytes(bytes.subarray(PART, 2 * PART));
    const tampered = bytes.slice(PART, 2 * PART);
    tampered[100] ^= 0xff;
    await Deno.writeFile(registry.blobPath(digest), tampered);
    const pull = await runBytes(["pull", "--plain-http", "--workers", "1", ref, "-"], tmp.path);
    assertStrictEquals(pull.code, 5, pull.stderr);
    // The output ends at the end of the part before the bad one, and the report says so.
    assertStrictEquals(pull.stdout.byteLength, PART);
    assertStrictEquals(sha256Bytes(pull.stdout), sha256Bytes(bytes.subarray(0, PART)));
    assert(
      pull.stderr.includes("standard output ends with the last part that verified"),
      pull.stderr,
    );
    // The blob whose bytes went out: the report says to discard them.
    const blob = await runBytes(
      ["blob", "pull", "--plain-http", `${registry.host}/pipes/bad@${digest}`, "-"],
      tmp.path,
    );
    assertStrictEquals(blob.code, 5, blob.stderr);
    assert(blob.stderr.includes("that output is not the blob, discard it"), blob.stderr);
    assert(!blob.stderr.includes("nothing unverified was kept"), blob.stderr);
  },
);

registryTest(
  "pull -: parts fetched in stripes; a corrupted one gives exit 5 and none of its bytes",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    // Parts of three stripes each (two of 16 MiB and one of 8 MiB), fetched in ranged GETs.
    const part = 40 * 1024 * KiB;
    const bytes = patternBytes(2 * part + 99, 13);
    const ref = await pushed(bytes, `${registry.host}/pipes/striped:v1`, "40MiB", tmp.path);
    await using proxy = await startFaultProxy({ target: registry.url });
    const viaProxy = ref.replace(registry.host, proxy.host);
    const pull = await runBytes(
      ["pull", "--plain-http", "--workers", "4", viaProxy, "-"],
      tmp.path,
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(sha256Bytes(pull.stdout), sha256Bytes(bytes));
    const first = sha256Bytes(bytes.subarray(0, part));
    const ranged = proxy.log.filter((r) => r.path.endsWith(first) && r.headers.range !== undefined);
    assertStrictEquals(ranged.length, 3, "one ranged GET a stripe");
    // The second part, wrong by one byte in its last stripe, then in its first, hashed inline
    // and on threads.
    for (const [at, threads] of [[part - 10, "0"], [3, "2"]] as const) {
      const tampered = bytes.slice(part, 2 * part);
      tampered[at] ^= 0xff;
      const path = registry.blobPath(sha256Bytes(bytes.subarray(part, 2 * part)));
      await Deno.writeFile(path, tampered);
      const bad = await runBytes(
        ["pull", "--plain-http", "--workers", "4", "--hash-threads", threads, ref, "-"],
        tmp.path,
      );
      assertStrictEquals(bad.code, 5, bad.stderr);
      assertStrictEquals(bad.stdout.byteLength, part);
      assertStrictEquals(sha256Bytes(bad.stdout), first);
    }
  },
);

registryTest("pull - | head -c: exit 0, quietly, and the requests stop", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const bytes = patternBytes(64 * PART, 5);
  const ref = await pushed(bytes, `${registry.host}/pipes/head:v1`, "64KiB", tmp.path);
  const argv = cliArgv(["pull", "--plain-http", ref, "-"], { tmp: tmp.path });
  const quoted = argv.map((arg) => `'${arg}'`).join(" ");
  const started = performance.now();
  const out = await new Deno.Command("bash", {
    args: ["-o", "pipefail", "-c", `${quoted} | head -c 100000 | wc -c`],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv({ tmp: tmp.path }),
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assertStrictEquals(new TextDecoder().decode(out.stdout).trim(), "100000");
  assertStrictEquals(out.code, 0, stderr);
  assertStrictEquals(stderr.includes("Broken pipe"), false, stderr);
  assert(performance.now() - started < 20_000);
});

registryTest(
  "pull -: a reader that goes away stops striped requests within 1 s, exit 0",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    // Two parts of three stripes each; every stripe of the second one stalls after 1000 bytes.
    const part = 40 * 1024 * KiB;
    const bytes = patternBytes(2 * part, 17);
    const ref = await pushed(bytes, `${proxy.host}/pipes/gone-striped:v1`, "40MiB", tmp.path);
    const second = sha256Bytes(bytes.subarray(part));
    proxy.fault({ method: "GET", path: new RegExp(second), times: Infinity, stallAfter: 1000 });
    const { code, stderr, got, elapsed } = await untilReaderLeaves([...QUIET_PULL, ref, "-"], {
      tmp: tmp.path,
    });
    assertStrictEquals(code, 0, stderr);
    assertStrictEquals(stderr, "");
    assert(got >= 100_000, `${got} bytes before the pipe closed`);
    assert(elapsed < 1000, `exited ${elapsed.toFixed(0)} ms after the pipe closed`);
    // The stalled stripes were asked for in ranges, as stripes.
    assert(proxy.log.some((r) => r.path.endsWith(second) && r.headers.range !== undefined));
  },
);

registryTest("push -: the same manifest digest as the push of the file", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const bytes = patternBytes(3 * PART + 17, 11);
  await Deno.writeFile(`${tmp.path}/data.bin`, bytes);
  const args = ["push", "--plain-http", "--part-size", "64KiB"];
  const fromFile = await runCli(
    [...args, `${registry.host}/pipes/a:v1`, `${tmp.path}/data.bin`],
    { tmp: tmp.path },
  );
  assertStrictEquals(fromFile.code, 0, fromFile.stderr);
  const stdin = await runBytes(
    [...args, "--name", "data.bin", "--temp-dir", tmp.path, `${registry.host}/pipes/b:v1`, "-"],
    tmp.path,
    bytes,
  );
  assertStrictEquals(stdin.code, 0, stdin.stderr);
  assertStrictEquals(new TextDecoder().decode(stdin.stdout), fromFile.stdout);
  // Nothing of the part files is left behind.
  const left = [];
  for await (const entry of Deno.readDir(tmp.path)) left.push(entry.name);
  assertStrictEquals(left.filter((name) => name.startsWith("ocipart-")).length, 0);
  // And it pulls back equal.
  const pull = await runBytes(
    ["pull", "--plain-http", `${registry.host}/pipes/b:v1`, "-"],
    tmp.path,
  );
  assertStrictEquals(sha256Bytes(pull.stdout), sha256Bytes(bytes));
});

registryTest("pull -: a reader that goes away stops every request within 1 s, exit 0", async () => {
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  await using tmp = await tempDir();
  const MiB = 1024 * KiB;
  const bytes = patternBytes(4 * MiB, 13);
  const ref = await pushed(bytes, `${proxy.host}/pipes/gone:v1`, "1MiB", tmp.path);
  // Parts 2 and 3 never finish: only the closed pipe can end this pull.
  stallFromThirdPart(proxy);
  const { code, stderr, elapsed } = await untilReaderLeaves([...QUIET_PULL, ref, "-"], {
    tmp: tmp.path,
  });
  assertStrictEquals(code, 0, stderr);
  assertStrictEquals(stderr, "");
  assert(elapsed < 1000, `exited ${elapsed.toFixed(0)} ms after the pipe closed`);
  console.log(`pull - exited ${elapsed.toFixed(0)} ms after its reader went away`);
});

registryTest(
  "push -: Ctrl-C mid-stream removes the part files and leaves no manifest",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const MiB = 1024 * KiB;
    const bytes = patternBytes(3 * MiB, 17);
    const ref = `${registry.host}/pipes/int:v1`;
    const spill = `${tmp.path}/spill`;
    await Deno.mkdir(spill);
    const partial = spawnCli(
      ["push", "--plain-http", "--part-size", "1MiB", "--temp-dir", spill, ref, "-"],
      { tmp: tmp.path },
    );
    const writer = partial.stdin.getWriter();
    const stderr = new Response(partial.stderr).text();
    // The input stays open: the producer is still "writing" when the push is interrupted.
    await writer.write(bytes);
    for (let i = 0; i < 100 && (await entries(spill)).length === 0; i++) await delay(50);
    partial.kill("SIGINT");
    const status = await partial.status;
    await writer.close().catch(() => {});
    await partial.stdout.cancel();
    assertStrictEquals(status.code, 130);
    assertStrictEquals((await entries(spill)).length, 0);
    // The report does not read as a push that completed ("3 of 3 parts uploaded").
    const report = await stderr;
    assert(report.includes("no manifest written"), report);
    assert(!/ of \d+ parts?/.test(report), report);
    const inspect = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path });
    assertStrictEquals(inspect.code, 3, inspect.stderr);
  },
);

registryTest(
  "pull -: Ctrl-C while the reader has stopped reading exits 130 within 1 s and removes the spilled parts",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const MiB = 1024 * KiB;
    // Two parts of 129 MiB: the window (258 MiB) does not fit in memory, so the parts are spilled.
    await writePatternFile(`${tmp.path}/data.bin`, 258 * MiB, 19);
    const ref = `${registry.host}/pipes/stuck:v1`;
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "129MiB", ref, `${tmp.path}/data.bin`],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    const spill = `${tmp.path}/spill`;
    await Deno.mkdir(spill);
    // The first bytes arrive, then the reader stops reading: the pipe fills mid-part.
    const { code, stderr, elapsed } = await stopWhileStalled(
      ["pull", "--plain-http", "--progress", "none", "--temp-dir", spill, ref, "-"],
      { tmp: tmp.path },
      "SIGINT",
      async () => {
        await delay(500);
        assertStrictEquals((await entries(spill)).length, 1, "the pull spilled to its directory");
      },
    );
    assertStrictEquals(code, 130, stderr);
    assert(elapsed < 1000, `exited ${elapsed.toFixed(0)} ms after SIGINT`);
    assert(stderr.endsWith("interrupted by SIGINT (exit 130)\n"), stderr);
    assertStrictEquals((await entries(spill)).length, 0, "the spilled parts are removed");
  },
);

registryTest(
  "cat and blob pull -: Ctrl-C or SIGTERM while the reader has stopped reading ends them within 1 s",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const { ref, blobRef } = await artifactAndBlob(registry.host, tmp.path, "stalled", 23);
    const commands = [
      ["cat", "--plain-http", ref],
      ["cat", "--plain-http", "--range", "1000-7000000", ref],
      ["blob", "pull", "--plain-http", blobRef, "-"],
    ];
    for (const args of commands) {
      for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
        const stopped = await stopWhileStalled(args, { tmp: tmp.path }, signal, () => delay(300));
        const { elapsed } = stopped;
        const what = `${args.slice(0, 2).join(" ")} ${signal}`;
        assertStrictEquals(stopped.code, code, `${what}: ${stopped.stderr}`);
        assert(elapsed < 1000, `${what}: exited ${elapsed.toFixed(0)} ms after the signal`);
      }
    }
  },
);

/**
 * An 8 MiB file (of `seed`) pushed over plain HTTP to `host` as an artifact of 1 MiB parts
 * (`ref`) and as one blob (`blobRef`, by digest).
 */
async function artifactAndBlob(host: string, tmp: string, name: string, seed: number) {
  const bytes = patternBytes(8 * 1024 * KiB, seed);
  const ref = await pushed(bytes, `${host}/pipes/${name}:v1`, "1MiB", tmp);
  const repository = `${host}/pipes/${name}-blob`;
  const blob = await runCli(["blob", "push", "--plain-http", repository, `${tmp}/data.bin`], {
    tmp,
  });
  assertStrictEquals(blob.code, 0, blob.stderr);
  return { ref, blobRef: `${repository}@${blob.stdout.trim()}` };
}

async function entries(dir: string): Promise<string[]> {
  const names = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---- --hash-threads as typed, and a push from stdin ending exactly at a part boundary ----

const REF = "localhost:5000/org/model:v1";
const DIGEST_REF = `localhost:5000/org/model@sha256:${"a".repeat(64)}`;

const COMMANDS: [string, string[]][] = [
  ["pull", [REF, "-"]],
  ["push", [REF, "-"]],
  ["blob pull", [DIGEST_REF, "out.bin"]],
  ["blob push", ["localhost:5000/org/model", "in.bin"]],
];

Deno.test("--hash-threads refuses 1e2, 0x2, -0, 3.0, +1, empty and 257 on every transfer command", () => {
  for (const [command, operands] of COMMANDS) {
    for (const value of ["1e2", "0x2", "-0", "3.0", "+1", "", " ", "257", "Infinity", "1_0"]) {
      const args = [...command.split(" "), "--hash-threads", value, ...operands];
      assertThrows(() => {
        try {
          parseCommandLine(args);
        } catch (err) {
          if (err instanceof UsageError) throw err;
          throw new Error(`${JSON.stringify(args)}: ${err}`);
        }
        throw new Error(`${JSON.stringify(args)} was accepted`);
      }, UsageError);
    }
  }
});

Deno.test("--hash-threads reaches the blob commands; spaces around and leading zeros are read as --workers reads them", () => {
  for (const [command, operands] of COMMANDS) {
    for (const [value, expected] of [[" 3", 3], ["007", 7], ["0", 0], ["256", 256]] as const) {
      const parsed = parseCommandLine([
        ...command.split(" "),
        "--hash-threads",
        value,
        ...operands,
      ]);
      assertStrictEquals(
        "hashThreads" in parsed ? parsed.hashThreads : "missing",
        expected,
        `${command} --hash-threads ${JSON.stringify(value)}`,
      );
    }
  }
});

registryTest(
  "push - of stdin ending exactly at a part boundary equals the file's push",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const bytes = patternBytes(3 * 1536 * KiB, 9);
    await Deno.mkdir(`${tmp.path}/in`);
    await Deno.writeFile(`${tmp.path}/in/data.bin`, bytes);
    const push = ["push", "--plain-http", "--part-size", "1536KiB", "--progress", "none"];
    const fileRef = `${registry.host}/pipes/exact:file`;
    const file = await runCli([...push, fileRef, `${tmp.path}/in/data.bin`], { tmp: tmp.path });
    assertStrictEquals(file.code, 0, file.stderr);
    const streamRef = `${registry.host}/pipes/exact:stream`;
    const stream = await runBytes(
      [
        ...push,
        "--hash-threads",
        "0",
        "--name",
        "data.bin",
        "--temp-dir",
        tmp.path,
        streamRef,
        "-",
      ],
      tmp.path,
      bytes,
    );
    assertStrictEquals(stream.code, 0, stream.stderr);
    const pull = await runBytes(
      ["pull", "--plain-http", "--hash-threads", "1", streamRef, "-"],
      tmp.path,
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(sha256Bytes(pull.stdout), sha256Bytes(bytes));
    const layers = async (ref: string) => {
      const out = await runCli(["inspect", "--plain-http", "--json", ref], { tmp: tmp.path });
      assertStrictEquals(out.code, 0, out.stderr);
      const parsed = JSON.parse(out.stdout);
      return JSON.stringify(parsed.parts?.map((p: { digest: string }) => p.digest));
    };
    const streamParts = await layers(streamRef);
    assertStrictEquals(JSON.parse(streamParts ?? "[]").length, 3, `parts: ${streamParts}`);
    assertStrictEquals(streamParts, await layers(fileRef));
  },
);

registryTest(
  "cat and blob pull -: a reader that goes away ends them with exit 0 and nothing said",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const { ref, blobRef } = await artifactAndBlob(registry.host, tmp.path, "leaves", 29);
    const commands = [
      ["cat", "--plain-http", ref],
      ["blob", "pull", "--plain-http", blobRef, "-"],
    ];
    for (const args of commands) {
      const left = await untilReaderLeaves(args, { tmp: tmp.path });
      const what = args.slice(0, 2).join(" ");
      assertStrictEquals(left.code, 0, `${what}: ${left.stderr}`);
      assertStrictEquals(left.stderr, "", what);
      assert(left.elapsed < 1000, `${what}: exited ${left.elapsed.toFixed(0)} ms after`);
    }
  },
);

Deno.test("--temp-dir that is missing or not a directory is refused before any request", async () => {
  await using tmp = await tempDir();
  const file = `${tmp.path}/file`;
  await Deno.writeTextFile(file, "x");
  // Nothing listens on port 1: a request would say so instead.
  const ref = "127.0.0.1:1/pipes/none:v1";
  for (
    const [dir, problem] of [[`${tmp.path}/missing`, "does not exist"], [
      file,
      "is not a directory",
    ]]
  ) {
    for (const args of [["pull", ref, "-"], ["push", ref, "-"], ["cat", ref]]) {
      const [command, ...operands] = args;
      const run = await runBytes(
        [command, "--plain-http", "--temp-dir", dir, ...operands],
        tmp.path,
        new Uint8Array(10),
      );
      const what = `${command} --temp-dir ${problem}`;
      assertStrictEquals(run.code, 1, `${what}: ${run.stderr}`);
      assert(run.stderr.includes(`--temp-dir: ${dir} ${problem}`), `${what}: ${run.stderr}`);
      assert(!run.stderr.includes("nothing is listening"), `${what}: ${run.stderr}`);
    }
  }
});

Deno.test("--ca-file that is missing: its path and the system's reason", async () => {
  await using tmp = await tempDir();
  const run = await runBytes(
    ["cat", "--ca-file", `${tmp.path}/missing.pem`, "127.0.0.1:1/pipes/none:v1"],
    tmp.path,
  );
  assertStrictEquals(run.code, 1, run.stderr);
  assert(
    run.stderr.startsWith("ocipart cat: could not read 127.0.0.1:1/pipes/none:v1\n"),
    run.stderr,
  );
  assert(
    run.stderr.includes(
      `--ca-file: cannot read ${tmp.path}/missing.pem: no such file or directory (ENOENT)`,
    ),
    run.stderr,
  );
});
