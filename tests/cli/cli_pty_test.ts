/**
 * The progress bar as a person sees it, checked without screenshots: the CLI runs under a
 * pseudo-terminal (`script`), where `--progress auto` picks the bar. The bar must redraw one
 * line in place, keep its fields where they are from frame to frame, and end at 100% on
 * success, then the digest follows on its own line. A Ctrl-C typed on the terminal (the tty
 * echoes `^C` and signals the CLI) must leave a clean bar line and one sentence saying what
 * was kept and how to resume.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  cliArgv,
  cliEnv,
  type CliOptions,
  PROJECT_ROOT,
  runCli,
  stallFromThirdPart,
} from "./_cli.ts";
import { randomBytes } from "../fixtures/random.ts";

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

/** `script` running the CLI on a pseudo-terminal of `columns` columns. */
function ptyCommand(args: string[], options: CliOptions, columns: number, stdin: "null" | "piped") {
  // Size the terminal like a person's: 100 columns unless the test asks for another width.
  const command = `stty cols ${columns} rows 24; exec ${
    cliArgv(args, options).map(shellQuote).join(" ")
  }`;
  return new Deno.Command("script", {
    // -q quiet, -e child's exit code, -c command; the typescript file is discarded.
    args: ["-qec", command, "/dev/null"],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: { ...cliEnv(options), TERM: "xterm" },
    stdin,
    stdout: "piped",
    stderr: "piped",
  });
}

/** What the terminal received, as the program wrote it. */
function programBytes(text: string): string {
  // The terminal turns every "\n" into "\r\n"; undo that to see the program's own bytes.
  return text.replaceAll("\r\n", "\n").replace(DENO_STATUS_CLEAR, "");
}

/** Runs the CLI on a pseudo-terminal and returns everything the terminal received. */
async function runOnPty(
  args: string[],
  options: CliOptions,
  columns = 100,
): Promise<{ code: number; tty: string }> {
  const output = await ptyCommand(args, options, columns, "null").output();
  return { code: output.code, tty: programBytes(new TextDecoder().decode(output.stdout)) };
}

/**
 * The lines a person sees once `tty` was written to a terminal: a carriage return goes back to
 * the start of the line, erase-to-end-of-line cuts it there, other text overwrites.
 */
function screen(tty: string): string[] {
  const lines: string[] = [];
  let line = "";
  let column = 0;
  for (let i = 0; i < tty.length; i++) {
    const char = tty[i];
    if (char === "\n") {
      lines.push(line);
      line = "";
      column = 0;
    } else if (char === "\r") {
      column = 0;
    } else if (tty.startsWith(`${ESC}[K`, i)) {
      line = line.slice(0, column);
      i += 2;
    } else {
      line = line.slice(0, column) + char + line.slice(column + 1);
      column++;
    }
  }
  if (line !== "") lines.push(line);
  return lines;
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
  const bytes = randomBytes(4 * MiB);
  await Deno.writeFile(source, bytes);
  const ref = `${registry.host}/models/tty:v1`;

  for (const command of ["push", "pull"] as const) {
    const args = command === "push"
      ? ["push", "--plain-http", "--part-size", "1MiB", ref, source]
      : ["pull", "--plain-http", ref, `${tmp.path}/out.bin`];
    const { code, tty } = await runOnPty(args, { tmp: tmp.path });
    assertStrictEquals(code, 0, JSON.stringify(tty));
    // Only redraws (carriage return … erase to end of line) until one final newline.
    const expected = command === "push"
      ? new RegExp(`^${REDRAWS}\\nsha256:[0-9a-f]{64}\\n$`)
      : new RegExp(`^${REDRAWS}\\n${tmp.path}/out\\.bin\\n$`);
    assert(expected.test(tty), JSON.stringify(tty));
    const draws = tty.split("\n")[0].split("\r").slice(1).map((d) => d.replace("\x1b[K", ""));
    const last = draws.at(-1)!;
    assert(last.startsWith("done"), last);
    assert(/\b100% \[=+\] 4\.00\/4\.00 MiB {2}4\/4 parts\b/.test(last), last);
    for (const draw of draws) assert(draw.length < 100, `wider than the terminal: ${draw}`);
    // Nothing shifts from frame to frame: one width, the bar and the sizes in one place.
    assertStrictEquals(new Set(draws.map((d) => d.length)).size, 1, draws.join("\n"));
    const at = (d: string) => [d.indexOf("%"), d.indexOf("["), d.indexOf("]"), d.indexOf("/")];
    for (const draw of draws) assertEquals(at(draw), at(last), `${draw}\n${last}`);
    if (command === "pull") {
      assert(draws.some((d) => d.startsWith("downloading")), "the phase is shown while it runs");
    }
  }
});

