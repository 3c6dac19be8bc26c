/**
 * The npm package of `deno task npm`: its tarball installs into an empty prefix with npm offline
 * (the registry set to a closed port, an empty cache), and its `ocipart` command runs the quick
 * start (push, inspect, pull, verify) against the real registry on Node, then the same file under
 * Deno; a TypeScript program type-checks against the package's declarations.
 */
import { assert, assertEquals, assertMatch } from "../fixtures/assert.ts";
import { sha256Bytes, sha256File, writePatternFile } from "../fixtures/files.ts";
import { findBinary, registryTest, startRegistry } from "../fixtures/registry.ts";
import { makeSelfSigned } from "../fixtures/tls.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { peakOf } from "../fixtures/peak_memory.ts";
import { denoDirEnv, permissionFlags, PROJECT_ROOT } from "../cli/_cli.ts";

const MiB = 1024 * 1024;

interface Run {
  code: number;
  stdout: string;
  /** Standard output as bytes (a pull to standard output writes the file there). */
  stdoutBytes: Uint8Array;
  stderr: string;
}

async function run(
  program: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  const output = await new Deno.Command(program, {
    args,
    cwd: options.cwd,
    clearEnv: true,
    env: { PATH: Deno.env.get("PATH") ?? "", NO_COLOR: "1", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stdoutBytes: output.stdout,
    stderr: decoder.decode(output.stderr),
  };
}

let packing: Promise<string> | undefined;

/** Runs `deno task npm` once for this file and returns the tarball's path. */
function buildTarball(): Promise<string> {
  packing ??= (async () => {
    const built = await run(Deno.execPath(), ["task", "npm"], {
      cwd: PROJECT_ROOT,
      env: { HOME: Deno.env.get("HOME") ?? "/", ...denoDirEnv() },
    });
    assertEquals(built.code, 0, built.stderr);
    return `${PROJECT_ROOT}${built.stdout.trim().split("\n").at(-1)}`;
  })();
  return packing;
}

/** Installs the tarball into `prefix` with no way to reach a registry. */
async function installOffline(tarball: string, prefix: string, home: string): Promise<void> {
  const installed = await run(findBinary("npm")!, [
    "install",
    "--prefix",
    prefix,
    "--offline",
    "--registry=http://127.0.0.1:9/",
    `--cache=${home}/npm-cache`,
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    tarball,
  ], { env: { HOME: home } });
  assertEquals(installed.code, 0, installed.stderr);
}

/**
 * Push, inspect, pull and verify, as the README's quick start does, with `cli`; then a pull to
 * standard output.
 */
async function quickStart(
  cli: (args: string[]) => Promise<Run>,
  host: string,
  dir: string,
  label: string,
): Promise<void> {
  const source = `${dir}/${label}.bin`;
  const digest = await writePatternFile(source, 3 * MiB + 5, 7);
  const ref = `${host}/demo/${label}:v1`;
  const push = await cli(["push", "--plain-http", "--part-size", "1MiB", ref, source]);
  assertEquals(push.code, 0, push.stderr);
  assertMatch(push.stdout, /^sha256:[0-9a-f]{64}\n$/);
  const inspect = await cli(["inspect", "--plain-http", ref]);
  assertEquals(inspect.code, 0, inspect.stderr);
  assertMatch(inspect.stdout, new RegExp(`^name: +${label}\\.bin$`, "m"));
  assertMatch(inspect.stdout, /^parts: +4$/m);
  await Deno.mkdir(`${dir}/downloads-${label}`);
  const pull = await cli(["pull", "--plain-http", ref, `${dir}/downloads-${label}`]);
  assertEquals(pull.code, 0, pull.stderr);
  assertEquals(pull.stdout, `${dir}/downloads-${label}/${label}.bin\n`);
  assertEquals(await sha256File(`${dir}/downloads-${label}/${label}.bin`), digest);
  const verify = await cli(["verify", "--plain-http", ref, source]);
  assertEquals(verify.code, 0, verify.stderr);
  const piped = await cli(["pull", "--plain-http", ref, "-"]);
  assertEquals(piped.code, 0, piped.stderr);
  assertEquals(sha256Bytes(piped.stdoutBytes), digest);
}

registryTest(
  "npm package: installed offline, its ocipart command runs the quick start on Node and on Deno",
  { needs: ["node", "npm"] },
  async () => {
    const tarball = await buildTarball();
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const prefix = `${tmp.path}/prefix`;
    await installOffline(tarball, prefix, tmp.path);
    const bin = `${prefix}/node_modules/.bin/ocipart`;
    const node = findBinary("node")!;

    const version = await run(node, [bin, "--version"]);
    assertEquals(version.code, 0, version.stderr);
    assertEquals(version.stdout, "ocipart 0.1.0\n");
    // The installed command itself (`#!/usr/bin/env node`), as a shell runs it.
    await quickStart(
      (args) => run(bin, args, { env: { HOME: tmp.path } }),
      registry.host,
      tmp.path,
      "node",
    );
    // A reader that takes what it wants and goes (`| head`): the pull ends quietly, exit 0.
    const headed = await run(findBinary("bash")!, [
      "-c",
      'set -o pipefail; "$0" pull --plain-http "$1" - | head -c 1000 > /dev/null',
      bin,
      `${registry.host}/demo/node:v1`,
    ], { env: { HOME: tmp.path } });
    assertEquals(headed.code, 0, headed.stderr);
    assertEquals(headed.stderr, "");
    // A push from standard input gives the manifest of the same bytes pushed from their file.
    const file = `${tmp.path}/node.bin`;
    const fromFile = await run(bin, [
      "push",
      "--plain-http",
      "--part-size",
      "1MiB",
      `${registry.host}/demo/node-file:v1`,
      file,
    ], { env: { HOME: tmp.path } });
    const fromStdin = await run(findBinary("bash")!, [
      "-c",
      '"$0" push --plain-http --part-size 1MiB --name node.bin "$1" - < "$2"',
      bin,
      `${registry.host}/demo/node-stdin:v1`,
      file,
    ], { env: { HOME: tmp.path } });
    assertEquals(fromStdin.code, 0, fromStdin.stderr);
    assertEquals(fromStdin.stdout, fromFile.stdout);
    // A byte range on standard output.
    const range = await run(bin, [
      "cat",
      "--plain-http",
      "--range",
      "1048570-1048589",
      `${registry.host}/demo/node:v1`,
    ], { env: { HOME: tmp.path } });
    assertEquals(range.code, 0, range.stderr);
    assertEquals(range.stdoutBytes, (await Deno.readFile(file)).slice(1048570, 1048590));
    // Files the CLI opens itself: a blob pushed from and pulled into a file, a local copy
    // reused by a pull, and a file already up to date.
    const cli = (args: string[]) => run(bin, args, { env: { HOME: tmp.path } });
    const blobPush = await cli([
      "blob",
      "push",
      "--plain-http",
      `${registry.host}/demo/blob`,
      file,
    ]);
    assertEquals(blobPush.code, 0, blobPush.stderr);
    const blobDigest = blobPush.stdout.trim();
    assertEquals(blobDigest, await sha256File(file));
    const blobPull = await cli([
      "blob",
      "pull",
      "--plain-http",
      `${registry.host}/demo/blob@${blobDigest}`,
      `${tmp.path}/blob-out.bin`,
    ]);
    assertEquals(blobPull.code, 0, blobPull.stderr);
    assertEquals(await sha256File(`${tmp.path}/blob-out.bin`), blobDigest);
    const reused = await cli([
      "pull",
      "--plain-http",
      "--json",
      "--reuse",
      file,
      `${registry.host}/demo/node:v1`,
      `${tmp.path}/reused.bin`,
    ]);
    assertEquals(reused.code, 0, reused.stderr);
    assertEquals(JSON.parse(reused.stdout).bytesFetched, 0, reused.stdout);
    assertEquals(await sha256File(`${tmp.path}/reused.bin`), blobDigest);
    const again = await cli([
      "pull",
      "--plain-http",
      "--json",
      "--overwrite",
      `${registry.host}/demo/node:v1`,
      `${tmp.path}/downloads-node`,
    ]);
    assertEquals(again.code, 0, again.stderr);
    assertEquals(JSON.parse(again.stdout).upToDate, true, again.stdout);
    // Ctrl-C during a pull: the command ends within 1 s (on Node, an abort once had to reach the
    // download through copied requests' signals, which Node lets go once collected).
    const big = `${tmp.path}/big.bin`;
    await writePatternFile(big, 64 * MiB, 9);
    const bigRef = `${registry.host}/demo/big:v1`;
    const pushedBig = await run(bin, ["push", "--plain-http", "--part-size", "8MiB", bigRef, big], {
      env: { HOME: tmp.path },
    });
    assertEquals(pushedBig.code, 0, pushedBig.stderr);
    const child = new Deno.Command(bin, {
      args: [
        "pull",
        "--plain-http",
        "--limit-rate",
        "16MiB/s",
        "--progress",
        "none",
        bigRef,
        `${tmp.path}/int.bin`,
      ],
      clearEnv: true,
      env: { PATH: Deno.env.get("PATH") ?? "", HOME: tmp.path },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const signalled = performance.now();
    child.kill("SIGINT");
    const stopped = await child.output();
    const took = performance.now() - signalled;
    assertEquals(stopped.code, 130, new TextDecoder().decode(stopped.stderr));
    assert(took < 1_000, `stopped ${took.toFixed(0)} ms after Ctrl-C`);

    const script = `${prefix}/node_modules/@ocipart/ocipart/bin/ocipart.mjs`;
    const options = { tmp: tmp.path };
    await quickStart(
      (args) =>
        run(Deno.execPath(), ["run", ...permissionFlags(options), script, ...args], {
          env: { HOME: tmp.path, ...denoDirEnv() },
        }),
      registry.host,
      tmp.path,
      "deno",
    );
  },
);

registryTest(
  "npm package: the library's subpaths share one copy of each class, and its types check",
  { needs: ["node", "npm"] },
  async () => {
    const tarball = await buildTarball();
    await using tmp = await tempDir();
    const prefix = `${tmp.path}/prefix`;
    await installOffline(tarball, prefix, tmp.path);
    const program = [
      'import { findError, NotFoundError, PartedClient } from "@ocipart/ocipart";',
      'import { NotFoundError as FromErrors } from "@ocipart/ocipart/errors";',
      'import { main } from "@ocipart/ocipart/cli";',
      "const err: Error = new Error('outer', { cause: new FromErrors('manifest') });",
      "const client: PartedClient = new PartedClient({ plainHttp: true });",
      "client.close();",
      "const code: number = await main(['--version']);",
      "console.log(JSON.stringify({ same: findError(err, NotFoundError) !== undefined, code }));",
    ].join("\n");
    await Deno.writeTextFile(`${prefix}/program.mts`, program);
    await Deno.writeTextFile(
      `${prefix}/program.mjs`,
      program.replace(/: (Error|PartedClient|number) =/g, " ="),
    );
    const node = await run(findBinary("node")!, ["program.mjs"], { cwd: prefix });
    assertEquals(node.code, 0, node.stderr);
    assertEquals(node.stdout.split("\n").at(-2), '{"same":true,"code":0}');
    assert(node.stdout.startsWith("ocipart 0.1.0\n"));
    const check = await run(Deno.execPath(), ["check", "program.mts"], {
      cwd: prefix,
      env: { HOME: tmp.path, ...denoDirEnv() },
    });
    assertEquals(check.code, 0, check.stderr);
  },
);

// The peak memory a CLI command may reach at any size, as `docs/performance.md` holds it.
const CLI_BOUND_MIB = 96;

registryTest(
  "npm package: on Node, a push and a pull of 1 GiB stay within 96 MiB in every TLS mode, direct and through a proxy, and the rate cap holds",
  { needs: ["node", "npm", "openssl", "tinyproxy"] },
  async (t) => {
    const tarball = await buildTarball();
    await using tmp = await tempDir();
    const prefix = `${tmp.path}/prefix`;
    await installOffline(tarball, prefix, tmp.path);
    const bin = `${prefix}/node_modules/.bin/ocipart`;
    const file = `${tmp.path}/data.bin`;
    const digest = await writePatternFile(file, 1024 * MiB, 13);
    const selfSigned = await makeSelfSigned(tmp.path);
    await using plain = await startRegistry();
    await using signed = await startRegistry({ tls: true });
    await using pinned = await startRegistry({ tls: selfSigned });
    await using proxy = await startTinyproxy();
    const caFile = `${tmp.path}/ca.pem`;
    await Deno.writeTextFile(caFile, signed.caCert!);
    const table: string[] = [];
    // The installed command as a shell runs it, its peak memory sampled while it runs.
    const measured = async (label: string, args: string[], env: Record<string, string> = {}) => {
      const child = new Deno.Command(bin, {
        args,
        clearEnv: true,
        env: { PATH: Deno.env.get("PATH") ?? "", NO_COLOR: "1", HOME: tmp.path, ...env },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const { result, peakMiB: peak } = await peakOf(child.pid, child.output());
      table.push(`${label}: ${peak} MiB`);
      assertEquals(result.code, 0, `${label}: ${new TextDecoder().decode(result.stderr)}`);
      assert(peak <= CLI_BOUND_MIB, `${label}: peak ${peak} MiB (bound ${CLI_BOUND_MIB} MiB)`);
    };
    const modes = [
      { name: "plain HTTP", host: plain.host, flags: ["--plain-http"], pushes: true },
      { name: "CA-signed", host: signed.host, flags: ["--ca-file", caFile], pushes: true },
      {
        name: "pinned self-signed",
        host: pinned.host,
        flags: ["--ca-file", selfSigned.certPath],
        pushes: true,
      },
      { name: "insecure", host: pinned.host, flags: ["--insecure"], pushes: false },
    ];
    for (const mode of modes) {
      const ref = `${mode.host}/node/memory:v1`;
      if (mode.pushes) {
        await t.step(
          `${mode.name}: push`,
          () => measured(`push, ${mode.name}`, ["push", ...mode.flags, ref, file]),
        );
      }
      for (const viaProxy of [false, true]) {
        const via = viaProxy ? "through a proxy" : "direct";
        const env: Record<string, string> = viaProxy
          ? { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url }
          : {};
        await t.step(`${mode.name}, ${via}: pull`, async () => {
          const out = `${tmp.path}/pulled.bin`;
          await measured(`pull, ${mode.name}, ${via}`, ["pull", ...mode.flags, ref, out], env);
          assertEquals(await sha256File(out), digest);
          await Deno.remove(out);
        });
      }
    }
    await t.step(
      "plain HTTP: a pull capped at 256 MiB/s takes at least the time its cap allows",
      async () => {
        const out = `${tmp.path}/capped.bin`;
        const started = performance.now();
        const args = [
          "pull",
          "--plain-http",
          "--limit-rate",
          "256MiB/s",
          `${plain.host}/node/memory:v1`,
          out,
        ];
        await measured("pull, plain HTTP, capped", args);
        const seconds = (performance.now() - started) / 1000;
        // 1 GiB at 256 MiB/s is 4 s; a cap that let bytes through early would end sooner.
        assert(seconds >= 3.6, `a pull capped at 256 MiB/s took ${seconds.toFixed(2)} s`);
        assertEquals(await sha256File(out), digest);
        await Deno.remove(out);
      },
    );
    console.log(`peak memory on Node:\n${table.join("\n")}`);
  },
);
