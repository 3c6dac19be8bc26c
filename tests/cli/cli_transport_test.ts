/**
 * What a user sees of the transport through the CLI, on the real registry: the diagnostics of
 * failed connections (message, then `cause:` codes, no retry where retrying cannot help), the
 * `--debug` exchange log, a forward proxy from the environment, and stopping a transfer on a
 * slow link (nginx `limit_rate`) by `--timeout` and by Ctrl-C.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startThrottledRegistry } from "../fixtures/slow_link.ts";
import { freePort } from "../fixtures/ports.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  causeLine,
  cliArgv,
  cliEnv,
  failureLines,
  PROJECT_ROOT,
  runCli,
  spawnCli,
  stopOnceMoving,
} from "./_cli.ts";

const MiB = 1024 * 1024;
// The bound a user relies on is 1 s; the rest is slack for a loaded 2-core machine and the
// process's own exit. A 64 MiB part takes about 16 s on the 4 MiB/s link.
const STOP_BOUND_MS = 4_000;

async function pushed(registryHost: string, tmp: string, size = 3 * MiB, partSize = "1MiB") {
  const source = `${tmp}/weights.bin`;
  const digest = await writePatternFile(source, size);
  const reference = `${registryHost}/diag/model:v1`;
  const push = await runCli(
    ["push", "--plain-http", "--progress", "none", "--part-size", partSize, reference, source],
    { tmp },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  return { source, digest, reference };
}

registryTest("connection refused: the message, then cause ECONNREFUSED", async () => {
  await using tmp = await tempDir();
  const port = await freePort();
  const run = await runCli(
    ["pull", "--plain-http", "--progress", "none", `127.0.0.1:${port}/a/b:v1`, `${tmp.path}/o`],
    { tmp: tmp.path },
  );
  assertStrictEquals(run.code, 1, run.stderr);
  assert(causeLine(run.stderr).includes("ECONNREFUSED"), run.stderr);
  // The address appears only where the CLI repeats what was typed (its first sentence and the
  // hint); the library's line and the cause line carry none, and no URL appears anywhere.
  const lines = run.stderr.trimEnd().split("\n");
  assert(
    lines[0].startsWith(`ocipart pull: nothing is listening at 127.0.0.1:${port}`),
    run.stderr,
  );
  const [error] = failureLines(run.stderr);
  assert(!/127\.0\.0\.1/.test(`${error}\n${causeLine(run.stderr).join()}`), run.stderr);
  assert(!/http:/.test(run.stderr), run.stderr);
});

registryTest("a wrong port fails at once: a refused first connection is not retried", async () => {
  await using tmp = await tempDir();
  const port = await freePort();
  const started = performance.now();
  const run = await runCli(
    ["pull", "--plain-http", "--progress", "none", `127.0.0.1:${port}/a/b:v1`, `${tmp.path}/o`],
    { tmp: tmp.path },
  );
  const elapsed = performance.now() - started;
  assertStrictEquals(run.code, 1, run.stderr);
  assert(run.stderr.includes(`nothing is listening at 127.0.0.1:${port}`), run.stderr);
  assert(!/after \d+ attempts/.test(run.stderr), run.stderr);
  // The run includes the runtime's start; four attempts took about 5 s more.
  assert(elapsed < 3000, `${Math.round(elapsed)} ms\n${run.stderr}`);
});

registryTest(
  "a dead proxy is named as the proxy, by host and port, never its credentials",
  async () => {
    await using tmp = await tempDir();
    const registryPort = await freePort();
    const proxyPort = await freePort();
    const host = `127.0.0.1:${registryPort}`;
    const cases = [
      { variable: "HTTP_PROXY", value: `http://127.0.0.1:${proxyPort}`, plain: ["--plain-http"] },
      { variable: "HTTPS_PROXY", value: `http://127.0.0.1:${proxyPort}`, plain: [] },
      {
        variable: "HTTPS_PROXY",
        value: `http://alice:s3cret-pw@127.0.0.1:${proxyPort}`,
        plain: [],
      },
      {
        variable: "http_proxy",
        value: `http://alice:s3cret-pw@127.0.0.1:${proxyPort}/`,
        plain: ["--plain-http"],
      },
    ];
    for (const { variable, value, plain } of cases) {
      const started = performance.now();
      const run = await runCli(
        ["pull", ...plain, "--progress", "none", `${host}/a/b:v1`, `${tmp.path}/o`],
        { tmp: tmp.path, env: { [variable]: value } },
      );
      const elapsed = performance.now() - started;
      assertStrictEquals(run.code, 1, run.stderr);
      const lines = run.stderr.trimEnd().split("\n");
      assertStrictEquals(
        lines[0],
        `ocipart pull: the proxy 127.0.0.1:${proxyPort} (${variable}) could not be reached: the ` +
          `connection was refused; ${host} was not asked`,
        run.stderr,
      );
      assert(!run.stderr.includes(`nothing is listening at ${host}`), run.stderr);
      assert(!/alice|s3cret/.test(run.stderr), run.stderr);
      assert(!/https?:/.test(run.stderr), run.stderr);
      // The library's line and the cause line name no host: the proxy, then the code.
      const [error] = failureLines(run.stderr);
      assert(/proxy connection failed \(connection refused\)/.test(error), run.stderr);
      assert(!/127\.0\.0\.1/.test(`${error}\n${causeLine(run.stderr).join()}`), run.stderr);
      assert(causeLine(run.stderr).includes("ECONNREFUSED"), run.stderr);
      assert(elapsed < 3000, `${Math.round(elapsed)} ms\n${run.stderr}`);
    }
  },
);

/** A registry spoken to the wrong way: the one error line and the cause code a user sees. */
const MISMATCHES = [
  {
    name: "HTTPS to a plain-HTTP registry suggests --plain-http, at once",
    tls: false,
    flags: [],
    error: "connection failed (the server speaks plain HTTP, not TLS: use --plain-http)",
    cause: "PLAIN_HTTP_SERVER",
  },
  {
    name: "plain HTTP to a TLS registry suggests dropping --plain-http",
    tls: true,
    flags: ["--plain-http"],
    error: "connection failed (the server speaks TLS, not plain HTTP: drop --plain-http)",
    cause: "TLS_SERVER",
  },
  {
    name: "a TLS registry whose CA is not trusted: unknown authority",
    tls: true,
    flags: [],
    error: "server certificate not trusted (unknown authority)",
    cause: "TLS_UNKNOWN_AUTHORITY",
  },
];