registryTest("a narrow terminal keeps the bar and the time left; a resume says what was present", {
  ignore: !hasScript(),
}, async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  const bytes = randomBytes(4 * MiB);
  await Deno.writeFile(source, bytes);
  const ref = `${registry.host}/models/narrow:v1`;
  const push = await runCli(["push", "--plain-http", "--part-size", "512KiB", ref, source], {
    tmp: tmp.path,
  });
  assertStrictEquals(push.code, 0, push.stderr);
  // A complete partial with its last part torn: 7 of 8 parts are already on disk.
  const dest = `${tmp.path}/out.bin`;
  const torn = bytes.slice();
  torn.fill(0, 4 * MiB - 1000);
  await Deno.writeFile(`${dest}.parted-partial`, torn);
  const { code, tty } = await runOnPty(["pull", "--plain-http", ref, dest], { tmp: tmp.path }, 50);
  assertStrictEquals(code, 0, JSON.stringify(tty));
  // Once the partial file is checked, what it held is said above the bar; the path last.
  // (7 parts and all but the last 1000 bytes of the eighth, written before they were torn.)
  const resuming = "resuming: 4\\.00 MiB of 4\\.00 MiB on disk";
  assert(
    new RegExp(
      `^${REDRAWS}\\r${ESC}\\[K${resuming}\\n${REDRAWS}\\n7 of 8 parts already present\\n` +
        `${dest}\\n$`,
    ).test(tty),
    JSON.stringify(tty),
  );
  // Every redraw of the bar, on either side of the resuming line.
  const draws = tty.split("\n").slice(0, 2).flatMap((line) => line.split("\r").slice(1))
    .map((d) => d.replace("\x1b[K", "")).filter((d) => d !== "" && !d.startsWith("resuming:"));
  for (const draw of draws) {
    assert(draw.length < 50, `wider than the terminal: ${draw}`);
    assert(/\d+% \[[=> ]{10,}\] /.test(draw), `the bar is shown: ${draw}`);
    // While bytes move or are checked, the time is shown whole (committing moves none).
    if (!draw.startsWith("committing")) {
      assert(/ (ETA \S+|in \S+)$/.test(draw.trimEnd()), `the time is shown whole: ${draw}`);
    }
  }
  // The resume pass hashes the partial file: that is a check, not a download.
  assert(draws.some((d) => d.startsWith("checking")), draws.join("\n"));
  assert(draws.at(-1)!.startsWith("done"), draws.at(-1));
  assertStrictEquals((await Deno.readFile(dest)).every((v, i) => v === bytes[i]), true);
});

registryTest("a failed push on a terminal: its bar's line is erased, the report starts there", {
  ignore: !hasScript(),
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await Deno.writeFile(source, new Uint8Array(4 * MiB).fill(7));
  const { code, tty } = await runOnPty(
    ["push", "--plain-http", `${registry.host}/team/w:v1`, source],
    { tmp: tmp.path },
  );
  assertStrictEquals(code, 6, JSON.stringify(tty));
  // The bar was drawn (checking the parts) before the registry refused them.
  assert(tty.startsWith("\r"), JSON.stringify(tty));
  const lines = screen(tty);
  assertStrictEquals(
    lines[0],
    `ocipart push: ${registry.host} needs credentials, and none it accepts were sent ` +
      "(401 Unauthorized)",
    lines.join("\n"),
  );
  assert(lines.every((line) => !/^(checking|uploading)/.test(line)), lines.join("\n"));
  assertStrictEquals(
    lines.at(-1),
    "ocipart push: matched UnauthorizedError (ERR_UNAUTHORIZED) (exit 6)",
  );
});

