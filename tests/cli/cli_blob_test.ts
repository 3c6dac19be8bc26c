/**
 * `ocipart blob pull|push|exists|mount` against Distribution, run as a user runs them: round
 * trips, a pull killed with SIGKILL half-way and rerun (the bytes the rerun asks for counted at
 * a fault proxy), a blob whose stored bytes were changed, a digest typed wrong, Ctrl-C.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { sha256Bytes } from "../fixtures/files.ts";
import { exists } from "../fixtures/expect.ts";
import { failureLines, lines, runCli, spawnCli } from "./_cli.ts";
import { randomBytes } from "../fixtures/random.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

async function randomFile(path: string, size: number): Promise<Uint8Array> {
  const bytes = randomBytes(size);
  await Deno.writeFile(path, bytes);
  return bytes;
}

/** Bytes the blob GETs of the log asked for (each Range's length, or `whole` without one). */
function rangedBytes(proxy: FaultProxy, whole: number): number {
  return proxy.log
    .filter((r) => r.method === "GET" && /\/blobs\/sha256:/.test(r.path))
    .map((r) => {
      const range = /^bytes=(\d+)-(\d+)$/.exec(r.headers.range ?? "");
      return range === null ? whole : Number(range[2]) - Number(range[1]) + 1;
    })
    .reduce((a, b) => a + b, 0);
}

/** Runs `args`, sends `signal` once `--progress json` shows `fraction` of the blob written. */
async function stopAt(
  args: string[],
  tmp: string,
  signal: "SIGKILL" | "SIGINT",
  fraction: number,
): Promise<{ code: number; text: string[] }> {
  const child = spawnCli(args, { tmp });
  await child.stdin.close();
  const out = new Response(child.stdout).text();
  const text: string[] = [];
  let sent = false;
  for await (const line of lines(child.stderr)) {
    if (!line.startsWith("{")) {
      text.push(line);
      continue;
    }
    const record = JSON.parse(line) as { completedBytes: number; totalBytes: number };
    if (!sent && record.completedBytes >= fraction * record.totalBytes) {
      sent = true;
      child.kill(signal);
    }
  }
  const status = await child.status;
  await out;
  assert(sent, `the pull never reached ${fraction}: ${text.join("\n")}`);
  return {
    code: signal === "SIGKILL" ? status.signal === "SIGKILL" ? 137 : status.code : status.code,
    text,
  };
}

