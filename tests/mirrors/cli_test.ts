/**
 * Mirrors through the CLI, under the narrowed permissions of every CLI test: `--mirror`,
 * `--registries-conf`, the default locations of the registries configuration, `--debug`.
 */
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../fixtures/assert.ts";
import { sha256File } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { cliEnv, failureLines, permissionFlags, PROJECT_ROOT, runCli } from "../cli/_cli.ts";
import { blobGets, manifestGets, type MirrorEnv, mirrorEnv, refusedHost, REPO } from "./_setup.ts";

function byDigest(env: MirrorEnv): string {
  return `${env.registry.host}/${REPO}@${env.manifestDigest}`;
}

async function pulledRight(env: MirrorEnv, dest: string): Promise<void> {
  assertEquals(await sha256File(dest), env.fileDigest, "pulled content");
}

/** A CLI run that may also read `CONTAINERS_REGISTRIES_CONF`. */
async function runWithConfEnv(args: string[], tmp: string, confPath: string) {
  const flags = permissionFlags({ tmp }).map((flag) =>
    flag.startsWith("--allow-env=") ? `${flag},CONTAINERS_REGISTRIES_CONF` : flag
  );
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, `${PROJECT_ROOT}cli.ts`, ...args],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv({ tmp, env: { CONTAINERS_REGISTRIES_CONF: confPath } }),
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return { code: output.code, stderr: decoder.decode(output.stderr) };
}

function conf(registry: string, mirror: string, extra = ""): string {
  return `# written by the test
unqualified-search-registries = ["docker.io"]
short-name-mode = "enforcing"

[[registry]]
location = "${registry}"
insecure = true

[[registry.mirror]]
location = "${mirror}"
insecure = true
${extra}
`;
}

Deno.test("cli mirrors: --mirror serves a pull by digest; --debug labels the mirror's exchanges", async () => {
  await using env = await mirrorEnv();
  const dest = `${env.dir.path}/out.bin`;
  const result = await runCli([
    "pull",
    "--plain-http",
    "--progress",
    "none",
    "--debug",
    "--mirror",
    env.mirror.host,
    byDigest(env),
    dest,
  ], { tmp: env.dir.path });
  assertEquals(result.code, 0, result.stderr);
  await pulledRight(env, dest);
  assertEquals(env.registry.log.length, 0, "requests at the registry");
  const debug = result.stderr.split("\n").filter((l) => l.startsWith("debug: "));
  assertEquals(debug.filter((l) => /^debug: GET mirror 200 /.test(l)).length, 1 + env.parts.length);
  assert(!debug.some((l) => / registry /.test(l)), result.stderr);
});

Deno.test("cli mirrors: a tag is resolved at the registry, the parts come from the --mirror", async () => {
  await using env = await mirrorEnv();
  const dest = `${env.dir.path}/out.bin`;
  const result = await runCli([
    "pull",
    "--plain-http",
    "--progress",
    "none",
    "--mirror",
    env.mirror.host,
    `${env.registry.host}/${REPO}:v1`,
    dest,
  ], { tmp: env.dir.path });
  assertEquals(result.code, 0, result.stderr);
  await pulledRight(env, dest);
  assertEquals(manifestGets(env.registry, "v1"), 1);
  assertEquals(blobGets(env.registry), 0);
  assertEquals(manifestGets(env.mirror), 0);
});

Deno.test("cli mirrors: a --mirror that refuses connections, then a good one; the pull completes", async () => {
  await using env = await mirrorEnv();
  const dest = `${env.dir.path}/out.bin`;
  const result = await runCli([
    "pull",
    "--plain-http",
    "--progress",
    "none",
    "--mirror",
    await refusedHost(),
    "--mirror",
    env.mirror.host,
    byDigest(env),
    dest,
  ], { tmp: env.dir.path });
  assertEquals(result.code, 0, result.stderr);
  await pulledRight(env, dest);
  assertEquals(env.registry.log.length, 0);
});

Deno.test("cli mirrors: inspect, verify and copy take --mirror", async () => {
  await using env = await mirrorEnv();
  const common = ["--plain-http", "--mirror", env.mirror.host];
  const inspect = await runCli(["inspect", ...common, byDigest(env)], { tmp: env.dir.path });
  assertEquals(inspect.code, 0, inspect.stderr);
  const verify = await runCli(["verify", ...common, byDigest(env), env.src], { tmp: env.dir.path });
  assertEquals(verify.code, 0, verify.stderr);
  assertEquals(env.registry.log.length, 0, "requests at the registry");
  assertEquals(manifestGets(env.mirror, env.manifestDigest), 2);
});

