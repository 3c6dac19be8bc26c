/**
 * `ocipart cat <ref> [--range …]` against the real registry (CNCF Distribution), behind the
 * fault proxy that counts what is fetched: only the parts a range touches move, each verified
 * whole first, and `--cache-dir` keeps a repeated read from fetching again.
 */
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli, spawnCli } from "./_cli.ts";
import { pushed } from "./_pipes.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

async function cat(args: string[], tmp: string) {
  const child = spawnCli(["cat", "--plain-http", ...args], { tmp });
  await child.stdin.close();
  const out = await child.output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

/** Blob GETs the proxy saw since `from` (each moves at most one part). */
function blobGets(proxy: { log: { method: string; path: string }[] }, from: number): number {
  return proxy.log.slice(from).filter((r) => r.method === "GET" && /\/blobs\//.test(r.path))
    .length;
}

/** The bytes received in every exchange `--debug` reported. */
function received(stderr: string): number {
  let total = 0;
  for (const match of stderr.matchAll(/^debug: .* received=(\d+)/gm)) total += Number(match[1]);
  return total;
}

registryTest("cat --range: part edges, the end, empty, past the end", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const part = 64 * KiB;
  const bytes = patternBytes(3 * part + 1000, 9);
  await Deno.writeFile(`${tmp.path}/f.bin`, bytes);
  const ref = `${registry.host}/cat/edges:v1`;
  const push = await runCli(
    ["push", "--plain-http", "--part-size", "64KiB", ref, `${tmp.path}/f.bin`],
    { tmp: tmp.path },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  const cases: [string, number, number][] = [
    [`0-${part - 1}`, 0, part], // exactly the first part
    [`${part - 4}-${part + 3}`, part - 4, part + 4], // across an edge
    [`${part}+${part}`, part, 2 * part], // exactly the second part
    [`${bytes.length - 10}-`, bytes.length - 10, bytes.length], // the end
    [`${bytes.length - 1}-${bytes.length - 1}`, bytes.length - 1, bytes.length], // the last byte
    [`${part}+0`, part, part], // empty
    [`${bytes.length}-`, bytes.length, bytes.length], // empty, at the end
  ];
  for (const [range, from, to] of cases) {
    const out = await cat(["--range", range, ref], tmp.path);
    assertStrictEquals(out.code, 0, `${range}: ${out.stderr}`);
    assertStrictEquals(sha256Bytes(out.stdout), sha256Bytes(bytes.subarray(from, to)), range);
  }
  const whole = await cat([ref], tmp.path);
  assertStrictEquals(sha256Bytes(whole.stdout), sha256Bytes(bytes));
  const past = await cat(["--range", `${bytes.length - 5}-${bytes.length}`, ref], tmp.path);
  assertStrictEquals(past.code, 2);
  assertStrictEquals(past.stdout.byteLength, 0);
  assert(
    /goes past the end of the file \(197608 bytes; the last byte is 197607\)/.test(past.stderr),
  );
  const after = await cat(["--range", `${bytes.length + 1}-`, ref], tmp.path);
  assertStrictEquals(after.code, 2, after.stderr);
});

registryTest(
  "cat --range of 1 MiB moves at most 2 parts; again with --cache-dir, none",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const bytes = patternBytes(8 * MiB, 4);
    await Deno.writeFile(`${tmp.path}/f.bin`, bytes);
    const ref = `${proxy.host}/cat/big:v1`;
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "1MiB", ref, `${tmp.path}/f.bin`],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    const from = 3 * MiB + 12345;
    const range = `${from}+${MiB}`;
    const cache = ["--cache-dir", `${tmp.path}/cache`];
    const before = proxy.log.length;
    const first = await cat([...cache, "--debug", "--range", range, ref], tmp.path);
    assertStrictEquals(first.code, 0, first.stderr);
    assertStrictEquals(sha256Bytes(first.stdout), sha256Bytes(bytes.subarray(from, from + MiB)));
    assertStrictEquals(blobGets(proxy, before), 2);
    // Bytes received, as --debug counts them: the manifest and two parts.
    const moved = received(first.stderr);
    assert(moved > 2 * MiB && moved < 2 * MiB + 16 * KiB, `${moved} bytes received`);
    const again = proxy.log.length;
    const second = await cat([...cache, "--debug", "--range", range, ref], tmp.path);
    assertStrictEquals(second.code, 0, second.stderr);
    assertStrictEquals(sha256Bytes(second.stdout), sha256Bytes(first.stdout));
    assertStrictEquals(blobGets(proxy, again), 0);
    assert(received(second.stderr) < 16 * KiB, "only the manifest");
    console.log(`1 MiB range: ${moved} bytes received; again: ${received(second.stderr)}`);
  },
);

