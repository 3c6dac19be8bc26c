/**
 * `login` and `logout` through the CLI against the real registry with htpasswd and with token
 * authentication, writing the docker configuration file or going through a real credential
 * helper program (a shell script written here that keeps what it is given in a file).
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { freePort } from "../fixtures/ports.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { type CliOptions, type CliResult, failureLines, runCli, spawnCli } from "./_cli.ts";
import {
  cliResult,
  HELPER_OS,
  killAll,
  processGone,
  runCliWidened,
  waitForText,
  waitGone,
  writeHelper,
} from "../auth/_helper_scripts.ts";
import { exists, expectFailure } from "../fixtures/expect.ts";

const KiB = 1024;

/** A refused login: the first lines name the registry typed and say nothing was saved. */
function assertRefusedLogin(stderr: string, host: string): void {
  const [sentence, hint] = stderr.split("\n");
  assertStrictEquals(
    sentence,
    `ocipart login: ${host} refused the user name and password (401 Unauthorized)`,
  );
  assertStrictEquals(hint, "ocipart login: hint: check them and try again; nothing was saved");
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(path));
}

const OTHER_KEYS = {
  auths: { "other.example": { auth: btoa("someone:else") } },
  detachKeys: "ctrl-x,x",
  proxies: { default: { noProxy: "*.internal" } },
};

registryTest(
  "login: a wrong password saves nothing (6) and says so; a right one is saved, other keys and the mode kept; logout erases it",
  {
    needs: ["htpasswd"],
  },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const dockerConfig = `${tmp.path}/docker`;
    const configPath = `${dockerConfig}/config.json`;
    const env = { DOCKER_CONFIG: dockerConfig };
    const login = ["login", "--plain-http", "--username", "alice", "--password-stdin"];

    const wrong = await runCli([...login, registry.host], { tmp: tmp.path, env, stdin: "nope\n" });
    expectFailure(wrong, { command: "login", code: 6, explanation: /matched UnauthorizedError/ });
    assertRefusedLogin(wrong.stderr, registry.host);
    assertStrictEquals(await exists(configPath), false, "a refused credential writes nothing");

    await Deno.mkdir(dockerConfig);
    await Deno.writeTextFile(configPath, JSON.stringify(OTHER_KEYS));
    await Deno.chmod(configPath, 0o640); // the user's choice for an existing file is kept
    const before = await Deno.readTextFile(configPath);
    const wrongAgain = await runCli([...login, registry.host], {
      tmp: tmp.path,
      env,
      stdin: "nope",
    });
    assertStrictEquals(wrongAgain.code, 6, wrongAgain.stderr);
    assertStrictEquals(await Deno.readTextFile(configPath), before, "the file is untouched");

    const right = await runCli([...login, registry.host], {
      tmp: tmp.path,
      env,
      stdin: "correct horse\n",
    });
    assertStrictEquals(right.code, 0, right.stderr);
    assertStrictEquals(right.stdout, "Login succeeded; saved in the docker configuration\n");
    assert(!right.stderr.includes("correct horse") && !right.stdout.includes("correct"));
    assertStrictEquals((await Deno.stat(configPath)).mode! & 0o777, 0o640);
    const saved = await readJson(configPath);
    assertEquals(saved, {
      ...OTHER_KEYS,
      auths: { ...OTHER_KEYS.auths, [registry.host]: { auth: btoa("alice:correct horse") } },
    });
    assertEquals(
      (await Array.fromAsync(Deno.readDir(dockerConfig))).map((e) => e.name),
      ["config.json"],
      "no temporary file is left",
    );

    // The saved credential is what later commands use.
    const source = `${tmp.path}/w.bin`;
    await writePatternFile(source, 100 * KiB);
    const ref = `${registry.host}/private/llm:v1`;
    const push = await runCli(["push", "--plain-http", ref, source], { tmp: tmp.path, env });
    assertStrictEquals(push.code, 0, push.stderr);

    const logout = await runCli(["logout", "--json", registry.host], { tmp: tmp.path, env });
    assertStrictEquals(logout.code, 0, logout.stderr);
    assertEquals(JSON.parse(logout.stdout), {
      registry: registry.host,
      configPath,
      removedFrom: ["auths"],
      loggedIn: false,
    });
    assertEquals(await readJson(configPath), OTHER_KEYS);
    const anonymous = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path, env });
    expectFailure(anonymous, {
      command: "inspect",
      code: 6,
      explanation: /matched UnauthorizedError/,
    });
    const again = await runCli(["logout", registry.host], { tmp: tmp.path, env });
    assertStrictEquals(again.code, 0, "logging out twice is fine");
  },
);

