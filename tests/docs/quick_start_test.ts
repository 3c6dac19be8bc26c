/**
 * The README's quick start, run as a newcomer runs it: every shell block of its section, as
 * written, one after the other in one bash (`set -euo pipefail`), from the clone's directory, in a
 * fresh HOME (so `deno install -g` writes there), against the real `docker-registry`. Each text
 * block that follows a shell block is the standard output that block must print, line for line
 * (`…` in a shown line stands for any text).
 *
 * The blocks start the registry on a fixed loopback port: the test checks first that the port is
 * free, and kills whatever the blocks started (bash runs in a process group of its own) even when
 * a block fails. Then the installed command pushes again on a pseudo-terminal (`script`), as a
 * person types it: Deno must not stop it to ask for a permission.
 */
import { assert, assertEquals, fail } from "../fixtures/assert.ts";
import { sha256File } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { denoDirEnv, PROJECT_ROOT } from "../cli/_cli.ts";

const SECTION = "## Quick start";
const RUN_LIMIT_MS = 240_000;
const STEP_MARK = "@@ocipart-quick-start-step@@";
const TERMINAL_LIMIT_MS = 60_000;

/** One shell block of the section, and the output shown after it (if any). */
interface Step {
  readonly script: string;
  readonly shown: string[] | undefined;
}

