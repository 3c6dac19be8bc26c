/**
 * Login and the docker configuration against hostile input: a credential helper that prints
 * garbage, control characters or endless output; an `auths` key carrying control characters;
 * a registry whose login check answers with a token realm on a private address. Nothing of it
 * reaches the terminal raw, nothing is contacted that the peer guard refuses, and nothing is
 * written.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { type CliResult, failureLines, runCli } from "../cli/_cli.ts";
import { HELPER_OS, runCliWidened, writeHelper } from "../auth/_helper_scripts.ts";
import { expectFailure } from "../fixtures/expect.ts";

/** C0 controls but newline, DEL, C1 controls, and the bidirectional overrides and isolates. */
const UNSAFE =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

function expectClean(result: CliResult, secrets: string[] = []): void {
  for (const [name, text] of [["stdout", result.stdout], ["stderr", result.stderr]]) {
    assert(!UNSAFE.test(text), `${name} carries a control character: ${JSON.stringify(text)}`);
    for (const secret of secrets) assert(!text.includes(secret), `${name} echoes ${secret}`);
  }
}

/** Helper scripts answering `get` with hostile output. */
const HOSTILE_HELPERS: Record<string, string> = {
  // Not JSON, with a terminal title escape, a CSI, a bidi override and a planted secret.
  garbage: `cat > /dev/null
printf '\\033]0;pwned\\007\\033[2J\\342\\200\\256 pl4nted-secret \\302\\233 31m'
exit 0
`,
  // A failure whose output and diagnostics are escape sequences.
  failing: `cat > /dev/null
printf '\\033[31mpl4nted-secret\\033[0m'
printf '\\033]52;c;cGw0bnRlZA==\\007' >&2
exit 1
`,
  // Endless diagnostics, never an answer.
  chatty: "cat > /dev/null\nexec yes pl4nted-secret >&2\n",
  // An endless answer.
  endless: "cat > /dev/null\nexec yes pl4nted-secret\n",
};

registryTest(
  "hostile credential helpers: nothing they print reaches the terminal, and they are cut",
  {
    needs: ["htpasswd"],
    ignore: !HELPER_OS,
  },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const bin = `${tmp.path}/bin`;
    await Deno.mkdir(bin);
    for (const [name, body] of Object.entries(HOSTILE_HELPERS)) await writeHelper(bin, name, body);
    const dockerConfig = `${tmp.path}/docker`;
    await Deno.mkdir(dockerConfig);
    const expected: Record<string, RegExp> = {
      garbage: /answer could not be read$/,
      failing: /docker-credential-failing failed$/,
      chatty: /docker-credential-chatty wrote too much$/,
      endless: /docker-credential-endless wrote too much$/,
    };
    for (const name of Object.keys(HOSTILE_HELPERS)) {
      await Deno.writeTextFile(`${dockerConfig}/config.json`, JSON.stringify({ credsStore: name }));
      const started = performance.now();
      const result = await runCli(["inspect", "--plain-http", `${registry.host}/private/llm:v1`], {
        tmp: tmp.path,
        env: { DOCKER_CONFIG: dockerConfig, PATH: `${bin}:${Deno.env.get("PATH") ?? ""}` },
        run: [`docker-credential-${name}`],
      });
      const elapsed = performance.now() - started;
      assertStrictEquals(result.code, 1, `${name}: ${result.stderr}`);
      const [error] = failureLines(result.stderr);
      assert(expected[name].test(error), `${name}: ${error}`);
      expectClean(result, ["pl4nted", "pwned"]);
      assert(elapsed < 10_000, `${name}: ended after ${elapsed.toFixed(0)} ms`);
    }
  },
);