registryTest("--registry-config names the configuration file instead of DOCKER_CONFIG", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const config = `${tmp.path}/elsewhere/ci.json`;
  const decoy = `${tmp.path}/docker`;
  const env = { DOCKER_CONFIG: decoy };
  const login = await runCli(
    [
      "login",
      "--plain-http",
      "--registry-config",
      config,
      "--username",
      "alice",
      "--password-stdin",
      registry.host,
    ],
    { tmp: tmp.path, env, stdin: "correct horse" },
  );
  assertStrictEquals(login.code, 0, login.stderr);
  assertStrictEquals(await exists(`${decoy}/config.json`), false);
  assertStrictEquals((await Deno.stat(config)).mode! & 0o777, 0o600);

  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 50 * KiB);
  const ref = `${registry.host}/private/llm:v1`;
  const push = await runCli(["push", "--plain-http", "--registry-config", config, ref, source], {
    tmp: tmp.path,
    env,
  });
  assertStrictEquals(push.code, 0, push.stderr);
  const withoutIt = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path, env });
  expectFailure(withoutIt, {
    command: "inspect",
    code: 6,
    explanation: /matched UnauthorizedError/,
  });
  const logout = await runCli(["logout", "--registry-config", config, registry.host], {
    tmp: tmp.path,
    env,
  });
  assertStrictEquals(logout.code, 0, logout.stderr);
  assertEquals(await readJson(config), { auths: {} });
});

registryTest("login against a token registry: 6 for a wrong password, 0 for the right one", {
  needs: ["openssl"],
}, async () => {
  await using tokens = await startTokenServer({ users: { bob: "hunter2" } });
  await using registry = await startRegistry({
    token: {
      realm: tokens.realm,
      service: tokens.service,
      issuer: tokens.issuer,
      rootCertBundle: tokens.rootCertBundle,
    },
  });
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/docker/config.json`;
  const env = { DOCKER_CONFIG: `${tmp.path}/docker` };
  const login = ["login", "--plain-http", "--username", "bob", "--password-stdin"];
  const wrong = await runCli([...login, registry.host], { tmp: tmp.path, env, stdin: "nope" });
  expectFailure(wrong, { command: "login", code: 6, explanation: /matched UnauthorizedError/ });
  assertRefusedLogin(wrong.stderr, registry.host);
  assertStrictEquals(await exists(configPath), false);
  const right = await runCli([...login, "--json", registry.host], {
    tmp: tmp.path,
    env,
    stdin: "hunter2\n",
  });
  assertStrictEquals(right.code, 0, right.stderr);
  assertEquals(JSON.parse(right.stdout), {
    registry: registry.host,
    configPath,
    savedIn: "auths",
    removedFrom: [],
    loggedIn: true,
  });
  assertEquals(await readJson(configPath), {
    auths: { [registry.host]: { auth: btoa("bob:hunter2") } },
  });
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 50 * KiB);
  const push = await runCli(["push", "--plain-http", `${registry.host}/team/llm:v1`, source], {
    tmp: tmp.path,
    env,
  });
  assertStrictEquals(push.code, 0, push.stderr);
});

/** A docker credential helper that keeps the last stored credential in `store`. */
function helperScript(store: string): string {
  return `#!/bin/sh
case "$1" in
  store) cat > '${store}' ;;
  get)
    cat > /dev/null
    if [ -f '${store}' ]; then cat '${store}'; else echo "credentials not found in native keychain"; exit 1; fi ;;
  erase) cat > '${store}.erased'; rm -f '${store}' ;;
  *) exit 2 ;;
