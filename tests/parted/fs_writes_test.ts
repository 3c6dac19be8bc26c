/**
 * Positional writes of a pull's partial file: in place whatever their order and however short
 * each write of the runtime is, off the JavaScript thread on Deno (the thread reads the network
 * and hashes meanwhile), and none still landing once the file is closed and its lock released.
 */
import { type FileHandle, open, stat } from "node:fs/promises";
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { LocalFileError } from "../../src/errors/kinds.ts";
import { lockPartial } from "../../src/parted/fs_guard.ts";
import { PartialFile } from "../../src/parted/fs_partial.ts";
import { FileWrites, type SeekableFile } from "../../src/parted/fs_writes.ts";

const MiB = 1 << 20;

/** `count` chunks of `size` bytes, each filled with its own index plus one. */
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
 * A runtime handle over memory whose every write lands a turn of the event loop later and takes
 * at most `most` bytes; a write reaching `failAt` fails with ENOSPC, and one at `stuckAt` writes
 * nothing.
 */
class MemoryFile implements SeekableFile {
  readonly bytes: Uint8Array;
  #offset = 0;
  /** Writes of this handle under way now, and the most there ever were. */
  running = 0;
  mostRunning = 0;
  /** `size`: new bytes of that length, or bytes another handle of the same file writes too. */
  constructor(
    size: number | Uint8Array,
    readonly most = Infinity,
    readonly failAt = -1,
    readonly stuckAt = -1,
  ) {
    this.bytes = typeof size === "number" ? new Uint8Array(size) : size;
  }
  seekSync(offset: number): number {
    this.#offset = offset;
    return offset;
  }
  async write(bytes: Uint8Array): Promise<number> {
    const at = this.#offset;
    this.mostRunning = Math.max(this.mostRunning, ++this.running);
    await new Promise((resolve) => setTimeout(resolve, 0)).finally(() => this.running--);
    if (at === this.failAt) throw Object.assign(new Error("No space left"), { code: "ENOSPC" });
    if (at === this.stuckAt) return 0;
    const n = Math.min(bytes.byteLength, this.most);
    this.bytes.set(bytes.subarray(0, n), at);
    this.#offset = at + n;
    return n;
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

/** Runs `use` on a fresh file's `node:fs` handle and a runtime handle of it, closing both after. */
async function withFile(
  use: (file: { path: string; handle: FileHandle; seekable: Deno.FsFile }) => Promise<void>,
): Promise<void> {
  await using dir = await tempDir();
  const path = `${dir.path}/f`;
  const handle = await open(path, "w+");
  const seekable = await Deno.open(path, { read: true, write: true });
  try {
    await use({ path, handle, seekable });
  } finally {
    seekable.close();
    await handle.close();
  }
}

Deno.test("file writes: 64 writes asked for at once, in reverse order, each land at their position", async () => {
  await withFile(async ({ path, handle, seekable }) => {
    const writes = new FileWrites(handle, [seekable]);
    const parts = chunks(64, 64 * 1024);
    await Promise.all(parts.map((_, i) => 63 - i).map((i) => writes.writeAt(parts[i], i * 65536)));
    assertChunksAt(await Deno.readFile(path), 64, 65536);
  });
});

Deno.test("file writes: writes the runtime takes a few bytes at a time, asked for at once, each land whole in place", async () => {
  await withFile(async ({ handle }) => {
    const memory = new MemoryFile(16 * 1000, 97);
    const writes = new FileWrites(handle, [memory]);
    const parts = chunks(16, 1000);
    await Promise.all(parts.map((bytes, i) => writes.writeAt(bytes, i * 1000)));
    assertChunksAt(memory.bytes, 16, 1000);
  });
});

Deno.test("file writes: two runtime handles each write one at a time, side by side, and every write lands in place", async () => {
  await withFile(async ({ handle }) => {
    // Two handles of one file: the same bytes behind both, each with its own offset.
    const first = new MemoryFile(32 * 1000, 300);
    const lanes = [first, new MemoryFile(first.bytes, 300)];
    let together = 0;
    const watch = setInterval(() => {
      together = Math.max(together, lanes[0].running + lanes[1].running);
    }, 0);
    try {
      const writes = new FileWrites(handle, lanes);
      const parts = chunks(32, 1000);
      await Promise.all(parts.map((bytes, i) => writes.writeAt(bytes, i * 1000)));
    } finally {
      clearInterval(watch);
    }
    assertChunksAt(lanes[0].bytes, 32, 1000);
    assertEquals(lanes.map((lane) => lane.mostRunning), [1, 1], "one write at a time per handle");
    assertEquals(together, 2, "a write waits beside the running one, on the other handle");
  });
});

Deno.test("file writes: a failed write rejects with its errno code, one that makes no progress is refused; the writes after each still land", async () => {
  await withFile(async ({ handle }) => {
    const memory = new MemoryFile(4, Infinity, 1, 2);
    const writes = new FileWrites(handle, [memory]);
    const first = writes.writeAt(new Uint8Array([1]), 0);
    const full = writes.writeAt(new Uint8Array([2]), 1);
    const stuck = writes.writeAt(new Uint8Array([3]), 2);
    const last = writes.writeAt(new Uint8Array([4]), 3);
    await first;
    assertEquals((await assertRejects(() => full) as { code?: string }).code, "ENOSPC");
    assert(/no progress/.test((await assertRejects(() => stuck) as Error).message));
    await last;
    await writes.settled();
    assertEquals([...memory.bytes], [1, 0, 0, 4]);
  });
});

Deno.test("file writes: without a runtime handle (Node) the node:fs handle writes in place; settled() waits for every write", async () => {
  await withFile(async ({ path, handle }) => {
    const writes = new FileWrites(handle);
    const parts = chunks(16, MiB);
    for (const [i, bytes] of parts.entries()) writes.writeAt(bytes, i * MiB);
    await writes.settled();
    assertChunksAt(await Deno.readFile(path), 16, MiB);
  });
});

Deno.test("file writes: through the runtime's handle the JavaScript thread runs while 512 MiB are written", async () => {
  await withFile(async ({ handle, seekable }) => {
    const big = new Uint8Array(512 * MiB).fill(7);
    const { stall, total } = await longestStall(() =>
      new FileWrites(handle, [seekable]).writeAt(big, 0)
    );
    assert(stall < total / 2, `stalled ${stall} of ${total} ms`);
  });
});

Deno.test("partial file: parts written at once land in place off the JavaScript thread", async () => {
  await using dir = await tempDir();
  const partial = await PartialFile.open(`${dir.path}/w.bin`);
  try {
    await partial.prepare(8 * 32 * MiB);
    const parts = chunks(8, 32 * MiB);
    const { stall, total } = await longestStall(async () => {
      await Promise.all(parts.map((bytes, i) => partial.writeAt(bytes, i * 32 * MiB)));
    });
    assert(stall < total / 2, `the JavaScript thread stalled ${stall} of ${total} ms`);
    assertChunksAt(await Deno.readFile(partial.path), 8, 32 * MiB);
  } finally {
    await partial.close();
  }
});

Deno.test("partial file: writes still running at close all land, the one that fills a flush's share too; a second close waits for the lock's release", async () => {
  await using dir = await tempDir();
  const partial = await PartialFile.open(`${dir.path}/w.bin`);
  const size = 4 * 32 * MiB;
  await partial.prepare(size);
  // 128 MiB written and 128 MiB more while closing: the last of them reaches the 256 MiB after
  // which a flush starts, with none in flight.
  for (let i = 0; i < 4; i++) await partial.writeAt(new Uint8Array(32 * MiB).fill(1), i * 32 * MiB);
  const again = chunks(4, 32 * MiB).map((bytes, i) =>
    partial.writeAt(bytes.fill(0xaa), i * 32 * MiB)
  );
  const first = partial.close();
  await partial.close();
  const lock = await lockPartial(partial.path, await stat(partial.path));
  try {
    const landed = await Deno.readFile(partial.path);
    assertEquals(landed.findIndex((b) => b !== 0xaa), -1, "every write landed before the close");
  } finally {
    lock?.[Symbol.dispose]();
  }
  await first;
  await Promise.all(again);
  // A write asked for once the file is closed is refused, not lost.
  const late = await assertRejects(() => partial.writeAt(new Uint8Array(1), 0));
  assert(late instanceof LocalFileError, String(late));
});