registryTest("cat: a corrupted part gives exit 5 and none of its bytes", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const part = 64 * KiB;
  const bytes = patternBytes(3 * part, 2);
  await Deno.writeFile(`${tmp.path}/f.bin`, bytes);
  const ref = `${registry.host}/cat/bad:v1`;
  const push = await runCli(
    ["push", "--plain-http", "--part-size", "64KiB", ref, `${tmp.path}/f.bin`],
    { tmp: tmp.path },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  const tampered = bytes.slice(part, 2 * part);
  tampered[7] ^= 1;
  await Deno.writeFile(
    registry.blobPath(sha256Bytes(bytes.subarray(part, 2 * part))),
    tampered,
  );
  const out = await cat(["--range", `${part + 10}+5`, ref], tmp.path);
  assertStrictEquals(out.code, 5, out.stderr);
  assertStrictEquals(out.stdout.byteLength, 0);
});

registryTest(
  "cat --limit-rate caps the read; a stop during a fetch into --cache-dir leaves no partial file",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const bytes = patternBytes(4 * MiB, 17);
    const ref = await pushed(bytes, `${registry.host}/cat/slow:v1`, "4MiB", tmp.path);

    // 4 MiB at 2 MiB/s: about 2 s, against a few milliseconds uncapped on loopback.
    const started = performance.now();
    const capped = await cat(["--limit-rate", "2MiB/s", "--range", "0-9", ref], tmp.path);
    const seconds = (performance.now() - started) / 1000;
    assertStrictEquals(capped.code, 0, capped.stderr);
    assertStrictEquals(sha256Bytes(capped.stdout), sha256Bytes(bytes.slice(0, 10)));
    assert(seconds >= 1.5, `a 4 MiB part at 2 MiB/s took ${seconds.toFixed(2)} s`);

    const cache = `${tmp.path}/cache`;
    const child = spawnCli(
      [
        "cat",
        "--plain-http",
        "--limit-rate",
        "1MiB/s",
        "--cache-dir",
        cache,
        "--range",
        "0-9",
        ref,
      ],
      { tmp: tmp.path },
    );
    await child.stdin.close();
    const partial = async () => {
      const names: string[] = [];
      try {
        for await (const entry of Deno.readDir(cache)) names.push(entry.name);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
      return names;
    };
    for (let i = 0; i < 100 && (await partial()).length === 0; i++) await delay(50);
    assertStrictEquals((await partial()).length, 1, "the part is being fetched into the cache");
    await delay(300);
    child.kill("SIGINT");
    const out = await child.output();
    assertStrictEquals(out.code, 130, new TextDecoder().decode(out.stderr));
    assertStrictEquals((await partial()).join(", "), "", "nothing is left in the cache directory");
  },
);

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

registryTest("cat: three at once sharing one --cache-dir each write the whole file", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const bytes = patternBytes(12 * MiB, 41);
  const ref = await pushed(bytes, `${registry.host}/cat/shared:v1`, "1MiB", tmp.path);
  // Each trims the shared directory to its 2 most recent parts while the others read theirs.
  const cache = `${tmp.path}/cache`;
  const runs = await Promise.all([1, 2, 3].map(() => cat(["--cache-dir", cache, ref], tmp.path)));
  for (const [i, run] of runs.entries()) {
    assertStrictEquals(run.code, 0, `cat ${i}: ${run.stderr}`);
    assertStrictEquals(sha256Bytes(run.stdout), sha256Bytes(bytes), `cat ${i}`);
  }
  const file = await cat(["--cache-dir", `${tmp.path}/data.bin`, ref], tmp.path);
  assertStrictEquals(file.code, 1, file.stderr);
  assert(file.stderr.includes(`--cache-dir: ${tmp.path}/data.bin is not a directory`), file.stderr);
});