for (const mismatch of MISMATCHES) {
  registryTest(mismatch.name, async () => {
    await using registry = await startRegistry({ tls: mismatch.tls });
    await using tmp = await tempDir();
    const run = await runCli(
      ["pull", ...mismatch.flags, "--progress", "none", `${registry.host}/a/b:v1`, `${tmp.path}/o`],
      { tmp: tmp.path },
    );
    assertStrictEquals(run.code, 1, run.stderr);
    const [error] = failureLines(run.stderr);
    assertStrictEquals(error, `ocipart pull: HTTP request: ${mismatch.error}`);
    assert(causeLine(run.stderr).includes(mismatch.cause), run.stderr);
  });
}

registryTest(
  "a network permission too narrow: not retried, names the flag, not the host",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const argv = cliArgv(
      ["pull", "--plain-http", "--progress", "none", `${registry.host}/a/b:v1`, `${tmp.path}/o`],
      { tmp: tmp.path },
    ).map((arg) => arg === "--allow-net=127.0.0.1" ? "--allow-net=127.0.0.2" : arg);
    const out = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd: PROJECT_ROOT,
      clearEnv: true,
      env: cliEnv({ tmp: tmp.path }),
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertStrictEquals(out.code, 1, stderr);
    const [error] = failureLines(stderr);
    assertStrictEquals(
      error,
      "ocipart pull: HTTP request: network access not permitted (grant it with --allow-net)",
    );
    assert(causeLine(stderr).includes("NET_PERMISSION"), stderr);
  },
);

registryTest(
  "a missing source file and a missing destination directory name the path and ENOENT",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const missing = `${tmp.path}/absent.bin`;
    const push = await runCli(
      ["push", "--plain-http", "--progress", "none", `${registry.host}/a/b:v1`, missing],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 1, push.stderr);
    assert(failureLines(push.stderr)[0].endsWith(`(${missing})`), push.stderr);
    assert(causeLine(push.stderr).includes("ENOENT"), push.stderr);

    const { reference } = await pushed(registry.host, tmp.path);
    const destination = `${tmp.path}/no-such-dir/out.bin`;
    const pull = await runCli(
      ["pull", "--plain-http", "--progress", "none", reference, destination],
      { tmp: tmp.path },
    );
    assertStrictEquals(pull.code, 1, pull.stderr);
    assert(failureLines(pull.stderr)[0].endsWith(`(${destination})`), pull.stderr);
    assert(causeLine(pull.stderr).includes("ENOENT"), pull.stderr);
  },
);

registryTest(
  "--debug: one line per exchange, with no host, URL, query, digest or credential",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const { reference, digest } = await pushed(registry.host, tmp.path);
    const out = `${tmp.path}/out.bin`;
    const pull = await runCli(
      ["pull", "--plain-http", "--progress", "none", "--debug", reference, out],
      { tmp: tmp.path },
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(await sha256File(out), digest);
    const debug = pull.stderr.trimEnd().split("\n");
    // The manifest and the three 1 MiB parts.
    assertStrictEquals(debug.length, 4, pull.stderr);
    for (const line of debug) {
      assert(/^debug: GET registry 200 sent=0 received=\d+ \d+ms$/.test(line), line);
    }
    assert(debug.some((line) => line.includes(`received=${MiB}`)), pull.stderr);
  },
);

