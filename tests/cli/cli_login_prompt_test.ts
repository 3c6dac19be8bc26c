/**
 * `ocipart login` on a terminal without `--password-stdin`, as a person types it: the CLI runs
 * under a pseudo-terminal (`script`), asks for the user name (echoed, as typed) and the password,
 * and nothing of the password reaches the screen. Each answer is typed once its prompt shows.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { cliArgv, cliEnv, type CliOptions, PROJECT_ROOT, runCli } from "./_cli.ts";

const PASSWORD = "correct horse";

function hasScript(): boolean {
  try {
    return new Deno.Command("script", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * Runs the CLI on a pseudo-terminal; each time the screen ends with a prompt of `answers`, types
 * its answer. Returns the exit code and everything the terminal showed.
 */
async function onTerminal(
  args: string[],
  options: CliOptions,
  answers: [prompt: string, typed: string][],
): Promise<{ code: number; screen: string }> {
  const command = `stty cols 100 rows 24; exec ${cliArgv(args, options).map(shellQuote).join(" ")}`;
  const child = new Deno.Command("script", {
    args: ["-qec", command, "/dev/null"],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: { ...cliEnv(options), TERM: "xterm" },
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const keyboard = child.stdin.getWriter();
  const pending = [...answers];
  let screen = "";
  for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
    screen += text;
    if (pending.length > 0 && screen.endsWith(pending[0][0])) {
      await keyboard.write(new TextEncoder().encode(pending.shift()![1]));
    }
  }
  const status = await child.status;
  await keyboard.close().catch(() => {});
  assertStrictEquals(pending.length, 0, `a prompt never showed:\n${screen}`);
  return { code: status.code, screen: screen.replaceAll("\r\n", "\n") };
}

registryTest("login on a terminal asks for the user and the password; the password is not echoed", {
  needs: ["htpasswd"],
  ignore: !hasScript(),
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: PASSWORD } });
  await using tmp = await tempDir();
  const { code, screen } = await onTerminal(
    ["login", "--plain-http", registry.host],
    { tmp: tmp.path },
    [["Username: ", "alice\r"], ["Password: ", `${PASSWORD}\r`]],
  );
  assertStrictEquals(code, 0, screen);
  assert(screen.includes("Username: alice\n"), screen); // the terminal echoes the user name
  assert(screen.includes("Password: \n"), screen);
  assert(!screen.includes("correct"), `the password reached the screen:\n${screen}`);
  assert(screen.includes("Login succeeded"), screen);
  const config = JSON.parse(await Deno.readTextFile(`${tmp.path}/.docker/config.json`));
  assertEquals(config.auths[registry.host], { auth: btoa(`alice:${PASSWORD}`) });
});

registryTest(
  "login on a terminal with --username asks only for the password; Ctrl-C saves nothing",
  {
    ignore: !hasScript(),
  },
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const { code, screen } = await onTerminal(
      ["login", "--plain-http", "--username", "alice", registry.host],
      { tmp: tmp.path },
      [["Password: ", "typed so far\x03"]],
    );
    assertStrictEquals(code, 130, screen);
    assert(!screen.includes("Username:"), screen);
    assert(!screen.includes("typed so far"), screen);
    assert(screen.includes("ocipart login: interrupted at the prompt (exit 130)"), screen);
    await Deno.stat(`${tmp.path}/.docker/config.json`).then(
      () => assert(false, "nothing may be saved"),
      () => {},
    );
  },
);

registryTest("login without --password-stdin and without a terminal is a usage error", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const piped = await runCli(["login", "--plain-http", "-u", "alice", registry.host], {
    tmp: tmp.path,
    stdin: `${PASSWORD}\n`,
  });
  assertStrictEquals(piped.code, 2, piped.stderr);
  assertStrictEquals(
    piped.stderr.split("\n")[0],
    "ocipart: standard input is not a terminal: give --username with --password-stdin",
  );
});