registryTest(
  "a resume whose downloads start during the check: the resuming line before any downloading frame",
  {
    ignore: !hasScript(),
  },
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    // Many small parts: the check hashes 512 ranges, one at a time (--workers 1), while the
    // parts it finds torn are downloaded as soon as they are known.
    const part = 32 * 1024;
    const parts = 512;
    const source = `${tmp.path}/weights.bin`;
    const bytes = randomBytes(part * parts);
    await Deno.writeFile(source, bytes);
    const ref = `${registry.host}/models/overlap:v1`;
    const push = await runCli(["push", "--plain-http", "--part-size", "32KiB", ref, source], {
      tmp: tmp.path,
    });
    assertStrictEquals(push.code, 0, push.stderr);
    // An interrupted pull's partial: the first 32 parts never written, the rest in place.
    const dest = `${tmp.path}/out.bin`;
    const partial = bytes.slice();
    partial.fill(0, 0, 32 * part);
    await Deno.writeFile(`${dest}.parted-partial`, partial);
    const { code, tty } = await runOnPty(
      ["pull", "--plain-http", "--workers", "1", ref, dest],
      { tmp: tmp.path },
      120,
    );
    assertStrictEquals(code, 0, JSON.stringify(tty));
    const frames = tty.split(/[\r\n]/).map((d) => d.replace("\x1b[K", "")).filter((d) => d !== "");
    const resuming = frames.indexOf("resuming: 15.0 MiB of 16.0 MiB on disk");
    assert(resuming > 0, frames.join("\n"));
    // Before it, only the check: no frame says downloading, none shows a download's speed.
    for (const frame of frames.slice(0, resuming)) {
      assert(frame.startsWith("checking "), `before the resuming line: ${frame}`);
    }
    assert(frames.slice(resuming + 1).some((f) => f.startsWith("downloading ")), frames.join("\n"));
    assertStrictEquals((await Deno.readFile(dest)).every((v, i) => v === bytes[i]), true);
  },
);

