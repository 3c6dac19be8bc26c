/**
 * Pulls that reuse local bytes: with `--overwrite` and the destination present, or with
 * `--reuse FILE`, the parts of the local file that match the artifact are copied instead of
 * fetched. The bytes fetched are counted at a fault proxy in front of Distribution.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "./_cli.ts";

const KiB = 1024;
const PART = 256 * KiB;
const PARTS = 16;
const SIZE = PART * PARTS;

function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** The parts of `bytes` whose blobs the log shows fetched, by index. */
function partsFetched(proxy: FaultProxy, bytes: Uint8Array): number[] {
  const digests = Array.from(
    { length: PARTS },
    (_, i) => digestOf(bytes.subarray(i * PART, (i + 1) * PART)),
  );
  return proxy.log
    .filter((r) => r.method === "GET" && /\/blobs\/sha256:/.test(r.path))
    .map((r) => digests.findIndex((d) => r.path.endsWith(`/${d}`)))
    .filter((i) => i >= 0);
}

function blobGets(proxy: FaultProxy): number {
  return proxy.log.filter((r) => r.method === "GET" && /\/blobs\//.test(r.path)).length;
}

registryTest(
  "reuse: an identical destination is up to date with nothing fetched; version 2 with one part of sixteen changed fetches that part",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const v1 = new Uint8Array(SIZE);
    for (let i = 0; i < SIZE; i += 65536) crypto.getRandomValues(v1.subarray(i, i + 65536));
    const v2 = v1.slice();
    crypto.getRandomValues(v2.subarray(9 * PART + 100, 9 * PART + 200));
    const v1File = `${tmp.path}/v1.bin`;
    const v2File = `${tmp.path}/v2.bin`;
    await Deno.writeFile(v1File, v1);
    await Deno.writeFile(v2File, v2);
    for (const [tag, file] of [["v1", v1File], ["v2", v2File]]) {
      const push = await runCli(
        ["push", "--plain-http", "--part-size", "256KiB", `${registry.host}/team/w:${tag}`, file],
        { tmp: tmp.path },
      );
      assertStrictEquals(push.code, 0, push.stderr);
    }
    const ref = (tag: string) => `${proxy.host}/team/w:${tag}`;
    const pull = (args: string[]) =>
      runCli(["pull", "--plain-http", "--json", ...args], { tmp: tmp.path });

    // Into a directory: the first pull fetches every part.
    const dir = `${tmp.path}/models`;
    await Deno.mkdir(dir);
    const first = await pull([ref("v1"), dir]);
    assertStrictEquals(first.code, 0, first.stderr);
    assertStrictEquals(partsFetched(proxy, v1).length, PARTS);
    const dest = `${dir}/v1.bin`;

    // Again with --overwrite: identical, so up to date, no blob fetched, the file untouched.
    const before = (await Deno.stat(dest)).mtime;
    proxy.log.length = 0;
    const again = await pull(["--overwrite", ref("v1"), dir]);
    assertStrictEquals(again.code, 0, again.stderr);
    assertStrictEquals(blobGets(proxy), 0, "no blob fetched");
    assertStrictEquals(
      again.stderr,
      `ocipart pull: ${dest} is up to date (identical to the artifact; nothing fetched)\n`,
    );
    const result = JSON.parse(again.stdout);
    assertStrictEquals(result.upToDate, true);
    assertStrictEquals(result.bytesFetched, 0);
    assertEquals((await Deno.stat(dest)).mtime, before);

    // Version 2 over it (same title): only the changed part is fetched.
    const file = `${tmp.path}/w.bin`;
    await Deno.copyFile(v1File, file);
    proxy.log.length = 0;
    const update = await pull(["--overwrite", ref("v2"), file]);
    assertStrictEquals(update.code, 0, update.stderr);
    assertEquals(partsFetched(proxy, v2), [9]);
    const updated = JSON.parse(update.stdout);
    assertStrictEquals(updated.bytesFetched, PART);
    assert(updated.bytesFetched <= 1.1 * SIZE / PARTS);
    assertEquals(await Deno.readFile(file), v2);

    // --reuse FILE: another file's matching parts, the file itself untouched.
    proxy.log.length = 0;
    const other = `${tmp.path}/other.bin`;
    const reuse = await pull(["--reuse", v1File, ref("v2"), other]);
    assertStrictEquals(reuse.code, 0, reuse.stderr);
    assertEquals(partsFetched(proxy, v2), [9]);
    assertEquals(await Deno.readFile(other), v2);
    assertEquals(await Deno.readFile(v1File), v1);

    // A file to reuse that is missing is named.
    const missing = await runCli(
      ["pull", "--plain-http", "--reuse", `${tmp.path}/nope.bin`, ref("v2"), `${tmp.path}/x.bin`],
      { tmp: tmp.path },
    );
    assertStrictEquals(missing.code, 1, missing.stderr);
    assertStrictEquals(
      missing.stderr.split("\n").filter((l) => !l.includes("matched")).join("\n"),
      `ocipart pull: could not pull ${ref("v2")} into ${tmp.path}/x.bin\n` +
        `ocipart pull: --reuse: ${tmp.path}/nope.bin is not a regular file\n`,
    );
  },
);
