/**
 * Positional writes of a pull's partial file: in place whatever their order, off the JavaScript
 * thread on Deno (the thread reads the network and hashes meanwhile), and none still landing once
 * the file is closed and its lock released.
 */
import { open, stat } from "node:fs/promises";
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { lockPartial } from "../../src/parted/fs_guard.ts";
import { PartialFile } from "../../src/parted/fs_partial.ts";
import { FileWrites } from "../../src/parted/fs_writes.ts";

const MiB = 1 << 20;

/** `count` chunks of `size` bytes, each filled with its own index. */
function chunks(count: number, size: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => new Uint8Array(size).fill(i + 1));
}

function assertChunksAt(bytes: Uint8Array, count: number, size: number) {
  assertEquals(bytes.byteLength, count * size);
  for (let i = 0; i < count; i++) {
    const wrong = bytes.subarray(i * size, (i + 1) * size).findIndex((b) => b !== i + 1);
    assertEquals(wrong, -1, `chunk ${i} is not in its place`);
  }
}

/**
 * How long `work` took, and the longest time in it that the JavaScript thread ran nothing else
 * (a 1 ms timer's longest gap).
 */
async function longestStall(work: () => Promise<void>): Promise<{ stall: number; total: number }> {
  const start = performance.now();
  let last = start;
  let stall = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const end = performance.now();
  return { stall: Math.max(stall, end - last), total: end - start };
}

Deno.test("file writes: 64 writes asked for at once, in reverse order, each land at their position", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f`;
  const handle = await open(path, "w+");
  const seekable = await Deno.open(path, { read: true, write: true });
  try {
    const writes = new FileWrites(handle, seekable);
    const parts = chunks(64, 64 * 1024);
    await Promise.all(parts.map((_, i) => 63 - i).map((i) => writes.writeAt(parts[i], i * 65536)));
    assertChunksAt(await Deno.readFile(path), 64, 65536);
  } finally {
    seekable.close();
    await handle.close();
  }
});

Deno.test("file writes: through the runtime's handle the JavaScript thread runs while 512 MiB are written; through node:fs it stalls", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f`;
  const handle = await open(path, "w+");
  const seekable = await Deno.open(path, { read: true, write: true });
  try {
    const big = new Uint8Array(512 * MiB).fill(7);
    const direct = await longestStall(() => new FileWrites(handle, seekable).writeAt(big, 0));
    assert(direct.stall < direct.total / 2, `stalled ${direct.stall} of ${direct.total} ms`);
    // The contrast that gives the first assertion its meaning: node:fs writes on the thread.
    const onThread = await longestStall(() => new FileWrites(handle).writeAt(big, 0));
    assert(onThread.stall >= onThread.total / 2, `stalled ${onThread.stall} of ${onThread.total}`);
  } finally {
    seekable.close();
    await handle.close();
  }
});

Deno.test("file writes: a failed write rejects with the runtime's errno code; the writes after it still land", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f`;
  const handle = await open(path, "w+");
  const seekable = await Deno.open(path, { read: true, write: true });
  const writes = new FileWrites(handle, seekable);
  const before = writes.writeAt(new Uint8Array([1]), 0);
  // A position past what the platform allows fails the write (EINVAL or EFBIG).
  const failing = writes.writeAt(new Uint8Array([2]), Number.MAX_SAFE_INTEGER);
  const after = writes.writeAt(new Uint8Array([3]), 1);
  await before;
  const err = await assertRejects(() => failing);
  assert(/^E[A-Z]+$/.test(String((err as { code?: unknown }).code)), String(err));
  await after;
  seekable.close();
  await handle.close();
  assertEquals([...await Deno.readFile(path)], [1, 3]);
});

Deno.test("partial file: parts written at once land in place off the JavaScript thread; close waits for the last write before releasing the lock", async () => {
  await using dir = await tempDir();
  const dest = `${dir.path}/w.bin`;
  const partial = await PartialFile.open(dest);
  await partial.prepare(8 * 32 * MiB);
  const parts = chunks(8, 32 * MiB);
  const { stall, total } = await longestStall(async () => {
    await Promise.all(parts.map((bytes, i) => partial.writeAt(bytes, i * 32 * MiB)));
  });
  assert(stall < total / 2, `the JavaScript thread stalled ${stall} of ${total} ms`);
  // Writes still running when the pull closes: none lands after the lock is released.
  const again = parts.map((bytes, i) => partial.writeAt(bytes.fill(0xaa), i * 32 * MiB));
  await partial.close();
  const lock = await lockPartial(partial.path, await stat(partial.path));
  try {
    const landed = await Deno.readFile(partial.path);
    assertEquals(landed.findIndex((b) => b !== 0xaa), -1, "every write landed before the close");
  } finally {
    lock?.[Symbol.dispose]();
  }
  await Promise.all(again);
});