registryTest(
  "an auths key with control characters is used, removed by logout, and never printed",
  { needs: ["htpasswd"] },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
    await using tmp = await tempDir();
    const dockerConfig = `${tmp.path}/docker`;
    await Deno.mkdir(dockerConfig);
    const key = `https://${registry.host}/\u001b]0;pwned\u0007\u202e\u009b2J`;
    const other = { "other.example": { auth: btoa("someone:else") } };
    await Deno.writeTextFile(
      `${dockerConfig}/config.json`,
      JSON.stringify({ auths: { [key]: { auth: btoa("alice:correct horse") }, ...other } }),
    );
    const options = { tmp: tmp.path, env: { DOCKER_CONFIG: dockerConfig } };
    const ref = `${registry.host}/private/llm:v1`;
    const found = await runCli(["inspect", "--plain-http", ref], options);
    assert(/matched NotFoundError/.test(found.stderr), `authenticated: ${found.stderr}`);

    for (const json of [false, true]) {
      const logout = await runCli(["logout", ...(json ? ["--json"] : []), registry.host], options);
      assertStrictEquals(logout.code, 0, logout.stderr);
      expectClean(logout, ["pwned"]);
      if (!json) {
        assertStrictEquals(
          logout.stdout,
          `Removed the login of ${registry.host} from the docker configuration\n`,
        );
      } else {
        assertEquals(JSON.parse(logout.stdout).removedFrom, []);
      }
    }
    assertEquals(
      JSON.parse(await Deno.readTextFile(`${dockerConfig}/config.json`)),
      { auths: other },
    );
    const anonymous = await runCli(["inspect", "--plain-http", ref], options);
    assert(/matched UnauthorizedError/.test(anonymous.stderr), anonymous.stderr);
  },
);

Deno.test("login: a token realm on a private address is refused, never contacted", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  // A "token service" on another loopback address than the registry's: the peer guard's case.
  const listener = Deno.listen({ hostname: "127.0.0.2", port: 0 });
  let contacted = 0;
  const accepting = (async () => {
    for await (const conn of listener) {
      contacted++;
      conn.close();
    }
  })();
  try {
    const realms = [
      `http://127.0.0.2:${listener.addr.port}/token`,
      "http://169.254.169.254/latest/meta-data",
      `http://[::ffff:127.0.0.2]:${listener.addr.port}/token`,
    ];
    for (const realm of realms) {
      registry.clearFaults();
      registry.fault({
        method: "GET",
        path: /^\/v2\/$/,
        times: 100,
        respond: {
          status: 401,
          headers: { "www-authenticate": `Bearer realm="${realm}",service="pwned\u009b"` },
        },
      });
      const result = await runCliWidened(
        ["login", "--plain-http", "--username", "alice", "--password-stdin", registry.host],
        { tmp: tmp.path, stdin: "pl4nted-pass", env: { DOCKER_CONFIG: `${tmp.path}/docker` } },
        { net: true },
      );
      expectFailure(result, { code: 1, error: /refused by the peer guard$/ });
      expectClean(result, ["127.0.0.2", "169.254", "pwned", "pl4nted", "realm="]);
    }
    assertStrictEquals(contacted, 0, "the private address was never dialed");
    const written = await Array.fromAsync(Deno.readDir(tmp.path));
    assertEquals(written.filter((e) => e.name === "docker"), [], "nothing was written");
  } finally {
    listener.close();
    await accepting.catch(() => {});
  }
});

Deno.test({
  name: "logout: a helper whose erase fails leaves no plain-text copy, and the helper is named",
  ignore: !HELPER_OS,
}, async () => {
  await using tmp = await tempDir();
  const bin = `${tmp.path}/bin`;
  await Deno.mkdir(bin);
  await writeHelper(bin, "broken", "cat > /dev/null\necho 'store locked' >&2\nexit 1\n");
  const dockerConfig = `${tmp.path}/docker`;
  await Deno.mkdir(dockerConfig);
  const configPath = `${dockerConfig}/config.json`;
  const auth = btoa("ci:pl4in-secret");
  await Deno.writeTextFile(
    configPath,
    JSON.stringify({ credsStore: "broken", auths: { "127.0.0.1:5000": { auth } } }),
  );
  const result = await runCli(["logout", "127.0.0.1:5000"], {
    tmp: tmp.path,
    env: { DOCKER_CONFIG: dockerConfig, PATH: `${bin}:${Deno.env.get("PATH")}` },
    run: ["docker-credential-broken"],
  });
  assertStrictEquals(result.code, 1, result.stderr);
  const left = await Deno.readTextFile(configPath);
  assert(!left.includes(auth), `the plain-text credential is still there: ${left}`);
  assertStrictEquals(JSON.parse(left).credsStore, "broken");
  const [error] = failureLines(result.stderr);
  assert(
    /docker-credential-broken erase failed, so it may still hold the login/.test(error),
    error,
  );
  assert(/plain-text copy was removed/.test(error), error);
  expectClean(result, ["pl4in-secret"]);
});