registryTest(
  "--debug: a push that succeeds marks no exchange failed, and a refused one is marked",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    await writePatternFile(source, 2 * MiB + 7);
    const push = await runCli(
      [
        "push",
        "--plain-http",
        "--progress",
        "none",
        "--debug",
        "--part-size",
        "1MiB",
        `${registry.host}/diag/debug:v1`,
        source,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    const debug = push.stderr.trimEnd().split("\n").filter((line) => line.startsWith("debug: "));
    assert(debug.some((line) => /^debug: (PUT|POST|PATCH) /.test(line)), push.stderr);
    // Upload answers are set aside unread; that is no failure.
    assertStrictEquals(debug.filter((line) => line.endsWith(" failed")).length, 0, push.stderr);

    const port = await freePort();
    const refused = await runCli(
      [
        "pull",
        "--plain-http",
        "--progress",
        "none",
        "--debug",
        `127.0.0.1:${port}/a/b:v1`,
        `${tmp.path}/o`,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(refused.code, 1, refused.stderr);
    assert(/^debug: GET registry no-answer .* failed$/m.test(refused.stderr), refused.stderr);
  },
);

registryTest(
  "HTTP_PROXY from the environment carries a push and a pull",
  { needs: ["tinyproxy"] },
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startTinyproxy();
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    const digest = await writePatternFile(source, 2 * MiB + 5);
    const reference = `${registry.host}/proxied/cli:v1`;
    const env = { http_proxy: proxy.url };
    const push = await runCli(
      ["push", "--plain-http", "--progress", "none", "--part-size", "1MiB", reference, source],
      { tmp: tmp.path, env },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    const out = `${tmp.path}/out.bin`;
    const pull = await runCli(
      ["pull", "--plain-http", "--progress", "none", reference, out],
      { tmp: tmp.path, env },
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(await sha256File(out), digest);
    const requests = await proxy.requests();
    const origin = `http://${registry.host}/v2/proxied/cli/`;
    for (const method of ["POST", "PUT", "GET"]) {
      assert(requests.some((l) => l.startsWith(`${method} ${origin}`)), `${method}: ${requests}`);
    }
  },
);

registryTest("pull --timeout 3s on a slow link ends within 1 s of the limit; a rerun completes", {
  needs: ["nginx"],
}, async () => {
  await using link = await startThrottledRegistry();
  await using tmp = await tempDir();
  const { digest } = await pushed(link.registry.host, tmp.path, 2 * 64 * MiB, "64MiB");
  const out = `${tmp.path}/out.bin`;
  const started = performance.now();
  const run = await runCli(
    [
      "pull",
      "--plain-http",
      "--progress",
      "none",
      "--timeout",
      "3s",
      `${link.nginx.host}/diag/model:v1`,
      out,
    ],
    { tmp: tmp.path },
  );
  const elapsed = performance.now() - started;
  assertStrictEquals(run.code, 1, run.stderr);
  assert(elapsed < 3_000 + STOP_BOUND_MS, `exited ${Math.round(elapsed)} ms after the start`);
  await Deno.stat(`${out}.parted-partial`);
  const rerun = await runCli(
    ["pull", "--plain-http", "--progress", "none", `${link.registry.host}/diag/model:v1`, out],
    { tmp: tmp.path },
  );
  assertStrictEquals(rerun.code, 0, rerun.stderr);
  assertStrictEquals(await sha256File(out), digest);
});

const STOPS = [
  { signal: "SIGINT", code: 130, notice: true, name: "Ctrl-C" },
  { signal: "SIGTERM", code: 143, notice: false, name: "SIGTERM" },
] as const;

for (const stop of STOPS) {
  registryTest(`${stop.name} on a slow link: an exit within 1 s, a resumable partial`, {
    needs: ["nginx"],
  }, async () => {
    await stopsOnSlowLink(stop);
  });
}

async function stopsOnSlowLink(stop: (typeof STOPS)[number]): Promise<void> {
  await using link = await startThrottledRegistry();
  await using tmp = await tempDir();
  const { digest } = await pushed(link.registry.host, tmp.path, 2 * 64 * MiB, "64MiB");
  const out = `${tmp.path}/out.bin`;
  const child = spawnCli(
    ["pull", "--plain-http", "--progress", "json", `${link.nginx.host}/diag/model:v1`, out],
    { tmp: tmp.path },
  );
  const { status, stoppedAfterMs: stoppedAfter, text } = await stopOnceMoving(
    child,
    stop.signal,
    4 * MiB,
  );
  assert(!Number.isNaN(stoppedAfter), "the pull never got going");
  assertStrictEquals(status.code, stop.code, text.join("\n"));
  // Only an interactive Ctrl-C is told that a second one quits at once.
  assertStrictEquals(
    text.includes("stopping… (Ctrl-C again to quit now)"),
    stop.notice,
    text.join("\n"),
  );
  assert(
    stoppedAfter < STOP_BOUND_MS,
    `exited ${Math.round(stoppedAfter)} ms after ${stop.signal}`,
  );
  await Deno.stat(`${out}.parted-partial`);
  const rerun = await runCli(
    ["pull", "--plain-http", "--progress", "none", `${link.registry.host}/diag/model:v1`, out],
    { tmp: tmp.path },
  );
  assertStrictEquals(rerun.code, 0, rerun.stderr);
  assertStrictEquals(await sha256File(out), digest);
}