registryTest(
  "blob: push (monolithic and chunked), exists, mount, pull into a file and to standard output",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/data.bin`;
    const bytes = await randomFile(source, 3 * MiB + 5);
    const digest = sha256Bytes(bytes);
    const repo = `${registry.host}/team/blobs`;
    const http = ["--plain-http"];

    const absentBefore = await runCli(["blob", "exists", ...http, `${repo}@${digest}`], {
      tmp: tmp.path,
    });
    assertStrictEquals(absentBefore.code, 3, absentBefore.stderr);
    assertStrictEquals(absentBefore.stdout, "absent\n");

    const push = await runCli(["blob", "push", ...http, repo, source], { tmp: tmp.path });
    assertStrictEquals(push.code, 0, push.stderr);
    assertStrictEquals(push.stdout, `${digest}\n`);
    const chunked = await runCli(
      ["blob", "push", ...http, "--chunk-size", "1MiB", `${registry.host}/team/chunked`, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(chunked.code, 0, chunked.stderr);
    assertStrictEquals(chunked.stdout, `${digest}\n`);

    const present = await runCli(["blob", "exists", ...http, `${repo}@${digest}`], {
      tmp: tmp.path,
    });
    assertStrictEquals(present.code, 0, present.stderr);
    assertStrictEquals(present.stdout, "present\n");

    const mount = await runCli(
      ["blob", "mount", ...http, `${repo}@${digest}`, `${registry.host}/other/place`],
      { tmp: tmp.path },
    );
    assertStrictEquals(mount.code, 0, mount.stderr);
    assertStrictEquals(mount.stdout, "mounted\n");
    const declined = await runCli(
      [
        "blob",
        "mount",
        ...http,
        `${registry.host}/nowhere/x@${digest}`,
        `${registry.host}/other/y`,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(declined.code, 1, declined.stderr);
    assertStrictEquals(declined.stdout, "");
    assert(declined.stderr.startsWith("ocipart blob mount: not mounted: the registry declined"));
    const mounted = await runCli(
      ["blob", "exists", ...http, `${registry.host}/other/place@${digest}`],
      { tmp: tmp.path },
    );
    assertStrictEquals(mounted.code, 0, mounted.stderr);

    const dest = `${tmp.path}/out.bin`;
    const pull = await runCli(
      [
        "blob",
        "pull",
        ...http,
        "--workers",
        "4",
        "--chunk-size",
        "256KiB",
        `${repo}@${digest}`,
        dest,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(pull.stdout, `${dest}\n`);
    assertEquals(await Deno.readFile(dest), bytes);
    assert(!await exists(`${dest}.blob-partial`), "the partial file is renamed onto the file");

    const piped = spawnCli(["blob", "pull", ...http, `${repo}@${digest}`, "-"], { tmp: tmp.path });
    await piped.stdin.close();
    const output = await piped.output();
    assertStrictEquals(output.code, 0, new TextDecoder().decode(output.stderr));
    assertEquals(output.stdout, bytes);

    const empty = `${tmp.path}/empty.bin`;
    await Deno.writeFile(empty, new Uint8Array());
    const pushEmpty = await runCli(["blob", "push", ...http, repo, empty], { tmp: tmp.path });
    assertStrictEquals(pushEmpty.code, 0, pushEmpty.stderr);
    const emptyDigest = sha256Bytes(new Uint8Array());
    const pullEmpty = await runCli(
      ["blob", "pull", ...http, `${repo}@${emptyDigest}`, `${tmp.path}/empty.out`],
      { tmp: tmp.path },
    );
    assertStrictEquals(pullEmpty.code, 0, pullEmpty.stderr);
    assertStrictEquals((await Deno.stat(`${tmp.path}/empty.out`)).size, 0);

    const intoDir = await runCli(["blob", "pull", ...http, `${repo}@${digest}`, tmp.path], {
      tmp: tmp.path,
    });
    assertStrictEquals(intoDir.code, 1, intoDir.stderr);
    assert(intoDir.stderr.includes("the destination is a directory"), intoDir.stderr);

    const missing = await runCli(
      [
        "blob",
        "pull",
        ...http,
        `${repo}@${sha256Bytes(new Uint8Array(1))}`,
        `${tmp.path}/none.bin`,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(missing.code, 3, missing.stderr);
    assert(!await exists(`${tmp.path}/none.bin`));
    // The blob is what is missing, with the status the registry gave, into a file or a pipe.
    const absent = sha256Bytes(new Uint8Array(1));
    const said = `has no blob ${absent} in the repository team/blobs (404 Not Found`;
    assert(missing.stderr.includes(said), missing.stderr);
    const missingOut = await runCli(["blob", "pull", ...http, `${repo}@${absent}`, "-"], {
      tmp: tmp.path,
    });
    assertStrictEquals(missingOut.code, 3, missingOut.stderr);
    assert(missingOut.stderr.includes(said), missingOut.stderr);
    assert(!missingOut.stderr.includes("push it again"), missingOut.stderr);
  },
);

registryTest(
  "blob pull: killed with SIGKILL half-way, the same command fetches only what is missing",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const SIZE = 8 * MiB;
    const source = `${tmp.path}/data.bin`;
    const bytes = await randomFile(source, SIZE);
    const digest = sha256Bytes(bytes);
    const repo = `${registry.host}/team/resume`;
    const push = await runCli(["blob", "push", "--plain-http", repo, source], { tmp: tmp.path });
    assertStrictEquals(push.code, 0, push.stderr);

    const dest = `${tmp.path}/out.bin`;
    const args = (rate: string[]) => [
      "blob",
      "pull",
      "--plain-http",
      "--workers",
      "4",
      "--chunk-size",
      "128KiB",
      "--progress",
      "json",
      ...rate,
      `${proxy.host}/team/resume@${digest}`,
      dest,
    ];
    const killed = await stopAt(args(["--limit-rate", "4MiB/s"]), tmp.path, "SIGKILL", 0.5);
    assertStrictEquals(killed.code, 137);
    assert(!await exists(dest), "nothing committed");
    const kept = (await Deno.stat(`${dest}.blob-partial`)).size;
    assert(kept >= SIZE / 2, `kept ${kept}`);

    proxy.log.length = 0;
    const rerun = await runCli(["blob", "pull", "--json", ...args([]).slice(2)], {
      tmp: tmp.path,
    });
    assertStrictEquals(rerun.code, 0, rerun.stderr);
    assertEquals(await Deno.readFile(dest), bytes);
    const result = JSON.parse(rerun.stdout);
    assertStrictEquals(result.bytesResumed, kept);
    assertStrictEquals(result.bytesFetched, SIZE - kept);
    assertStrictEquals(result.digest, digest);
    const fetched = rangedBytes(proxy, SIZE);
    assert(fetched <= 0.55 * SIZE, `the rerun fetched ${fetched} of ${SIZE} bytes`);
    assertStrictEquals(fetched, SIZE - kept, "exactly what the partial file lacked");
    assert(!await exists(`${dest}.blob-partial`));
  },
);

registryTest(
  "blob pull: a blob whose stored bytes changed exits 5 and commits nothing",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/data.bin`;
    const bytes = await randomFile(source, 2 * MiB);
    const digest = sha256Bytes(bytes);
    const repo = `${registry.host}/team/corrupt`;
    const push = await runCli(["blob", "push", "--plain-http", repo, source], { tmp: tmp.path });
    assertStrictEquals(push.code, 0, push.stderr);
    const stored = registry.blobPath(digest);
    const changed = await Deno.readFile(stored);
    changed[MiB] ^= 0xff;
    await Deno.writeFile(stored, changed);

    const dest = `${tmp.path}/out.bin`;
    const pull = await runCli(
      ["blob", "pull", "--plain-http", "--chunk-size", "256KiB", `${repo}@${digest}`, dest],
      { tmp: tmp.path },
    );
    assertStrictEquals(pull.code, 5, pull.stderr);
    assertStrictEquals(pull.stdout, "");
    assert(!await exists(dest), "nothing committed");
    assert(!await exists(`${dest}.blob-partial`), "the bytes that do not match are not kept");
    // The first line repeats the reference typed; the library's own line names no digest.
    assert(!pull.stderr.split("\n")[2].includes(digest), pull.stderr);
    assert(pull.stderr.includes("matched DigestMismatchError"), pull.stderr);
  },
);