registryTest(
  "without a terminal: auto keeps a short transfer out of the log, plain writes lines a log can keep",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/small.bin`;
    await Deno.writeFile(source, new Uint8Array(1000));
    const quiet = await runCli(["push", "--plain-http", `${registry.host}/a/b:v0`, source], {
      tmp: tmp.path,
    });
    assertStrictEquals(quiet.code, 0, quiet.stderr);
    assertStrictEquals(
      quiet.stderr,
      "",
      "auto: a transfer shorter than 30 s adds nothing to a log",
    );
    const result = await runCli(
      ["push", "--plain-http", "--progress", "plain", `${registry.host}/a/b:v1`, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(result.code, 0, result.stderr);
    const all = result.stderr.trimEnd().split("\n");
    // Per-part lines and the closing count aside, every line is a whole state.
    assertStrictEquals(all.at(-1), "1 of 1 part already present", result.stderr);
    const lines = all.slice(0, -1).filter((l) => !l.startsWith("part "));
    // deno-lint-ignore no-control-regex
    assert(!/[\x00-\x09\x0b-\x1f]/.test(result.stderr), "no control characters in a log");
    // A line per phase and the final state; no per-part lines.
    assert(lines.length >= 2 && lines.every((l) => /^[a-z]+ \d+% /.test(l)), result.stderr);
    assert(
      /^done 100% 1000\/1000 B 1\/1 parts (\S+ \S+\/s )?in \d+s$/.test(lines.at(-1)!),
      lines.at(-1),
    );
    // Forced, the bar draws even into a pipe.
    const forced = await runCli(
      ["push", "--plain-http", "--progress", "bar", `${registry.host}/a/b:v2`, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(forced.code, 0, forced.stderr);
    assert(forced.stderr.includes("\r") && forced.stderr.includes("100%"), forced.stderr);
  },
);

/**
 * Runs the CLI on a pseudo-terminal and types Ctrl-C once `ready` is true of what the terminal
 * shows; returns the exit code and everything the terminal received.
 */
async function interruptOnPty(
  args: string[],
  options: CliOptions,
  ready: (tty: string) => boolean,
): Promise<{ code: number; tty: string }> {
  const child = ptyCommand(args, options, 100, "piped").spawn();
  const stdin = child.stdin.getWriter();
  const stderr = new Response(child.stderr).text();
  let received = "";
  let typed = false;
  // ETX: the terminal echoes it as ^C and sends SIGINT to the CLI.
  const ctrlC = () => stdin.write(new Uint8Array([3]));
  // A display that never gets ready must not hold the test: type it anyway, and fail below.
  const limit = setTimeout(ctrlC, 20_000);
  for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
    received += text;
    if (!typed && ready(programBytes(received))) {
      typed = true;
      await ctrlC();
    }
  }
  clearTimeout(limit);
  const status = await child.status;
  await stdin.close().catch(() => {});
  await stderr;
  assert(typed, `never ready:\n${programBytes(received)}`);
  return { code: status.code, tty: programBytes(received) };
}

registryTest("Ctrl-C on a terminal: a clean bar line, then what was kept and how to resume", {
  ignore: !hasScript(),
}, async () => {
  await using registry = await startRegistry();
  const proxy = await startFaultProxy({ target: registry.url });
  try {
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    const bytes = randomBytes(1 * MiB);
    await Deno.writeFile(source, bytes);
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "256KiB", `${registry.host}/models/ctrlc:v1`, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    // Parts 0 and 1 arrive whole; part 2 sends a few bytes and then nothing.
    stallFromThirdPart(proxy);
    const dest = `${tmp.path}/out.bin`;
    const { code, tty } = await interruptOnPty(
      ["pull", "--plain-http", "--workers", "1", `${proxy.host}/models/ctrlc:v1`, dest],
      { tmp: tmp.path },
      (shown) => /2\/4 parts, 1 active/.test(shown),
    );
    assertStrictEquals(code, 130, JSON.stringify(tty));
    assert(tty.includes("^C"), `the terminal echoed the keystroke: ${JSON.stringify(tty)}`);
    const lines = screen(tty);
    // The bar's line, redrawn over the echo and ended; nothing glued to it.
    assert(
      /^downloading {2}5\d% \[=+>\s*\] 0\.5\d\/1\.00 MiB {2}2\/4 parts, 1 active {2}/.test(
        lines[0],
      ),
      lines.join("\n"),
    );
    assert(!lines[0].includes("^C") && !lines[0].includes("stopping"), lines[0]);
    assertStrictEquals(lines[1], "stopping… (Ctrl-C again to quit now)", lines.join("\n"));
    // Two whole parts and the 1000 bytes of the third written before the stall are kept (the
    // last snapshot before the keystroke may not have counted those yet); then the signal,
    // and nothing else: no line repeats that the pull was stopped.
    assert(
      /^ocipart pull: 51[23] KiB of 1\.00 MiB kept \(2 of 4 parts complete\) in .*out\.bin\.parted-partial; run the same command to resume$/
        .test(lines[2]),
      lines.join("\n"),
    );
    assertStrictEquals(
      lines[3],
      "ocipart pull: interrupted by SIGINT (exit 130)",
      lines.join("\n"),
    );
    assertStrictEquals(lines.length, 4, lines.join("\n"));
    assert(lines.every((l) => !l.includes("^C")), lines.join("\n"));
    await Deno.stat(`${dest}.parted-partial`);

    // The same command resumes: the parts on disk are checked, the rest downloaded.
    proxy.clearFaults();
    const rerun = await runOnPty(
      ["pull", "--plain-http", "--workers", "1", `${proxy.host}/models/ctrlc:v1`, dest],
      { tmp: tmp.path },
    );
    assertStrictEquals(rerun.code, 0, JSON.stringify(rerun.tty));
    const after = screen(rerun.tty);
    // What the check found first (the two parts and the third's written beginning), the bar's
    // last state, the parts that needed no transfer, and the path written.
    assertEquals(
      [after[0], ...after.slice(2)],
      ["resuming: 513 KiB of 1.00 MiB on disk", "2 of 4 parts already present", dest],
      after.join("\n"),
    );
    assert(/^done {8}100% \[=+\] 1\.00\/1\.00 MiB {2}4\/4 parts /.test(after[1]), after[1]);
    assertStrictEquals((await Deno.readFile(dest)).every((v, i) => v === bytes[i]), true);
  } finally {
    await proxy.close();
  }
});
