/**
 * The progress bar as a person sees it, checked without screenshots: the CLI runs under a
 * pseudo-terminal (`script`), where `--progress auto` picks the bar. The bar must redraw one
 * line in place and end at 100% on success, then the digest follows on its own line.
 */
import { ok, strictEqual } from "node:assert/strict";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { cliArgv, cliEnv, type CliOptions, PROJECT_ROOT, runCli } from "./_cli.ts";

const MiB = 1024 * 1024;
const ESC = String.fromCharCode(0x1b);
/** `deno run`'s own status-line clearing, emitted on a terminal before the program runs. */
// `deno run` clears its own module-loading status line (ESC[0G ESC[2K ESC[J) on a terminal before
// the program starts and again when a worker's module graph loads (the hashing threads start on
// first use, mid-transfer). A compiled binary loads nothing at run time and prints none of it.
const DENO_STATUS_CLEAR = new RegExp(`(?:${ESC}\\[0G${ESC}\\[2K${ESC}\\[J)+`, "g");
/** One or more in-place redraws: carriage return, a line without breaks, erase to its end. */
const REDRAWS = `(?:\\r[^\\r\\n]*${ESC}\\[K)+`;

function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** Runs the CLI on a pseudo-terminal and returns everything the terminal received. */
async function runOnPty(
  args: string[],
  options: CliOptions,
  columns = 100,
): Promise<{ code: number; tty: string }> {
  // Size the terminal like a person's: 100 columns unless the test asks for another width.
  const command = `stty cols ${columns} rows 24; exec ${
    cliArgv(args, options).map(shellQuote).join(" ")
  }`;
  const output = await new Deno.Command("script", {
    // -q quiet, -e child's exit code, -c command; the typescript file is discarded.
    args: ["-qec", command, "/dev/null"],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: { ...cliEnv(options), TERM: "xterm" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  // The terminal turns every "\n" into "\r\n"; undo that to see the program's own bytes.
  const tty = new TextDecoder().decode(output.stdout).replaceAll("\r\n", "\n")
    .replace(DENO_STATUS_CLEAR, "");
  return { code: output.code, tty };
}

function hasScript(): boolean {
  try {
    return new Deno.Command("script", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

registryTest("bar on a terminal redraws in place and ends at 100%", {
  ignore: !hasScript(),
}, async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  const bytes = new Uint8Array(4 * MiB);
  for (let i = 0; i < bytes.byteLength; i += 65536) {
    crypto.getRandomValues(bytes.subarray(i, i + 65536));
  }
  await Deno.writeFile(source, bytes);
  const ref = `${registry.host}/models/tty:v1`;

  for (const command of ["push", "pull"] as const) {
    const args = command === "push"
      ? ["push", "--plain-http", "--part-size", "1MiB", ref, source]
      : ["pull", "--plain-http", ref, `${tmp.path}/out.bin`];
    const { code, tty } = await runOnPty(args, { tmp: tmp.path });
    strictEqual(code, 0, JSON.stringify(tty));
    // Only redraws (carriage return … erase to end of line) until one final newline.
    const expected = command === "push"
      ? new RegExp(`^${REDRAWS}\\nsha256:[0-9a-f]{64}\\n$`)
      : new RegExp(`^${REDRAWS}\\n$`);
    ok(expected.test(tty), JSON.stringify(tty));
    const draws = tty.split("\n")[0].split("\r").slice(1).map((d) => d.replace("\x1b[K", ""));
    const last = draws.at(-1)!;
    ok(last.startsWith("done"), last);
    ok(/\b100% \[=+\] 4\.00 MiB \/ 4\.00 MiB\b/.test(last), last);
    for (const draw of draws) ok(draw.length < 100, `wider than the terminal: ${draw}`);
    if (command === "pull") {
      ok(draws.some((d) => d.startsWith("downloading")), "the phase is shown while it runs");
    }
  }
});

registryTest("a narrow terminal keeps the bar and the time left; a resume says what was present", {
  ignore: !hasScript(),
}, async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  const bytes = new Uint8Array(4 * MiB);
  for (let i = 0; i < bytes.byteLength; i += 65536) {
    crypto.getRandomValues(bytes.subarray(i, i + 65536));
  }
  await Deno.writeFile(source, bytes);
  const ref = `${registry.host}/models/narrow:v1`;
  const push = await runCli(["push", "--plain-http", "--part-size", "512KiB", ref, source], {
    tmp: tmp.path,
  });
  strictEqual(push.code, 0, push.stderr);
  // A complete partial with its last part torn: 7 of 8 parts are already on disk.
  const dest = `${tmp.path}/out.bin`;
  const torn = bytes.slice();
  torn.fill(0, 4 * MiB - 1000);
  await Deno.writeFile(`${dest}.parted-partial`, torn);
  const { code, tty } = await runOnPty(["pull", "--plain-http", ref, dest], { tmp: tmp.path }, 50);
  strictEqual(code, 0, JSON.stringify(tty));
  ok(new RegExp(`^${REDRAWS}\\n7 of 8 parts already present\\n$`).test(tty), JSON.stringify(tty));
  const draws = tty.split("\n")[0].split("\r").slice(1).map((d) => d.replace("\x1b[K", ""));
  for (const draw of draws) {
    ok(draw.length < 50, `wider than the terminal: ${draw}`);
    ok(/\d+% \[[=> ]{10,}\] /.test(draw), `the bar is shown: ${draw}`);
    ok(/ (ETA \S+|in \S+)$/.test(draw), `the time is shown whole: ${draw}`);
  }
  ok(draws.at(-1)!.startsWith("done"), draws.at(-1));
  strictEqual((await Deno.readFile(dest)).every((v, i) => v === bytes[i]), true);
});

registryTest("auto progress stays silent when stderr is not a terminal", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/small.bin`;
  await Deno.writeFile(source, new Uint8Array(1000));
  const result = await runCli(["push", "--plain-http", `${registry.host}/a/b:v1`, source], {
    tmp: tmp.path,
  });
  strictEqual(result.code, 0, result.stderr);
  strictEqual(result.stderr, "");
  // Forced, the bar draws even into a pipe.
  const forced = await runCli(
    ["push", "--plain-http", "--progress", "bar", `${registry.host}/a/b:v2`, source],
    { tmp: tmp.path },
  );
  strictEqual(forced.code, 0, forced.stderr);
  ok(forced.stderr.includes("\r") && forced.stderr.includes("100%"), forced.stderr);
});