/** The fenced blocks of the README's quick-start section, paired into steps. */
function quickStartSteps(readme: string): Step[] {
  const start = readme.indexOf(`\n${SECTION}`);
  if (start < 0) fail(`README.md has no "${SECTION}" section`);
  const rest = readme.slice(start + 1 + SECTION.length);
  const end = rest.search(/\n## /);
  const section = end < 0 ? rest : rest.slice(0, end);
  const steps: { script: string; shown: string[] | undefined }[] = [];
  for (const match of section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    const [, lang, body] = match;
    if (lang === "sh") steps.push({ script: body, shown: undefined });
    else if (lang === "text") {
      const last = steps.at(-1);
      if (last === undefined || last.shown !== undefined) {
        fail("a text block of the quick start does not follow a shell block");
      }
      last.shown = body.replace(/\n$/, "").split("\n");
    }
  }
  if (steps.length === 0) fail("the quick start has no sh block");
  return steps;
}

/** The loopback port the quick start's registry listens on (`addr:` in its config). */
function registryPort(steps: Step[]): number {
  const addr = steps.map((s) => s.script).join("\n").match(/^\s*addr: 127\.0\.0\.1:(\d+)$/m);
  if (addr === null) fail("the quick start's registry config has no `addr: 127.0.0.1:<port>`");
  return Number(addr[1]);
}

function portIsFree(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch {
    return false;
  }
}

async function waitForPortFree(port: number): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if (portIsFree(port)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

/** A shown line as a pattern: literal text, `…` standing for any text. */
function linePattern(shown: string): RegExp {
  const parts = shown.split("…").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join(".*")}$`);
}

function assertShown(step: number, printed: string, shown: string[]): void {
  const lines = printed.replace(/\n+$/, "").split("\n");
  const context = `step ${step + 1} printed:\n${printed}\nthe README shows:\n${shown.join("\n")}`;
  assertEquals(lines.length, shown.length, `line count differs; ${context}`);
  shown.forEach((line, i) => {
    assert(linePattern(line).test(lines[i]), `line ${i + 1} differs; ${context}`);
  });
}

/** Runs the steps in one bash; returns its exit code and outputs, stdout split by step. */
async function runSteps(steps: Step[], home: string) {
  const script = ["set -euo pipefail"];
  for (const step of steps) script.push(step.script, `printf '\\n%s\\n' '${STEP_MARK}'`);
  const child = new Deno.Command("bash", {
    args: ["-c", script.join("\n")],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: shellEnv(home),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true, // its own process group, so everything it started can be stopped
  }).spawn();
  const stopAll = () => {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch {
      // the group is gone: everything already ended
    }
  };
  const timer = setTimeout(stopAll, RUN_LIMIT_MS);
  try {
    const output = await child.output();
    const decoder = new TextDecoder();
    const stdout = decoder.decode(output.stdout);
    return {
      code: output.code,
      timedOut: output.signal === "SIGKILL",
      printed: stdout.split(`\n${STEP_MARK}\n`),
      stdout,
      stderr: decoder.decode(output.stderr),
    };
  } finally {
    clearTimeout(timer);
    stopAll(); // a registry a failed block left running
  }
}

/** The environment of a newcomer's shell: a HOME of its own, the parent's PATH and Deno cache. */
function shellEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
    // The clone's one npm dependency comes from this process's Deno cache: no network.
    ...denoDirEnv(),
  };
}

/** Runs `command` on a pseudo-terminal; a command still waiting after the limit is killed. */
async function runOnTerminal(command: string, home: string, cwd: string) {
  const child = new Deno.Command("script", {
    args: ["-qec", `stty cols 100 rows 24; exec ${command}`, "/dev/null"],
    cwd,
    clearEnv: true,
    // Step 1's `export PATH=…`, as a person's profile keeps it.
    env: { ...shellEnv(home), PATH: `${home}/.deno/bin:${shellEnv(home).PATH}`, TERM: "xterm" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL"); // the pseudo-terminal closes: its program is hung up
  }, TERMINAL_LIMIT_MS);
  try {
    const output = await child.output();
    return { code: output.code, timedOut, tty: new TextDecoder().decode(output.stdout) };
  } finally {
    clearTimeout(timer);
  }
}

registryTest(
  "README quick start: its shell blocks run as written, install to pull, printing what it shows",
  { needs: ["curl"] },
  async () => {
    const steps = quickStartSteps(await Deno.readTextFile(`${PROJECT_ROOT}README.md`));
    const port = registryPort(steps);
    if (!portIsFree(port)) {
      fail(
        `port ${port} on 127.0.0.1 is in use: the README's quick start starts its registry there`,
      );
    }
    await using home = await tempDir("ocipart-quick-start-");
    const run = await runSteps(steps, home.path);
    const report = `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
    assert(!run.timedOut, `the quick start did not end within ${RUN_LIMIT_MS / 1000} s; ${report}`);
    assertEquals(run.code, 0, `the quick start failed; ${report}`);
    steps.forEach((step, i) => {
      if (step.shown !== undefined) assertShown(i, run.printed[i] ?? "", step.shown);
    });
    // No failure, warning or hint line from ocipart anywhere.
    assert(!/^ocipart /m.test(run.stderr), `ocipart wrote to standard error; ${report}`);

    // Installed with permission flags, never with all of them.
    const shim = await Deno.readTextFile(`${home.path}/.deno/bin/ocipart`);
    assert(shim.includes("--allow-net") && shim.includes("--allow-sys=statfs"), shim);
    assert(!/--allow-all|\s-A\s/.test(shim), `installed with every permission:\n${shim}`);
    // ...and with the young generation kept small (the memory figures are measured so).
    assert(shim.includes("--v8-flags=--max-semi-space-size=1"), shim);

    // The pulled file is the pushed one, byte for byte.
    const demo = `${home.path}/ocipart-demo`;
    assertEquals(
      await sha256File(`${demo}/downloads/numbers.txt`),
      await sha256File(`${demo}/numbers.txt`),
    );
    const partials = [...Deno.readDirSync(`${demo}/downloads`)].map((e) => e.name);
    assertEquals(partials, ["numbers.txt"], "the pull left something beside its file");

    // The last block stopped the registry it started.
    assert(await waitForPortFree(port), `the registry still listens on ${port} after the blocks`);

    // On a terminal, as a person runs it: a push large enough for hashing threads, no prompt.
    await using registry = await startRegistry();
    const pushed = run.printed[steps.findIndex((s) => /^ocipart push /m.test(s.script))];
    const terminal = await runOnTerminal(
      `ocipart push --plain-http --part-size 16MiB ${registry.host}/demo/numbers:v1 numbers.txt`,
      home.path,
      demo,
    );
    const seen = `the terminal showed:\n${terminal.tty}`;
    assert(!/Deno requests/.test(terminal.tty), `Deno asked for a permission; ${seen}`);
    assert(!terminal.timedOut, `the push on a terminal did not end; ${seen}`);
    assertEquals(terminal.code, 0, seen);
    assert(/done +100%/.test(terminal.tty), `no finished bar; ${seen}`);
    assert(terminal.tty.includes(pushed?.trim() ?? "?"), `not the digest of step 3; ${seen}`);
  },
);
