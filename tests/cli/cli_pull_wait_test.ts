/**
 * `pull --wait`: a second pull of a destination another pull holds waits for it, then resumes
 * what the holder left or returns the holder's finished file; without `--wait` it is refused at
 * once, and `--wait=DURATION` gives up after that long. Each step waits for what the other side
 * said (a progress line, the waiting notice), never for a time.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { completed, lines, runCli, spawnCli, stallFromThirdPart } from "./_cli.ts";

const WAITING = "ocipart pull: waiting for another pull of the destination to finish…";

/** Reads `child`'s standard error until a line passes `until`; the rest is read on. */
async function stderrUntil(child: Deno.ChildProcess, until: (line: string) => boolean) {
  const reader = lines(child.stderr);
  const seen: string[] = [];
  for await (const line of reader) {
    seen.push(line);
    if (until(line)) break;
  }
  const rest = (async () => {
    for await (const line of reader) seen.push(line);
    return seen.join("\n");
  })();
  return { seen, rest };
}

/** A file of four 1 KiB parts pushed to `registry`; its path and digest. */
async function pushed(host: string, dir: string, name: string) {
  const source = `${dir}/${name}.bin`;
  const digest = await writePatternFile(source, 4096, 6);
  const push = await runCli([
    "push",
    "--plain-http",
    "--part-size",
    "1KiB",
    `${host}/w/${name}:v1`,
    source,
  ], {
    tmp: dir,
  });
  assertStrictEquals(push.code, 0, push.stderr);
  return { source, digest };
}

registryTest("--wait: once the holder stops, the waiting pull resumes what it left", async () => {
  await using registry = await startRegistry();
  const proxy = await startFaultProxy({ target: registry.url });
  try {
    await using tmp = await tempDir();
    const { digest } = await pushed(registry.host, tmp.path, "a");
    const dest = `${tmp.path}/out.bin`;
    stallFromThirdPart(proxy);
    const holder = spawnCli(
      [
        "pull",
        "--plain-http",
        "--workers",
        "1",
        "--progress",
        "json",
        `${proxy.host}/w/a:v1`,
        dest,
      ],
      { tmp: tmp.path },
    );
    await holder.stdin.close();
    const held = await stderrUntil(
      holder,
      (l) => l.startsWith("{") && JSON.parse(l).partsDone === 2,
    );
    assert(held.seen.length > 0);

    const refused = await runCli(["pull", "--plain-http", `${registry.host}/w/a:v1`, dest], {
      tmp: tmp.path,
    });
    assertStrictEquals(refused.code, 1, "without --wait, refused at once");
    assert(refused.stderr.includes("in use by another pull"), refused.stderr);

    const waiter = spawnCli(
      ["pull", "--wait", "--json", "--plain-http", `${registry.host}/w/a:v1`, dest],
      { tmp: tmp.path },
    );
    const waiting = await stderrUntil(waiter, (l) => l === WAITING);
    assertStrictEquals(waiting.seen.at(-1), WAITING);
    holder.kill("SIGINT");
    assertStrictEquals((await holder.status).code, 130, await held.rest);
    const result = await completed(waiter);
    assertStrictEquals(result.code, 0, await waiting.rest);
    const report = JSON.parse(result.stdout);
    assert(report.bytesResumed >= 2048, result.stdout); // the holder's two parts were kept
    assertStrictEquals(await sha256File(dest), digest);
  } finally {
    await proxy.close();
  }
});

registryTest("--wait: the holder's finished file is returned, nothing fetched", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const { source, digest } = await pushed(registry.host, tmp.path, "b");
  const dest = `${tmp.path}/out.bin`;
  // The holder is this test: it locks the partial file as a pull does, then finishes.
  const partial = await Deno.open(`${dest}.parted-partial`, {
    read: true,
    write: true,
    create: true,
  });
  await partial.lock(true);
  const waiter = spawnCli(
    ["pull", "--wait=5m", "--json", "--plain-http", `${registry.host}/w/b:v1`, dest],
    { tmp: tmp.path },
  );
  const waiting = await stderrUntil(waiter, (l) => l === WAITING);
  await Deno.copyFile(source, dest);
  await Deno.remove(`${dest}.parted-partial`);
  partial.close(); // releases the lock
  const result = await completed(waiter);
  assertStrictEquals(result.code, 0, await waiting.rest);
  const report = JSON.parse(result.stdout);
  assertStrictEquals(report.bytesFetched, 0, result.stdout);
  assertStrictEquals(report.path, dest);
  assertStrictEquals(await sha256File(dest), digest);
});

registryTest("--wait=DURATION: gives up after that long, as without --wait", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  await pushed(registry.host, tmp.path, "c");
  const dest = `${tmp.path}/out.bin`;
  const partial = await Deno.open(`${dest}.parted-partial`, {
    read: true,
    write: true,
    create: true,
  });
  await partial.lock(true);
  try {
    const result = await runCli(
      ["pull", "--wait=1s", "--plain-http", `${registry.host}/w/c:v1`, dest],
      { tmp: tmp.path },
    );
    assertStrictEquals(result.code, 1, result.stderr);
    assert(result.stderr.startsWith(`${WAITING}\n`), result.stderr);
    assert(result.stderr.includes("in use by another pull"), result.stderr);
  } finally {
    partial.close();
  }
});