Deno.test("cli mirrors: a --mirror that is not a host is a usage error naming it", async () => {
  await using env = await mirrorEnv();
  for (const bad of ["http://cache.lan", "cache.lan/UPPER", "", "cache lan"]) {
    const result = await runCli(
      ["pull", "--mirror", bad, byDigest(env), `${env.dir.path}/o.bin`],
      { tmp: env.dir.path },
    );
    assertEquals(result.code, 2, result.stderr);
    assertStringIncludes(result.stderr, "--mirror");
  }
  const login = await runCli(
    ["login", "--mirror", env.mirror.host, env.registry.host],
    { tmp: env.dir.path },
  );
  assertEquals(login.code, 2, "login has no --mirror");
});

Deno.test("cli mirrors: --registries-conf FILE gives the registry's mirrors (all: the tag still at the registry)", async () => {
  await using env = await mirrorEnv();
  const file = `${env.dir.path}/registries.conf`;
  await Deno.writeTextFile(file, conf(env.registry.host, env.mirror.host));
  const dest = `${env.dir.path}/out.bin`;
  const result = await runCli([
    "pull",
    "--plain-http",
    "--progress",
    "none",
    "--registries-conf",
    file,
    `${env.registry.host}/${REPO}:v1`,
    dest,
  ], { tmp: env.dir.path });
  assertEquals(result.code, 0, result.stderr);
  await pulledRight(env, dest);
  // No pull-from-mirror: "all", as the format defines; the mirror is insecure (https, then http).
  // The registry answers, so the tag is its own; every part comes from the mirror.
  assertEquals(manifestGets(env.registry, "v1"), 1, "the tag at the registry");
  assertEquals(blobGets(env.registry), 0, "blob GETs at the registry");
  assertEquals(manifestGets(env.mirror, "v1"), 0, "the mirror is not asked for the tag");
});