esac
`;
}

registryTest("login and logout go through the configured credential helper (credsStore)", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { carol: "from-helper" } });
  await using tmp = await tempDir();
  const bin = `${tmp.path}/bin`;
  await Deno.mkdir(bin);
  const store = `${tmp.path}/helper-store.json`;
  await Deno.writeTextFile(`${bin}/docker-credential-clitest`, helperScript(store));
  await Deno.chmod(`${bin}/docker-credential-clitest`, 0o755);
  const dockerConfig = `${tmp.path}/docker`;
  await Deno.mkdir(dockerConfig);
  const configPath = `${dockerConfig}/config.json`;
  await Deno.writeTextFile(configPath, JSON.stringify({ credsStore: "clitest" }));
  const options = {
    tmp: tmp.path,
    env: { DOCKER_CONFIG: dockerConfig, PATH: `${bin}:${Deno.env.get("PATH") ?? ""}` },
    run: ["docker-credential-clitest"],
  };
  const login = ["login", "--plain-http", "--username", "carol", "--password-stdin"];

  const wrong = await runCli([...login, registry.host], { ...options, stdin: "nope" });
  expectFailure(wrong, { command: "login", code: 6, explanation: /matched UnauthorizedError/ });
  assertStrictEquals(await exists(store), false, "the helper was not asked to store");

  const right = await runCli([...login, registry.host], { ...options, stdin: "from-helper" });
  assertStrictEquals(right.code, 0, right.stderr);
  assertStrictEquals(
    right.stdout,
    "Login succeeded; saved in credential helper docker-credential-clitest\n",
  );
  assertEquals(await readJson(store), {
    ServerURL: registry.host,
    Username: "carol",
    Secret: "from-helper",
  });
  assertEquals(await readJson(configPath), { credsStore: "clitest" }, "no secret in the file");

  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 50 * KiB);
  const ref = `${registry.host}/helped/llm:v1`;
  const push = await runCli(["push", "--plain-http", ref, source], options);
  assertStrictEquals(push.code, 0, push.stderr);

  const logout = await runCli(["logout", registry.host], options);
  assertStrictEquals(logout.code, 0, logout.stderr);
  assertStrictEquals(await exists(store), false);
  assertStrictEquals(await Deno.readTextFile(`${store}.erased`), registry.host);
  const anonymous = await runCli(["inspect", "--plain-http", ref], options);
  expectFailure(anonymous, {
    command: "inspect",
    code: 6,
    explanation: /matched UnauthorizedError/,
  });
});

Deno.test("logout names a credential helper that is not installed (exit 1)", async () => {
  await using tmp = await tempDir();
  const dockerConfig = `${tmp.path}/docker`;
  await Deno.mkdir(dockerConfig);
  await Deno.writeTextFile(`${dockerConfig}/config.json`, JSON.stringify({ credsStore: "absent" }));
  const result = await runCli(["logout", "127.0.0.1:5000"], {
    tmp: tmp.path,
    env: { DOCKER_CONFIG: dockerConfig, PATH: `${tmp.path}/empty-bin` },
    run: ["docker-credential-absent"],
  });
  expectFailure(result, { command: "logout", code: 1, explanation: /no sentinel matched/ });
  assert(
    result.stderr.includes("credential helper docker-credential-absent not found"),
    result.stderr,
  );
});

/** A helper for every verb that records its pid, then becomes a long sleep. */
const HANGING_HELPER = (pidFile: string) => `echo "$$" > '${pidFile}'\nexec sleep 100\n`;

/** Sets up `docker-credential-<name>` in `<tmp>/bin` and a configuration naming it. */
async function helperSetup(tmp: string, name: string, body: string, config: unknown = {}) {
  const bin = `${tmp}/bin`;
  await Deno.mkdir(bin, { recursive: true });
  await writeHelper(bin, name, body);
  const dockerConfig = `${tmp}/docker`;
  await Deno.mkdir(dockerConfig, { recursive: true });
  const configPath = `${dockerConfig}/config.json`;
  const text = JSON.stringify({ credsStore: name, ...(config as Record<string, unknown>) });
  await Deno.writeTextFile(configPath, text);
  const options = {
    tmp,
    env: { DOCKER_CONFIG: dockerConfig, PATH: `${bin}:${Deno.env.get("PATH") ?? ""}` },
    run: [`docker-credential-${name}`],
  };
  return { configPath, text, options };
}

/** Spawns the CLI, waits for the helper's pid, sends `signal`; the result and the time it took. */
async function interrupt(
  args: string[],
  options: CliOptions,
  pidFile: string,
  signal: Deno.Signal,
): Promise<{ result: CliResult; afterSignalMs: number; pid: number }> {
  const child = spawnCli(args, options);
  const writer = child.stdin.getWriter();
  if (options.stdin !== undefined) await writer.write(new TextEncoder().encode(options.stdin));
  await writer.close();
  const pid = Number(await waitForText(pidFile));
  const sentAt = performance.now();
  child.kill(signal);
  const result = await cliResult(child);
  return { result, afterSignalMs: performance.now() - sentAt, pid };
}

registryTest("login: a credential helper that hangs is stopped by --timeout and by Ctrl-C", {
  needs: ["htpasswd"],
  ignore: !HELPER_OS,
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const pidFile = `${tmp.path}/pid`;
  const { configPath, text, options } = await helperSetup(
    tmp.path,
    "hang",
    HANGING_HELPER(pidFile),
  );
  const login = ["login", "--plain-http", "--username", "alice", "--password-stdin"];

  const started = performance.now();
  const timedOut = await runCli([...login, "--timeout", "3s", registry.host], {
    ...options,
    stdin: "correct horse",
  });
  const elapsed = performance.now() - started;
  expectFailure(timedOut, { command: "login", code: 1, explanation: /--timeout 3s expired/ });
  assert(elapsed < 8_000, `ended ${elapsed.toFixed(0)} ms after the start`);
  const first = Number(await waitForText(pidFile));
  assertEquals(await waitGone([first]), [], "the helper does not outlive the command");
  killAll([first]);
  await Deno.remove(pidFile);

  const { result, afterSignalMs, pid } = await interrupt(
    [...login, registry.host],
    { ...options, stdin: "correct horse" },
    pidFile,
    "SIGINT",
  );
  try {
    expectFailure(result, {
      command: "login",
      code: 130,
      explanation: /interrupted by SIGINT \(exit 130\)/,
    });
    assert(afterSignalMs < 2_000, `ended ${afterSignalMs.toFixed(0)} ms after Ctrl-C`);
    assertEquals(await waitGone([pid]), []);
  } finally {
    killAll([pid]);
  }
  assertStrictEquals(await Deno.readTextFile(configPath), text, "nothing was saved");
});

Deno.test({
  name: "logout: a credential helper that hangs is stopped by --timeout, Ctrl-C and SIGTERM",
  ignore: !HELPER_OS,
}, async () => {
  await using tmp = await tempDir();
  const pidFile = `${tmp.path}/pid`;
  const stored = { auths: { "127.0.0.1:5000": { auth: btoa("a:b") } } };
  const { configPath, text, options } = await helperSetup(
    tmp.path,
    "hang",
    HANGING_HELPER(pidFile),
    stored,
  );
  const timedOut = await runCli(["logout", "--timeout", "2s", "127.0.0.1:5000"], options);
  expectFailure(timedOut, { command: "logout", code: 1, explanation: /--timeout 2s expired/ });
  const first = Number(await waitForText(pidFile));
  assertEquals(await waitGone([first]), []);
  killAll([first]);
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    await Deno.remove(pidFile);
    const { result, afterSignalMs, pid } = await interrupt(
      ["logout", "127.0.0.1:5000"],
      options,
      pidFile,
      signal,
    );
    try {
      expectFailure(result, {
        command: "logout",
        code: code,
        explanation: new RegExp(`by ${signal} \\(exit ${code}\\)`),
      });
      assert(afterSignalMs < 2_000, `${signal}: ended ${afterSignalMs.toFixed(0)} ms after it`);
      assertEquals(await waitGone([pid]), [], `${signal}: the helper was stopped`);
    } finally {
      killAll([pid]);
    }
  }
  assertStrictEquals(await Deno.readTextFile(configPath), text, "nothing was removed");
  assertEquals(
    (await Array.fromAsync(Deno.readDir(`${tmp.path}/docker`))).map((e) => e.name),
    ["config.json"],
  );
});

registryTest(
  "a command reading credentials stops a hanging helper and the children it started",
  { needs: ["htpasswd"], ignore: !HELPER_OS },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const pidFile = `${tmp.path}/pid`;
    const { options } = await helperSetup(
      tmp.path,
      "hang",
      `cat > /dev/null\nsleep 100 &\necho "$$ $!" > '${pidFile}'\nwait\n`,
    );
    const started = performance.now();
    // The whole --allow-run lets the CLI signal the helper's process group.
    const result = await runCliWidened(
      ["inspect", "--plain-http", "--timeout", "2s", `${registry.host}/private/llm:v1`],
      options,
      { run: true },
    );
    const elapsed = performance.now() - started;
    const pids = (await waitForText(pidFile)).trim().split(" ").map(Number);
    try {
      expectFailure(result, { command: "inspect", code: 1, explanation: /--timeout 2s expired/ });
      assert(elapsed < 7_000, `ended ${elapsed.toFixed(0)} ms after the start`);
      assertEquals(await waitGone(pids), [], "the helper and its child are gone");
    } finally {
      killAll(pids);
    }
  },
);

registryTest(
  "under --allow-run=docker-credential-<name> a helper's child outlives the helper, but the command never waits for it",
  { needs: ["htpasswd"], ignore: !HELPER_OS },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const pidFile = `${tmp.path}/pid`;
    const { options } = await helperSetup(
      tmp.path,
      "hang",
      `cat > /dev/null\nsleep 100 &\necho "$$ $!" > '${pidFile}'\nwait\n`,
    );
    const inspect = ["inspect", "--plain-http", `${registry.host}/private/llm:v1`];
    const helperPids = async () => (await waitForText(pidFile)).trim().split(" ").map(Number);

    // Stopped by the time limit: only the helper can be killed (Deno signals a process group
    // only under the whole --allow-run), yet the command ends within the bound.
    const started = performance.now();
    const timedOut = await runCli([...inspect, "--timeout", "2s"], options);
    const elapsed = performance.now() - started;
    const [helper, child] = await helperPids();
    try {
      expectFailure(timedOut, { command: "inspect", code: 1, explanation: /--timeout 2s expired/ });
      assert(elapsed < 7_000, `ended ${elapsed.toFixed(0)} ms after the start`);
      assertEquals(await waitGone([helper]), [], "the helper is killed");
      assertStrictEquals(await processGone(child), false, "its child still runs");
    } finally {
      killAll([helper, child]);
    }

    // Stopped by Ctrl-C: the same.
    await Deno.remove(pidFile);
    const cli = spawnCli(inspect, options);
    await cli.stdin.close();
    const [helper2, child2] = await helperPids();
    try {
      const sentAt = performance.now();
      cli.kill("SIGINT");
      const interrupted = await cliResult(cli);
      const afterSignal = performance.now() - sentAt;
      expectFailure(interrupted, {
        command: "inspect",
        code: 130,
        explanation: /interrupted by SIGINT \(exit 130\)/,
      });
      assert(afterSignal < 2_000, `ended ${afterSignal.toFixed(0)} ms after Ctrl-C`);
      assertEquals(await waitGone([helper2]), [], "the helper is killed");
      assertStrictEquals(await processGone(child2), false, "its child still runs");
    } finally {
      killAll([helper2, child2]);
    }

    // A helper that answers and exits, leaving a child that holds its output open: the answer
    // is used and the command goes on to the registry.
    await Deno.remove(pidFile);
    await writeHelper(
      `${tmp.path}/bin`,
      "hang",
      `cat > /dev/null\nprintf '{"Username":"alice","Secret":"correct horse"}'\n` +
        `sleep 100 &\necho "$$ $!" > '${pidFile}'\nexit 0\n`,
    );
    const answeredAt = performance.now();
    const answered = await runCli(inspect, options);
    const answeredIn = performance.now() - answeredAt;
    const [, child3] = await helperPids();
    try {
      expectFailure(answered, {
        command: "inspect",
        code: 3,
        explanation: /matched NotFoundError/,
      });
      assert(answeredIn < 7_000, `ended ${answeredIn.toFixed(0)} ms after the start`);
      assertStrictEquals(await processGone(child3), false, "the helper's child still runs");
    } finally {
      killAll([child3]);
    }
  },
);

registryTest("login and logout through a configuration that is a symbolic link", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  await Deno.mkdir(`${tmp.path}/dotfiles`);
  await Deno.mkdir(`${tmp.path}/docker`);
  const target = `${tmp.path}/dotfiles/docker-config.json`;
  const link = `${tmp.path}/docker/config.json`;
  await Deno.writeTextFile(target, JSON.stringify(OTHER_KEYS));
  await Deno.symlink("../dotfiles/docker-config.json", link);
  const options = { tmp: tmp.path, env: { DOCKER_CONFIG: `${tmp.path}/docker` } };
  const login = await runCli(
    ["login", "--plain-http", "--username", "alice", "--password-stdin", registry.host],
    { ...options, stdin: "correct horse" },
  );
  assertStrictEquals(login.code, 0, login.stderr);
  assert((await Deno.lstat(link)).isSymlink, "the link stays a link");
  assertEquals((await readJson(target)).auths, {
    ...OTHER_KEYS.auths,
    [registry.host]: { auth: btoa("alice:correct horse") },
  });
  const ref = `${registry.host}/private/llm:v1`;
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 10 * KiB);
  assertStrictEquals((await runCli(["push", "--plain-http", ref, source], options)).code, 0);

  const logout = await runCli(["logout", registry.host], options);
  assertStrictEquals(logout.code, 0, logout.stderr);
  assertStrictEquals(
    logout.stdout,
    `Removed the login of ${registry.host} from the docker configuration\n`,
  );
  assert((await Deno.lstat(link)).isSymlink);
  assertEquals(await readJson(target), OTHER_KEYS, "the credential left the link's target");
  const anonymous = await runCli(["inspect", "--plain-http", ref], options);
  expectFailure(anonymous, {
    command: "inspect",
    code: 6,
    explanation: /matched UnauthorizedError/,
  });
  const again = await runCli(["logout", registry.host], options);
  assertStrictEquals(again.code, 0, again.stderr);
  assertStrictEquals(again.stdout, `No login was stored for ${registry.host}\n`);
});

registryTest(
  "a new login replaces a stale identity token; a login through a helper drops the plain-text copy",
  { needs: ["htpasswd"] },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const dockerConfig = `${tmp.path}/docker`;
    await Deno.mkdir(dockerConfig);
    const configPath = `${dockerConfig}/config.json`;
    const stale = { auth: btoa("alice:old"), identitytoken: "stale-refresh-token" };
    await Deno.writeTextFile(configPath, JSON.stringify({ auths: { [registry.host]: stale } }));
    const options = { tmp: tmp.path, env: { DOCKER_CONFIG: dockerConfig } };
    const ref = `${registry.host}/private/llm:v1`;
    const refused = await runCli(["inspect", "--plain-http", ref], options);
    assert(/identity tokens are not supported/.test(refused.stderr), refused.stderr);

    const login = ["login", "--plain-http", "--username", "alice", "--password-stdin"];
    const right = await runCli([...login, registry.host], { ...options, stdin: "correct horse" });
    assertStrictEquals(right.code, 0, right.stderr);
    assertEquals(await readJson(configPath), {
      auths: { [registry.host]: { auth: btoa("alice:correct horse") } },
    });
    const source = `${tmp.path}/w.bin`;
    await writePatternFile(source, 10 * KiB);
    const push = await runCli(["push", "--plain-http", ref, source], options);
    assertStrictEquals(push.code, 0, push.stderr);

    // Now a helper is configured: the next login goes there, and the file keeps no secret.
    const store = `${tmp.path}/helper-store.json`;
    const { options: helped } = await helperSetup(tmp.path, "clitest", helperScript(store), {
      auths: { [registry.host]: { auth: btoa("alice:correct horse") } },
    });
    const viaHelper = await runCli([...login, registry.host], {
      ...helped,
      stdin: "correct horse",
    });
    assertStrictEquals(viaHelper.code, 0, viaHelper.stderr);
    assertStrictEquals(
      viaHelper.stdout,
      "Login succeeded; saved in credential helper docker-credential-clitest; " +
        "removed the plain-text copy from the docker configuration\n",
    );
    assertEquals(await readJson(configPath), { credsStore: "clitest", auths: {} });
    assertStrictEquals((await readJson(store)).Secret, "correct horse");
  },
);

Deno.test("--registry-config naming a missing file is an error for every command but login", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  const missing = `${tmp.path}/no-such-dir/ci.json`;
  const ref = `${registry.host}/team/data:v1`;
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, KiB);
  const commands: Array<[string, string[]]> = [
    ["push", ["push", "--plain-http", ref, file]],
    ["pull", ["pull", "--plain-http", ref, `${tmp.path}/out.bin`]],
    ["copy", ["copy", "--plain-http", ref, `${registry.host}/team/other:v1`]],
    ["inspect", ["inspect", "--plain-http", ref]],
    ["verify", ["verify", "--plain-http", ref, file]],
    ["logout", ["logout", registry.host]],
  ];
  for (const [name, args] of commands) {
    const result = await runCli([
      ...args.slice(0, 1),
      "--registry-config",
      missing,
      ...args.slice(1),
    ], {
      tmp: tmp.path,
    });
    expectFailure(result, {
      command: name,
      code: 1,
      explanation: /no sentinel matched \(exit 1\)/,
    });
    assertStrictEquals(
      failureLines(result.stderr)[0],
      `ocipart ${name}: --registry-config: ${missing} does not exist (only login creates it)`,
    );
  }
  assertStrictEquals(registry.log.length, 0, "no command went to the registry");
  assertStrictEquals(await exists(missing), false);
});

Deno.test("login to a port where nothing listens says so", async () => {
  await using tmp = await tempDir();
  const port = await freePort();
  const result = await runCli(
    ["login", "--plain-http", "--username", "alice", "--password-stdin", `127.0.0.1:${port}`],
    { tmp: tmp.path, stdin: "pw", env: { DOCKER_CONFIG: `${tmp.path}/docker` } },
  );
  expectFailure(result, { command: "login", code: 1, explanation: /no sentinel matched/ });
  const [sentence, hint] = result.stderr.split("\n");
  assertStrictEquals(
    sentence,
    `ocipart login: nothing is listening at 127.0.0.1:${port}: the connection was refused`,
  );
  assertStrictEquals(
    hint,
    `ocipart login: hint: is the registry running, and is ${port} its port?`,
  );
  assertStrictEquals(await exists(`${tmp.path}/docker`), false);
});

registryTest(
  "login names a credential helper that is missing or not permitted, and a broken file",
  {
    needs: ["htpasswd"],
  },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const login = [
      "login",
      "--plain-http",
      "--username",
      "alice",
      "--password-stdin",
      registry.host,
    ];
    const dockerConfig = `${tmp.path}/docker`;
    await Deno.mkdir(dockerConfig);
    const configPath = `${dockerConfig}/config.json`;
    const env = { DOCKER_CONFIG: dockerConfig };

    await Deno.writeTextFile(configPath, JSON.stringify({ credsStore: "nonexistent" }));
    const missing = await runCli(login, {
      tmp: tmp.path,
      env: { ...env, PATH: `${tmp.path}/empty-bin` },
      stdin: "correct horse",
      run: ["docker-credential-nonexistent"],
    });
    expectFailure(missing, { command: "login", code: 1, explanation: /no sentinel matched/ });
    assertStrictEquals(
      failureLines(missing.stderr)[0],
      "ocipart login: credentials: credential helper docker-credential-nonexistent not found " +
        "(is it installed and on PATH?)",
    );

    // Installed, but the sandbox was not told it may run it.
    const { options } = await helperSetup(tmp.path, "clitest", helperScript(`${tmp.path}/s`));
    const { run: _run, ...withoutRun } = options;
    const narrowed = await runCli(login, { ...withoutRun, stdin: "correct horse" });
    expectFailure(narrowed, { command: "login", code: 1, explanation: /no sentinel matched/ });
    assertStrictEquals(
      failureLines(narrowed.stderr)[0],
      "ocipart login: credentials: credential helper docker-credential-clitest could not run: " +
        "it needs the whole environment (grant --allow-env, and --allow-run=docker-credential-clitest)",
    );
    // The whole environment, but no --allow-run at all.
    const noRun = await runCliWidened(login, { ...withoutRun, stdin: "correct horse" }, {
      env: true,
    });
    expectFailure(noRun, { command: "login", code: 1, explanation: /no sentinel matched/ });
    assertStrictEquals(
      failureLines(noRun.stderr)[0],
      "ocipart login: credentials: credential helper docker-credential-clitest is not permitted " +
        "to run (grant it with --allow-run=docker-credential-clitest)",
    );

    await Deno.writeTextFile(configPath, '{"auths": {');
    const broken = await runCli(login, { tmp: tmp.path, env, stdin: "correct horse" });
    expectFailure(broken, { command: "login", code: 1, explanation: /no sentinel matched/ });
    assertStrictEquals(
      failureLines(broken.stderr)[0],
      `ocipart login: credentials: docker config is not valid JSON (${configPath})`,
    );
    assertStrictEquals(await Deno.readTextFile(configPath), '{"auths": {', "not overwritten");
  },
);
