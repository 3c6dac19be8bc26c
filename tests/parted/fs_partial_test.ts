import { stat } from "node:fs/promises";
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { LocalFileError } from "../../src/errors/kinds.ts";
import { lockPartial, PartialInUseError } from "../../src/parted/fs_guard.ts";
import { DestinationExistsError } from "../../src/parted/destination_exists_error.ts";
import { PARTIAL_SUFFIX, PartialFile } from "../../src/parted/fs_partial.ts";
import { exists } from "../fixtures/expect.ts";

Deno.test({
  name: "partial file: a resize that fails (2^53-1 bytes, EFBIG) leaves no 0-byte partial",
  // Without sys permission free space cannot be measured, so the resize itself is what fails.
  permissions: { read: true, write: true, sys: false },
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const dest = `${dir}/huge.bin`;
      const partial = await PartialFile.open(dest);
      const err = await assertRejects(() => partial.prepare(Number.MAX_SAFE_INTEGER));
      assert(err instanceof LocalFileError);
      assert(/cannot be resized \((EFBIG|EINVAL)/.test(err.message), err.message);
      await partial.close();
      assertEquals(await exists(`${dest}${PARTIAL_SUFFIX}`), false);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("partial file: one holder per destination in a process too; released on close; a sized partial stays", async () => {
  await using dir = await tempDir();
  const dest = `${dir.path}/a.bin`;
  const first = await PartialFile.open(dest);
  await assertRejects(() => PartialFile.open(dest), PartialInUseError);
  const other = await PartialFile.open(`${dir.path}/b.bin`);
  await other.close();
  assertEquals(await exists(`${dir.path}/b.bin${PARTIAL_SUFFIX}`), false, "never sized: removed");
  await first.prepare(10);
  await first.close();
  const again = await PartialFile.open(dest);
  assertEquals(again.initialLength, 10, "the sized partial stayed for a resume");
  await again.close();
});

Deno.test("partial file: a partial replaced by a link during the pull is not committed", async () => {
  await using dir = await tempDir();
  const dest = `${dir.path}/a.bin`;
  const victim = `${dir.path}/victim`;
  await Deno.writeTextFile(victim, "precious");
  const partial = await PartialFile.open(dest);
  await partial.prepare(3);
  await partial.writeAt(new TextEncoder().encode("abc"), 0);
  await Deno.remove(partial.path);
  await Deno.symlink(victim, partial.path);
  await assertRejects(() => partial.commit(), LocalFileError, "replaced during the pull");
  await partial.close();
  assertEquals(await exists(dest), false);
  assertEquals(await Deno.readTextFile(victim), "precious");
});

Deno.test("partial file: background flushes requested between writes lose nothing, and close or commit waits for them", async () => {
  await using dir = await tempDir();
  const dest = `${dir.path}/a.bin`;
  const bytes = (text: string) => new TextEncoder().encode(text);
  const first = await PartialFile.open(dest);
  await first.prepare(6);
  await first.writeAt(bytes("ab"), 0);
  first.flushSoon();
  first.flushSoon(); // coalesced with the one in flight
  await first.writeAt(bytes("cd"), 2);
  first.flushSoon();
  await first.close(); // with a flush possibly in flight: no rejection, the bytes stay
  const again = await PartialFile.open(dest);
  assertEquals(again.initialLength, 6);
  again.flushSoon();
  await again.writeAt(bytes("ef"), 4);
  again.flushSoon();
  await again.commit();
  assertEquals(await Deno.readTextFile(dest), "abcdef");
  assertEquals(await exists(`${dest}${PARTIAL_SUFFIX}`), false);
});

Deno.test("partial file: a destination that is a directory is refused before the partial exists, a named file or link is not", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/taken`);
  const err = await assertRejects(() => PartialFile.open(`${dir.path}/taken`));
  assert(err instanceof DestinationExistsError, String(err));
  assertEquals([err.existing, err.path], ["directory", `${dir.path}/taken`]);
  assertEquals(await exists(`${dir.path}/taken${PARTIAL_SUFFIX}`), false);
  await Deno.writeTextFile(`${dir.path}/file`, "x");
  await Deno.symlink(`${dir.path}/file`, `${dir.path}/link`);
  for (const name of ["file", "link"]) {
    const partial = await PartialFile.open(`${dir.path}/${name}`);
    await partial.prepare(1);
    await partial.writeAt(new Uint8Array([7]), 0);
    await partial.commit();
    assertEquals((await Deno.lstat(`${dir.path}/${name}`)).isFile, true, name);
  }
});

Deno.test("partial file: a partial committed away while a second pull locks it is 'in use', never ENOENT", async () => {
  await using dir = await tempDir();
  const dest = `${dir.path}/a.bin`;
  const first = await PartialFile.open(dest);
  await first.prepare(3);
  await first.writeAt(new TextEncoder().encode("abc"), 0);
  // The second pull opened the partial and measured it, then the first committed it away.
  const seen = await stat(first.path);
  await first.commit();
  const err = await assertRejects(() => lockPartial(first.path, seen));
  assert(err instanceof PartialInUseError, `${err}`);
  assertEquals(await Deno.readTextFile(dest), "abc");
});

Deno.test("partial file: a second handle the OS refuses is done without; one that is another file is refused, and the lock is released", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/a.bin.parted-partial`;
  await Deno.writeTextFile(path, "abc");
  await Deno.writeTextFile(`${dir.path}/other`, "xyz");
  const seen = await stat(path);
  // The runtime, with its second and later opens answered by `second`.
  const runtime = (second: () => Promise<Deno.FsFile>): typeof Deno => {
    let opens = 0;
    return new Proxy(Deno, {
      get: (target, key) =>
        key === "open"
          ? (...args: Parameters<typeof Deno.open>) =>
            ++opens === 1 ? target.open(...args) : second()
          : Reflect.get(target, key),
    });
  };
  const refused = () =>
    Promise.reject(Object.assign(new Error("Too many open files"), { code: "EMFILE" }));
  const lock = await lockPartial(path, seen, 2, runtime(refused));
  try {
    assertEquals(lock?.files.length, 1, "the pull goes on with the locked handle alone");
    await assertRejects(() => lockPartial(path, seen), PartialInUseError);
  } finally {
    lock?.[Symbol.dispose]();
  }

  const swapped = () => Deno.open(`${dir.path}/other`, { read: true, write: true });
  const err = await assertRejects(() => lockPartial(path, seen, 2, runtime(swapped)));
  assert(err instanceof LocalFileError, `${err}`);
  assertEquals(err.message, "pull destination: the partial file changed while being opened");
  // Every handle it opened is closed (the test's resource check), the lock with them.
  const again = await lockPartial(path, seen);
  again?.[Symbol.dispose]();
  assertEquals(await Deno.readTextFile(path), "abc");
});