Deno.test("cli mirrors: ~/.config/containers/registries.conf is read without a flag", async () => {
  await using env = await mirrorEnv();
  const dir = `${env.dir.path}/.config/containers`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/registries.conf`,
    conf(env.registry.host, env.mirror.host, 'pull-from-mirror = "digest-only"'),
  );
  const dest = `${env.dir.path}/out.bin`;
  const result = await runCli(
    ["pull", "--plain-http", "--progress", "none", byDigest(env), dest],
    { tmp: env.dir.path },
  );
  assertEquals(result.code, 0, result.stderr);
  await pulledRight(env, dest);
  assertEquals(env.registry.log.length, 0, "requests at the registry");
});

Deno.test("cli mirrors: $CONTAINERS_REGISTRIES_CONF wins over the user's file", async () => {
  await using env = await mirrorEnv();
  const dir = `${env.dir.path}/.config/containers`;
  await Deno.mkdir(dir, { recursive: true });
  // The user's file points at a dead mirror; the named one at the live one.
  await Deno.writeTextFile(`${dir}/registries.conf`, "this is not toml [");
  const named = `${env.dir.path}/named.conf`;
  await Deno.writeTextFile(named, conf(env.registry.host, env.mirror.host));
  const dest = `${env.dir.path}/out.bin`;
  const result = await runWithConfEnv(
    ["pull", "--plain-http", "--progress", "none", byDigest(env), dest],
    env.dir.path,
    named,
  );
  assertEquals(result.code, 0, result.stderr);
  assertEquals(env.registry.log.length, 0);
  const missing = await runWithConfEnv(
    ["pull", "--plain-http", "--progress", "none", byDigest(env), dest],
    env.dir.path,
    `${env.dir.path}/absent.conf`,
  );
  assertEquals(missing.code, 1, "a named file that is missing is an error");
  assertStringIncludes(missing.stderr, `registries configuration ${env.dir.path}/absent.conf`);
});

Deno.test("cli mirrors: a malformed, unusable, missing or unreadable configuration fails naming the file", async () => {
  await using env = await mirrorEnv();
  const file = `${env.dir.path}/registries.conf`;
  const cases: [string | undefined, RegExp][] = [
    ["[[registry]\nlocation = 1\n", /not valid TOML \(line 1, column \d+\)/],
    [
      '[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\nlocation = "https://m.io"\n',
      /registry\[0\]\.mirror\[0\]\.location must not have a URL scheme/,
    ],
    [
      '[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\nlocation = "m.io"\npull-from-mirror = "tags"\n',
      /pull-from-mirror must be all, digest-only or tag-only/,
    ],
    [
      '[[registry]]\nlocation = "a.io"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = "m.io"\npull-from-mirror = "all"\n',
      /cannot be set where the registry sets mirror-by-digest-only/,
    ],
    [
      '[[registry]]\nlocation = "a.io"\n[[registry]]\nprefix = "a.io"\n',
      /registry\[1\]\.prefix is given twice/,
    ],
    ["[[registry]]\ninsecure = true\n", /registry\[0\] needs a prefix or a location/],
    [
      '[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\ninsecure = "yes"\nlocation = "m.io"\n',
      /insecure must be true or false/,
    ],
    [undefined, /cannot be read \(ENOENT/],
  ];
  for (const [text, expected] of cases) {
    if (text === undefined) await Deno.remove(file).catch(() => {});
    else await Deno.writeTextFile(file, text);
    const dest = `${env.dir.path}/out.bin`;
    const result = await runCli(
      ["pull", "--plain-http", "--registries-conf", file, byDigest(env), dest],
      { tmp: env.dir.path },
    );
    assertEquals(result.code, 1, result.stderr);
    const [message, explanation] = failureLines(result.stderr);
    assertStringIncludes(message, `ocipart pull: registries configuration ${file}: `);
    assertMatch(message, expected);
    assert(!message.includes(dest), "the destination is not blamed");
    assertStringIncludes(explanation, "no sentinel matched (exit 1)");
    assertEquals(env.registry.log.length + env.mirror.log.length, 0, "nothing was sent");
    assert(!(await Deno.stat(`${dest}.parted-partial`).catch(() => undefined)), "nothing written");
  }
  // A directory in place of the file: unreadable.
  await Deno.mkdir(`${env.dir.path}/conf.d`);
  const dir = await runCli(
    [
      "pull",
      "--plain-http",
      "--registries-conf",
      `${env.dir.path}/conf.d`,
      byDigest(env),
      `${env.dir.path}/o`,
    ],
    { tmp: env.dir.path },
  );
  assertEquals(dir.code, 1, dir.stderr);
  assertMatch(
    failureLines(dir.stderr)[0],
    /registries configuration .*conf\.d: cannot be read \(EISDIR/,
  );
});

Deno.test("cli mirrors: a default file the process may not read is skipped, without a prompt", async () => {
  await using env = await mirrorEnv();
  // HOME is outside what the CLI may read: its registries.conf is never looked at.
  const home = `${env.dir.path}/home`;
  await Deno.mkdir(`${home}/.config/containers`, { recursive: true });
  await Deno.writeTextFile(`${home}/.config/containers/registries.conf`, "not toml [");
  const work = `${env.dir.path}/work`;
  await Deno.mkdir(work);
  const dest = `${work}/out.bin`;
  const result = await runCli(
    ["pull", "--plain-http", "--progress", "none", byDigest(env), dest],
    { tmp: work, env: { HOME: home } },
  );
  assertEquals(result.code, 0, result.stderr);
  assertEquals(blobGets(env.registry), env.parts.length, "no mirror: the registry served it");
});

Deno.test("cli mirrors: a copy's --mirror is reached like the source (--src-plain-http)", async () => {
  await using env = await mirrorEnv();
  await using target = await startFakeRegistry();
  const result = await runCli([
    "copy",
    "--src-plain-http",
    "--dest-plain-http",
    "--progress",
    "none",
    "--mirror",
    env.mirror.host,
    byDigest(env),
    `${target.host}/${REPO}:v1`,
  ], { tmp: env.dir.path });
  assertEquals(result.code, 0, result.stderr);
  assertEquals(result.stdout.trim(), env.manifestDigest);
  assertEquals(env.registry.log.length, 0, "requests at the source registry");
  assertEquals(blobGets(env.mirror), env.parts.length + 1, "every blob from the mirror");
});

Deno.test("cli mirrors: a near miss of --mirror is suggested; push names the commands that take it", async () => {
  await using env = await mirrorEnv();
  const typo = await runCli(
    ["pull", "--miror", env.mirror.host, byDigest(env), `${env.dir.path}/o.bin`],
    { tmp: env.dir.path },
  );
  assertEquals(typo.code, 2, typo.stderr);
  assertStringIncludes(typo.stderr, "unknown flag --miror (did you mean --mirror?)");
  const push = await runCli(
    ["push", "--mirror", env.mirror.host, `${env.registry.host}/${REPO}:v2`, env.src],
    { tmp: env.dir.path },
  );
  assertEquals(push.code, 2, push.stderr);
  assertStringIncludes(push.stderr, "unknown flag --mirror: it is a flag of pull, not of push");
  assertEquals(env.registry.log.length + env.mirror.log.length, 0, "nothing was sent");
});

Deno.test("cli mirrors: a --registries-conf path with control characters is shown escaped", async () => {
  await using env = await mirrorEnv();
  const file = `${env.dir.path}/\u001b]0;owned\u0007\u202eregistries.conf`;
  const result = await runCli(
    ["pull", "--plain-http", "--registries-conf", file, byDigest(env), `${env.dir.path}/o.bin`],
    { tmp: env.dir.path },
  );
  assertEquals(result.code, 1, result.stderr);
  for (const raw of ["\u001b", "\u0007", "\u202e"]) {
    assert(!result.stderr.includes(raw), JSON.stringify(result.stderr));
  }
  assertStringIncludes(result.stderr, "\\x1b]0;owned\\x07\\u202eregistries.conf: cannot be read");
});