registryTest("blob: a digest typed wrong is a usage error, before any request", async () => {
  await using tmp = await tempDir();
  for (
    const operand of [
      "127.0.0.1:9/team/x@sha256:abc",
      "127.0.0.1:9/team/x",
      `127.0.0.1:9/team/x@md5:${"0".repeat(32)}`,
      `127.0.0.1:9/team/x@SHA256:${"A".repeat(64)}`,
    ]
  ) {
    const run = await runCli(["blob", "pull", operand, `${tmp.path}/out.bin`], { tmp: tmp.path });
    assertStrictEquals(run.code, 2, run.stderr);
    assertEquals(run.stderr.split("\n").slice(0, 2), [
      "ocipart: <repo@digest>: expected REGISTRY/REPOSITORY@sha256:<64 lowercase hex digits>",
      "ocipart: see 'ocipart blob pull --help' for the flags of blob pull",
    ]);
  }
  const sub = await runCli(["blob", "fetch"], { tmp: tmp.path });
  assertStrictEquals(sub.code, 2);
  assert(
    sub.stderr.startsWith("ocipart: blob takes one of: pull, push, exists, mount\n"),
    sub.stderr,
  );
});

registryTest("blob pull: Ctrl-C keeps the partial file and says how to resume", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const SIZE = 4 * MiB;
  const source = `${tmp.path}/data.bin`;
  const bytes = await randomFile(source, SIZE);
  const digest = sha256Bytes(bytes);
  const repo = `${registry.host}/team/stop`;
  const push = await runCli(["blob", "push", "--plain-http", repo, source], { tmp: tmp.path });
  assertStrictEquals(push.code, 0, push.stderr);
  const dest = `${tmp.path}/out.bin`;
  const args = [
    "blob",
    "pull",
    "--plain-http",
    "--chunk-size",
    "128KiB",
    "--progress",
    "json",
    "--limit-rate",
    "2MiB/s",
    `${repo}@${digest}`,
    dest,
  ];
  const stopped = await stopAt(args, tmp.path, "SIGINT", 0.3);
  assertStrictEquals(stopped.code, 130, stopped.text.join("\n"));
  const report = failureLines(stopped.text.filter((l) => !l.startsWith("stopping…")).join("\n"));
  assert(
    /^ocipart blob pull: [\d.]+ [KM]iB of 4\.00 MiB kept \(\d+ of 32 parts complete\) in .*out\.bin\.blob-partial; run the same command to resume$/
      .test(report[0]),
    report[0],
  );
  assertStrictEquals(report[1], "ocipart blob pull: interrupted by SIGINT (exit 130)");
  assert(!await exists(dest));
  const rerun = await runCli(args.filter((a) => a !== "--limit-rate" && a !== "2MiB/s"), {
    tmp: tmp.path,
  });
  assertStrictEquals(rerun.code, 0, rerun.stderr);
  assertEquals(await Deno.readFile(dest), bytes);
});

