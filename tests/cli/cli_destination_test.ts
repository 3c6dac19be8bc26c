/**
 * The destination belongs to one pull, end to end through the CLI on the real registry: the
 * partial file is locked for the whole pull (a throttled nginx keeps the first pull running), is
 * never written through a planted link, is sized only when the file system has room (a small
 * tmpfs; the strict fake registry serves a manifest claiming a huge file), and a name that cannot
 * take the partial suffix is refused before anything is written.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import { encodeManifest } from "../../src/parted/manifest.ts";
import { OCI_MANIFEST_MEDIA_TYPE } from "../../src/registry/media_types.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { startNginx } from "../fixtures/nginx.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { type CliResult, failureLines, runCli, spawnCli } from "./_cli.ts";
import { exists } from "../fixtures/expect.ts";

const MiB = 1024 * 1024;
const PARTIAL = ".parted-partial";

async function digestOf(path: string): Promise<string> {
  return createHash("sha256").update(await Deno.readFile(path)).digest("hex");
}

async function entries(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

function expectRefusal(result: CliResult, pattern: RegExp): string {
  assertStrictEquals(result.code, 1, `exit ${result.code}, stderr:\n${result.stderr}`);
  assertStrictEquals(result.stdout, "");
  const [error, why] = failureLines(result.stderr);
  assert(pattern.test(error), `${error} !~ ${pattern}`);
  assertStrictEquals(why, "ocipart pull: no sentinel matched (exit 1)");
  return error;
}

async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function push(ref: string, source: string, tmp: string, partSize = "1MiB"): Promise<void> {
  const result = await runCli(["push", "--plain-http", "--part-size", partSize, ref, source], {
    tmp,
  });
  assertStrictEquals(result.code, 0, result.stderr);
}

registryTest(
  "one destination, one pull: a second pull is refused at once and touches nothing; other destinations never contend; a killed pull's lock is gone",
  async () => {
    await using registry = await startRegistry();
    await using nginx = await startNginx({ upstream: registry.url, limitRate: "1m" });
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    await writePatternFile(source, 6 * MiB + 5);
    const other = `${tmp.path}/other.bin`;
    await writePatternFile(other, 2 * MiB + 1, 7);
    await push(`${registry.host}/dest/lock:a`, source, tmp.path);
    await push(`${registry.host}/dest/lock:b`, other, tmp.path);

    const dest = `${tmp.path}/out.bin`;
    // The first pull goes through nginx at 1 MiB/s per response: several seconds.
    const first = spawnCli(
      ["pull", "--plain-http", "--workers", "2", `${nginx.host}/dest/lock:a`, dest],
      { tmp: tmp.path },
    );
    await first.stdin.close();
    const firstOutput = first.output();
    await waitFor(
      async () =>
        (await Deno.stat(`${dest}${PARTIAL}`).catch(() => undefined))?.size === 6 * MiB + 5,
      "the first pull to size its partial",
    );

    // The second pull of the same destination (another artifact, straight to the registry).
    const started = performance.now();
    const second = await runCli(
      ["pull", "--plain-http", `${registry.host}/dest/lock:b`, dest],
      { tmp: tmp.path },
    );
    const secondMs = performance.now() - started;
    const error = expectRefusal(second, /in use by another pull/);
    assert(error.includes(dest), `the path is named: ${error}`);
    assertStrictEquals(await exists(dest), false, "the second pull committed nothing");

    // A different destination pulls at the same time without contention.
    const elsewhere = await runCli(
      ["pull", "--plain-http", `${registry.host}/dest/lock:b`, `${tmp.path}/elsewhere.bin`],
      { tmp: tmp.path },
    );
    assertStrictEquals(elsewhere.code, 0, elsewhere.stderr);
    assertStrictEquals(await digestOf(`${tmp.path}/elsewhere.bin`), await digestOf(other));

    const firstResult = await firstOutput;
    assertStrictEquals(firstResult.code, 0, new TextDecoder().decode(firstResult.stderr));
    assertStrictEquals(
      await digestOf(dest),
      await digestOf(source),
      "the first pull's bytes, unmixed",
    );
    assertStrictEquals(await exists(`${dest}${PARTIAL}`), false);
    console.log(`second pull refused in ${secondMs.toFixed(0)} ms (process start included)`);

    // A pull killed while holding the lock leaves a partial the next pull can take.
    const killedDest = `${tmp.path}/killed.bin`;
    const killed = spawnCli(
      ["pull", "--plain-http", `${nginx.host}/dest/lock:a`, killedDest],
      { tmp: tmp.path },
    );
    await killed.stdin.close();
    await waitFor(() => exists(`${killedDest}${PARTIAL}`), "the killed pull to open its partial");
    killed.kill("SIGKILL");
    await killed.output();
    const rerun = await runCli(
      ["pull", "--plain-http", `${registry.host}/dest/lock:a`, killedDest],
      { tmp: tmp.path },
    );
    assertStrictEquals(rerun.code, 0, rerun.stderr);
    assertStrictEquals(await digestOf(killedDest), await digestOf(source));
  },
);

registryTest(
  "a planted symbolic or hard link at the partial is refused and the victim is unchanged; a linked destination is replaced, not followed",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    await writePatternFile(source, 3 * MiB + 3);
    const ref = `${registry.host}/dest/links:v1`;
    await push(ref, source, tmp.path);
    const victim = `${tmp.path}/victim.txt`;
    await Deno.writeTextFile(victim, "precious");
    const victimDigest = await digestOf(victim);

    const viaSymlink = `${tmp.path}/sym.bin`;
    await Deno.symlink(victim, `${viaSymlink}${PARTIAL}`);
    expectRefusal(
      await runCli(["pull", "--plain-http", ref, viaSymlink], { tmp: tmp.path }),
      /partial file is a symbolic link/,
    );
    assertStrictEquals(await digestOf(victim), victimDigest);
    assertStrictEquals(
      (await Deno.lstat(`${viaSymlink}${PARTIAL}`)).isSymlink,
      true,
      "link untouched",
    );
    assertStrictEquals(await exists(viaSymlink), false);

    const viaHardLink = `${tmp.path}/hard.bin`;
    await Deno.link(victim, `${viaHardLink}${PARTIAL}`);
    expectRefusal(
      await runCli(["pull", "--plain-http", ref, viaHardLink], { tmp: tmp.path }),
      /partial file has another hard link/,
    );
    assertStrictEquals(await digestOf(victim), victimDigest);
    assertStrictEquals(await exists(viaHardLink), false);

    // A destination that is a link: the rename replaces the link itself.
    const linkedDest = `${tmp.path}/linked.bin`;
    await Deno.symlink(victim, linkedDest);
    const pull = await runCli(["pull", "--plain-http", ref, linkedDest], { tmp: tmp.path });
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals((await Deno.lstat(linkedDest)).isFile, true);
    assertStrictEquals(await digestOf(linkedDest), await digestOf(source));
    assertStrictEquals(await digestOf(victim), victimDigest);
  },
);

registryTest(
  "a destination name that cannot take the partial suffix is refused before anything is written",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/weights.bin`;
    await writePatternFile(source, 1000);
    const ref = `${registry.host}/dest/name:v1`;
    await push(ref, source, tmp.path);
    const dir = `${tmp.path}/d`;
    await Deno.mkdir(dir);
    const longName = "w".repeat(250);
    expectRefusal(
      await runCli(["pull", "--plain-http", ref, `${dir}/${longName}`], { tmp: tmp.path }),
      /file name is too long .*limited to 255 bytes/,
    );
    assertStrictEquals((await entries(dir)).length, 0, "nothing written");
    // Exactly at the limit works.
    const fits = "w".repeat(255 - PARTIAL.length);
    const pull = await runCli(["pull", "--plain-http", ref, `${dir}/${fits}`], { tmp: tmp.path });
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(await digestOf(`${dir}/${fits}`), await digestOf(source));
  },
);

Deno.test("a manifest claiming 2^53-1 bytes is refused before sizing, naming the bytes, and leaves no partial", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  const digest = `sha256:${"ab".repeat(32)}`;
  const fileSize = Number.MAX_SAFE_INTEGER;
  const partSize = 2 ** 41;
  const manifest = encodeManifest({
    partSize,
    fileSize,
    fileDigest: digest,
    partDigests: Array(Math.ceil(fileSize / partSize)).fill(digest),
  });
  registry.store.putManifest("dest/huge", "v1", manifest, OCI_MANIFEST_MEDIA_TYPE);
  const dest = `${tmp.path}/huge.bin`;
  const result = await runCli(
    ["pull", "--plain-http", `${registry.host}/dest/huge:v1`, dest],
    { tmp: tmp.path },
  );
  expectRefusal(result, /not enough space: 9007199254740991 bytes needed, \d+ available/);
  assertStrictEquals(await exists(`${dest}${PARTIAL}`), false, "no partial left");
  assertStrictEquals(await exists(dest), false);
  assertStrictEquals(registry.count({ method: "GET", path: /\/blobs\// }), 0, "no blob requested");
});

function isRoot(): boolean {
  return Deno.uid() === 0;
}

async function mountTmpfs(dir: string, size: string): Promise<boolean> {
  await Deno.mkdir(dir, { recursive: true });
  const mount = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir],
    stdout: "null",
    stderr: "piped",
  }).output();
  return mount.success;
}

async function unmount(dir: string): Promise<void> {
  await new Deno.Command("umount", { args: [dir], stdout: "null", stderr: "null" }).output();
}

registryTest(
  "a small file system: a pull that cannot fit is refused at once; ENOSPC mid-pull and EROFS are named",
  async (t) => {
    if (!isRoot()) {
      console.log("skipped: mounting a tmpfs needs root");
      return;
    }
    await using registry = await startRegistry();
    await using nginx = await startNginx({ upstream: registry.url, limitRate: "2m" });
    await using tmp = await tempDir();
    const mnt = `${tmp.path}/small`;
    if (!(await mountTmpfs(mnt, "24m"))) {
      console.log("skipped: tmpfs could not be mounted here");
      return;
    }
    try {
      const big = `${tmp.path}/big.bin`;
      await writePatternFile(big, 40 * MiB);
      await push(`${registry.host}/dest/space:big`, big, tmp.path, "4MiB");
      const small = `${tmp.path}/small.bin`;
      await writePatternFile(small, 16 * MiB, 3);
      await push(`${registry.host}/dest/space:small`, small, tmp.path, "1MiB");

      await t.step("refused before sizing, naming bytes needed and available", async () => {
        const dest = `${mnt}/big.bin`;
        const result = await runCli(
          ["pull", "--plain-http", `${registry.host}/dest/space:big`, dest],
          { tmp: tmp.path },
        );
        expectRefusal(result, /not enough space: 41943040 bytes needed, \d+ available/);
        assertStrictEquals((await entries(mnt)).length, 0, "no partial left");
      });

      await t.step("space taken by another writer mid-pull: the error names ENOSPC", async () => {
        const dest = `${mnt}/small.bin`;
        const pull = spawnCli(
          ["pull", "--plain-http", "--workers", "2", `${nginx.host}/dest/space:small`, dest],
          { tmp: tmp.path },
        );
        await pull.stdin.close();
        const output = pull.output();
        await waitFor(
          async () =>
            (await Deno.stat(`${dest}${PARTIAL}`).catch(() => undefined))?.size === 16 * MiB,
          "the partial to be sized",
        );
        // Another writer takes what is left of the file system.
        const filler = await Deno.open(`${mnt}/filler`, { write: true, create: true });
        const block = new Uint8Array(MiB);
        try {
          for (;;) await filler.write(block);
        } catch {
          // full
        } finally {
          filler.close();
        }
        const result = await output;
        const stderr = new TextDecoder().decode(result.stderr);
        assertStrictEquals(result.code, 1, stderr);
        const [error] = failureLines(stderr);
        assert(/write failed \(ENOSPC: no space left on the device\)/.test(error), error);
        assert(error.includes(dest), error);
        assertStrictEquals(await exists(dest), false);
      });

      await t.step(
        "a read-only file system: the error names EROFS, nothing is written",
        async () => {
          const remount = await new Deno.Command("mount", {
            args: ["-o", "remount,ro", mnt],
            stdout: "null",
            stderr: "null",
          }).output();
          if (!remount.success) {
            console.log("skipped: the tmpfs could not be remounted read-only");
            return;
          }
          const before = await entries(mnt);
          const dest = `${mnt}/readonly.bin`;
          const result = await runCli(
            [
              "pull",
              "--plain-http",
              "--progress",
              "none",
              `${registry.host}/dest/space:small`,
              dest,
            ],
            { tmp: tmp.path },
          );
          assertStrictEquals(result.code, 1, result.stderr);
          const [error] = failureLines(result.stderr);
          assert(/EROFS/.test(error), error);
          assert(error.includes(dest), error);
          assertStrictEquals((await entries(mnt)).length, before.length, "nothing written");
        },
      );
    } finally {
      await unmount(mnt);
    }
  },
);

registryTest(
  "a second pull into the same directory is refused, naming the file, touching nothing; --overwrite redoes it; a file named by the user is replaced as before",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/model.bin`;
    await writePatternFile(source, 2 * MiB + 9);
    const ref = `${registry.host}/dest/again:v1`;
    await push(ref, source, tmp.path);
    const dir = `${tmp.path}/models`;
    await Deno.mkdir(dir);

    const first = await runCli(["pull", "--plain-http", ref, dir], { tmp: tmp.path });
    assertStrictEquals(first.code, 0, first.stderr);
    assertStrictEquals(first.stdout, `${dir}/model.bin\n`);
    const written = await Deno.stat(`${dir}/model.bin`);

    const second = await runCli(["pull", "--plain-http", ref, dir], { tmp: tmp.path });
    const error = expectRefusal(second, /a file of that name already exists; .*overwrite/);
    assert(error.endsWith(`(${dir}/model.bin)`), error);
    // The report starts with the file that is taken and the flag that would replace it.
    assertEquals(second.stderr.split("\n").slice(0, 2), [
      `ocipart pull: cannot pull into ${dir}: ${dir}/model.bin already exists (a file)`,
      "ocipart pull: hint: the existing file is kept; add --overwrite to replace it with the " +
      "pulled file",
    ]);
    assertStrictEquals(
      (await Deno.stat(`${dir}/model.bin`)).mtime?.getTime(),
      written.mtime?.getTime(),
    );
    assertStrictEquals((await entries(dir)).join(), "model.bin", "no partial left");

    const third = await runCli(["pull", "--plain-http", "--overwrite", ref, dir], {
      tmp: tmp.path,
    });
    assertStrictEquals(third.code, 0, third.stderr);
    assertStrictEquals(third.stdout, `${dir}/model.bin\n`);
    assertStrictEquals(await digestOf(`${dir}/model.bin`), await digestOf(source));

    // A destination file the user named is theirs to replace, as before.
    const named = `${tmp.path}/named.bin`;
    await Deno.writeTextFile(named, "old");
    const replaced = await runCli(["pull", "--plain-http", ref, named], { tmp: tmp.path });
    assertStrictEquals(replaced.code, 0, replaced.stderr);
    assertStrictEquals(replaced.stdout, `${named}\n`);
    assertStrictEquals(await digestOf(named), await digestOf(source));
  },
);

Deno.test("a pull into /proc: the path named and another path advised, never --allow-all", async () => {
  await using tmp = await tempDir();
  // Readable and writable by the flags, still refused: Deno keeps /proc for --allow-all.
  const result = await runCli(
    ["pull", "--plain-http", "--progress", "none", "127.0.0.1:9/a/b:v1", "/proc/x"],
    { tmp: tmp.path, read: ["/proc"] },
  );
  assertStrictEquals(result.code, 1, result.stderr);
  assertEquals(result.stderr.split("\n").slice(0, 2), [
    "ocipart pull: cannot use /proc/x: Deno's permissions keep a program out of /proc, /sys and /dev",
    "ocipart pull: hint: choose a path outside /proc, /sys and /dev",
  ]);
  assert(!result.stderr.includes("--allow-all"), result.stderr);
});
