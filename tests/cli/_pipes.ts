/**
 * The pipe tests' setup and the reader's side of a pipe, as they drive it: a reader that goes
 * away after the first bytes (`| head`), and one that stops reading while the command runs (a
 * full pipe).
 *
 * @module
 */
import { assertStrictEquals } from "../fixtures/assert.ts";
import { type CliOptions, runCli, spawnCli } from "./_cli.ts";

/** `bytes` written to `tmp`/data.bin and pushed over plain HTTP to `ref` in parts of `partSize`. */
export async function pushed(bytes: Uint8Array, ref: string, partSize: string, tmp: string) {
  await Deno.writeFile(`${tmp}/data.bin`, bytes);
  const push = await runCli(
    ["push", "--plain-http", "--part-size", partSize, ref, `${tmp}/data.bin`],
    { tmp },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  return ref;
}

/**
 * Runs the CLI with `args` (a command that writes to standard output), reads 100,000 bytes of
 * its output and closes the pipe: its exit status, standard error, the bytes read, and how long
 * it took to exit after the pipe closed.
 */
export async function untilReaderLeaves(args: string[], options: CliOptions) {
  const child = spawnCli(args, options);
  await child.stdin.close();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.getReader();
  let got = 0;
  while (got < 100_000) {
    const { value, done } = await reader.read();
    if (done) break;
    got += value.byteLength;
  }
  await reader.cancel();
  const closed = performance.now();
  const status = await child.status;
  return { code: status.code, stderr: await stderr, got, elapsed: performance.now() - closed };
}

/**
 * Runs the CLI with `args`, reads its first bytes and then stops reading, so that the pipe fills;
 * after `stalled` (what the test checks meanwhile) sends `signal`: its exit status, standard
 * error, and how long it took to exit after the signal (killed after 10 s).
 */
export async function stopWhileStalled(
  args: string[],
  options: CliOptions,
  signal: "SIGINT" | "SIGTERM",
  stalled: () => Promise<void>,
) {
  const child = spawnCli(args, options);
  await child.stdin.close();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.getReader();
  await reader.read();
  await stalled();
  child.kill(signal);
  const stopped = performance.now();
  const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const status = await child.status;
  const elapsed = performance.now() - stopped;
  clearTimeout(kill);
  await reader.cancel();
  return { code: status.code, stderr: await stderr, elapsed };
}