registryTest("blob pull: a second pull of the same file is refused at once", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/data.bin`;
  const bytes = await randomFile(source, 2 * MiB);
  const digest = sha256Bytes(bytes);
  const repo = `${registry.host}/team/twice`;
  const push = await runCli(["blob", "push", "--plain-http", repo, source], { tmp: tmp.path });
  assertStrictEquals(push.code, 0, push.stderr);
  const dest = `${tmp.path}/out.bin`;
  const args = [
    "blob",
    "pull",
    "--plain-http",
    "--chunk-size",
    "128KiB",
    "--progress",
    "json",
    `${repo}@${digest}`,
    dest,
  ];
  const slow = spawnCli([...args.slice(0, 3), "--limit-rate", "512KiB/s", ...args.slice(3)], {
    tmp: tmp.path,
  });
  await slow.stdin.close();
  const slowOut = new Response(slow.stdout).text();
  const slowErr = lines(slow.stderr);
  // Once the first pull reports bytes written, it holds the partial file.
  for await (const line of slowErr) {
    if (line.startsWith("{") && JSON.parse(line).completedBytes > 0) break;
  }
  const second = await runCli(args, { tmp: tmp.path });
  assertStrictEquals(second.code, 1, second.stderr);
  assert(second.stderr.includes("another pull"), second.stderr);
  slow.kill("SIGINT");
  for await (const _ of slowErr) { /* drain */ }
  await slow.status;
  await slowOut;
  const rerun = await runCli(args, { tmp: tmp.path });
  assertStrictEquals(rerun.code, 0, rerun.stderr);
  assertEquals(await Deno.readFile(dest), bytes);
});

registryTest(
  "blob: credentials as for the other commands (--username with --password-stdin, a saved login); none is exit 6",
  { needs: ["htpasswd"] },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const env = { DOCKER_CONFIG: `${tmp.path}/docker` };
    const source = `${tmp.path}/data.bin`;
    const bytes = await randomFile(source, 300 * KiB);
    const digest = sha256Bytes(bytes);
    const repo = `${registry.host}/team/private`;
    const typed = ["--plain-http", "--username", "alice", "--password-stdin"];

    const push = await runCli(["blob", "push", ...typed, repo, source], {
      tmp: tmp.path,
      env,
      stdin: "correct horse\n",
    });
    assertStrictEquals(push.code, 0, push.stderr);
    assertStrictEquals(push.stdout, `${digest}\n`);

    const anonymous = await runCli(["blob", "exists", "--plain-http", `${repo}@${digest}`], {
      tmp: tmp.path,
      env,
    });
    assertStrictEquals(anonymous.code, 6, anonymous.stderr);
    assert(anonymous.stderr.includes("matched UnauthorizedError"), anonymous.stderr);
    assert(!anonymous.stderr.includes("correct horse"));

    const login = await runCli(["login", ...typed, registry.host], {
      tmp: tmp.path,
      env,
      stdin: "correct horse\n",
    });
    assertStrictEquals(login.code, 0, login.stderr);
    const dest = `${tmp.path}/out.bin`;
    const pull = await runCli(
      ["blob", "pull", "--plain-http", "--chunk-size", "64KiB", `${repo}@${digest}`, dest],
      { tmp: tmp.path, env },
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertEquals(await Deno.readFile(dest), bytes);
  },
);
