/**
 * `login` and `logout` through the CLI against the real registry with htpasswd and with token
 * authentication, writing the docker configuration file or going through a real credential
 * helper program (a shell script written here that keeps what it is given in a file).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { type CliResult, failureLines, runCli } from "./_cli.ts";

const KiB = 1024;

function expectFailure(result: CliResult, command: string, code: number, why: RegExp): void {
  strictEqual(result.code, code, `exit ${result.code}, stderr:\n${result.stderr}`);
  strictEqual(result.stdout, "", "nothing on stdout on failure");
  const [error, explanation] = failureLines(result.stderr);
  ok(error.startsWith(`ocipart ${command}: `), error);
  ok(why.test(explanation), `${explanation} !~ ${why}`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
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
  "login: a wrong password saves nothing (6); a right one is saved 0600, other keys kept; logout erases it",
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
    expectFailure(wrong, "login", 6, /matched UnauthorizedError/);
    strictEqual(await exists(configPath), false, "a refused credential writes nothing");

    await Deno.mkdir(dockerConfig);
    await Deno.writeTextFile(configPath, JSON.stringify(OTHER_KEYS));
    const before = await Deno.readTextFile(configPath);
    const wrongAgain = await runCli([...login, registry.host], {
      tmp: tmp.path,
      env,
      stdin: "nope",
    });
    strictEqual(wrongAgain.code, 6, wrongAgain.stderr);
    strictEqual(await Deno.readTextFile(configPath), before, "the file is untouched");

    const right = await runCli([...login, registry.host], {
      tmp: tmp.path,
      env,
      stdin: "correct horse\n",
    });
    strictEqual(right.code, 0, right.stderr);
    strictEqual(right.stdout, "Login succeeded; saved in the docker configuration\n");
    ok(!right.stderr.includes("correct horse") && !right.stdout.includes("correct"));
    strictEqual((await Deno.stat(configPath)).mode! & 0o777, 0o600);
    const saved = await readJson(configPath);
    deepStrictEqual(saved, {
      ...OTHER_KEYS,
      auths: { ...OTHER_KEYS.auths, [registry.host]: { auth: btoa("alice:correct horse") } },
    });
    deepStrictEqual(
      (await Array.fromAsync(Deno.readDir(dockerConfig))).map((e) => e.name),
      ["config.json"],
      "no temporary file is left",
    );

    // The saved credential is what later commands use.
    const source = `${tmp.path}/w.bin`;
    await writePatternFile(source, 100 * KiB);
    const ref = `${registry.host}/private/llm:v1`;
    const push = await runCli(["push", "--plain-http", ref, source], { tmp: tmp.path, env });
    strictEqual(push.code, 0, push.stderr);

    const logout = await runCli(["logout", "--json", registry.host], { tmp: tmp.path, env });
    strictEqual(logout.code, 0, logout.stderr);
    deepStrictEqual(JSON.parse(logout.stdout), {
      registry: registry.host,
      configPath,
      loggedIn: false,
    });
    deepStrictEqual(await readJson(configPath), OTHER_KEYS);
    const anonymous = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path, env });
    expectFailure(anonymous, "inspect", 6, /matched UnauthorizedError/);
    const again = await runCli(["logout", registry.host], { tmp: tmp.path, env });
    strictEqual(again.code, 0, "logging out twice is fine");
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
  strictEqual(login.code, 0, login.stderr);
  strictEqual(await exists(`${decoy}/config.json`), false);
  strictEqual((await Deno.stat(config)).mode! & 0o777, 0o600);

  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 50 * KiB);
  const ref = `${registry.host}/private/llm:v1`;
  const push = await runCli(["push", "--plain-http", "--registry-config", config, ref, source], {
    tmp: tmp.path,
    env,
  });
  strictEqual(push.code, 0, push.stderr);
  const withoutIt = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path, env });
  expectFailure(withoutIt, "inspect", 6, /matched UnauthorizedError/);
  const logout = await runCli(["logout", "--registry-config", config, registry.host], {
    tmp: tmp.path,
    env,
  });
  strictEqual(logout.code, 0, logout.stderr);
  deepStrictEqual(await readJson(config), { auths: {} });
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
  expectFailure(wrong, "login", 6, /matched UnauthorizedError/);
  strictEqual(await exists(configPath), false);
  const right = await runCli([...login, "--json", registry.host], {
    tmp: tmp.path,
    env,
    stdin: "hunter2\n",
  });
  strictEqual(right.code, 0, right.stderr);
  deepStrictEqual(JSON.parse(right.stdout), {
    registry: registry.host,
    configPath,
    loggedIn: true,
  });
  deepStrictEqual(await readJson(configPath), {
    auths: { [registry.host]: { auth: btoa("bob:hunter2") } },
  });
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 50 * KiB);
  const push = await runCli(["push", "--plain-http", `${registry.host}/team/llm:v1`, source], {
    tmp: tmp.path,
    env,
  });
  strictEqual(push.code, 0, push.stderr);
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
  expectFailure(wrong, "login", 6, /matched UnauthorizedError/);
  strictEqual(await exists(store), false, "the helper was not asked to store");

  const right = await runCli([...login, registry.host], { ...options, stdin: "from-helper" });
  strictEqual(right.code, 0, right.stderr);
  strictEqual(
    right.stdout,
    "Login succeeded; saved in credential helper docker-credential-clitest\n",
  );
  deepStrictEqual(await readJson(store), {
    ServerURL: registry.host,
    Username: "carol",
    Secret: "from-helper",
  });
  deepStrictEqual(await readJson(configPath), { credsStore: "clitest" }, "no secret in the file");

  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 50 * KiB);
  const ref = `${registry.host}/helped/llm:v1`;
  const push = await runCli(["push", "--plain-http", ref, source], options);
  strictEqual(push.code, 0, push.stderr);

  const logout = await runCli(["logout", registry.host], options);
  strictEqual(logout.code, 0, logout.stderr);
  strictEqual(await exists(store), false);
  strictEqual(await Deno.readTextFile(`${store}.erased`), registry.host);
  const anonymous = await runCli(["inspect", "--plain-http", ref], options);
  expectFailure(anonymous, "inspect", 6, /matched UnauthorizedError/);
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
  expectFailure(result, "logout", 1, /no sentinel matched/);
  ok(
    result.stderr.includes("credential helper docker-credential-absent not found"),
    result.stderr,
  );
});
