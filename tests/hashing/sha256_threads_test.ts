import { createHash } from "node:crypto";
import { assert, assertEquals, assertThrows } from "../fixtures/assert.ts";
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";
import { tempDir } from "../fixtures/tmp.ts";

const sha = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

Deno.test("sha256 threads: running hashes continue, reset, and give every buffer back", async () => {
  const threads = new Sha256Threads(2);
  try {
    const recycled: ArrayBuffer[] = [];
    const a = threads.open((b) => recycled.push(b));
    const b = threads.open(() => {});
    const data = new Uint8Array(3000).map((_, i) => i * 7);
    for (const [start, end] of [[0, 1000], [1000, 2500], [2500, 3000]]) {
      const buffer = new ArrayBuffer(4096);
      new Uint8Array(buffer).set(data.subarray(start, end));
      a.update(buffer, end - start);
    }
    assertEquals(await a.digest(), sha(data));
    assertEquals(recycled.length, 3);
    a.reset();
    assertEquals(await a.digest(), sha(new Uint8Array()));
    assertEquals(await b.digest(), sha(new Uint8Array()));
    a.close();
    b.close();
  } finally {
    threads.close();
  }
});

Deno.test("sha256 threads: a file hash fed in pieces gives the file's digest, on a thread and inline", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = new Uint8Array(5 * 1024 * 1024 + 17).map((_, i) => (i * 31) & 0xff);
    const path = `${dir}/f.bin`;
    await Deno.writeFile(path, data);
    for (const count of [2, 0]) {
      const threads = new Sha256Threads(count);
      try {
        const hash = threads.openFileHash();
        const pieces = [];
        for (let offset = 0; offset < data.length; offset += 1024 * 1024) {
          pieces.push(hash.add(path, offset, Math.min(1024 * 1024, data.length - offset)));
        }
        await Promise.all(pieces);
        assertEquals(await hash.digest(), sha(data), `${count} threads`);
        hash.close();
      } finally {
        threads.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sha256 threads: a file hash's pieces run before queued ranges until it defers, then after them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/f.bin`;
    await Deno.writeFile(path, new Uint8Array(8 * 1024 * 1024).fill(7));
    const MiB = 1024 * 1024;
    const threads = new Sha256Threads(1);
    try {
      const order: string[] = [];
      const track = (name: string, p: Promise<unknown>) => p.then(() => order.push(name));
      const hash = threads.openFileHash();
      const first = [
        track("piece 1", hash.add(path, 0, 4 * MiB)),
        track("piece 2", hash.add(path, 4 * MiB, 4 * MiB)),
        track("range A", threads.hashRange(path, 0, MiB)),
      ];
      await Promise.all(first);
      assertEquals(order, ["piece 1", "piece 2", "range A"], "pieces first");
      order.length = 0;
      const second = [
        track("piece 3", hash.add(path, 0, 4 * MiB)),
        track("piece 4", hash.add(path, 4 * MiB, 4 * MiB)),
        track("range B", threads.hashRange(path, 0, MiB)),
        track("range C", threads.hashRange(path, MiB, MiB)),
      ];
      hash.defer();
      await Promise.all(second);
      // Piece 3 was already running when the hash deferred; piece 4 waits for the ranges.
      assertEquals(order, ["piece 3", "range B", "range C", "piece 4"], "ranges first");
      hash.close();
    } finally {
      threads.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sha256 threads: a range reports its bytes as they are hashed, on a thread and inline", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = new Uint8Array(9 * 1024 * 1024 + 5).map((_, i) => (i * 13) & 0xff);
    const path = `${dir}/f.bin`;
    await Deno.writeFile(path, data);
    const offset = 1000;
    const size = data.length - offset - 3;
    for (const count of [1, 0]) {
      const threads = new Sha256Threads(count);
      try {
        const reads: number[] = [];
        const digest = await threads.hashRange(path, offset, size, undefined, (n) => reads.push(n));
        assertEquals(digest, sha(data.subarray(offset, offset + size)), `${count} threads`);
        assertEquals(reads.reduce((a, b) => a + b, 0), size, `${count} threads: every byte told`);
        assertEquals(reads.length > 2, true, `${count} threads: told as it runs, ${reads.length}`);
        // Without a listener nothing is reported and the answer is the same.
        assertEquals(await threads.hashRange(path, offset, size), digest);
      } finally {
        threads.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sha256 threads: a thread starts without a permission prompt in a process allowed to read only a few variables", async () => {
  // Deno prompts only on a terminal, so the script runs on a pseudo-terminal (`script`, from
  // util-linux). A thread that asked for the whole environment would stop at the prompt.
  const dir = await Deno.makeTempDir();
  try {
    const module = new URL("../../src/hashing/sha256_threads.ts", import.meta.url).href;
    await Deno.writeTextFile(
      `${dir}/hash.ts`,
      `import { Sha256Threads } from ${JSON.stringify(module)};
      const threads = new Sha256Threads(1);
      const hash = threads.open(() => {});
      const buffer = new ArrayBuffer(3);
      new Uint8Array(buffer).set([1, 2, 3]);
      hash.update(buffer, 3);
      console.log("hashed", await hash.digest());
      threads.close();`,
    );
    const command = `${Deno.execPath()} run --allow-read --allow-env=HOME ${dir}/hash.ts`;
    const out = await new Deno.Command("script", {
      args: ["-qec", command, "/dev/null"],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(20_000),
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert(!text.includes("Deno requests"), text);
    assert(
      text.includes(
        "hashed sha256:039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81",
      ),
      text,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sha256 threads: with inline running hashes, a running hash keeps its buffer on this thread; ranges still hash", async () => {
  await using tmp = await tempDir();
  const data = new Uint8Array(5000).map((_, i) => i * 3);
  await Deno.writeFile(`${tmp.path}/f.bin`, data);
  for (const inlineRunning of [true, false]) {
    const threads = new Sha256Threads(2, { inlineRunning });
    try {
      assertEquals(threads.threadedRunning, !inlineRunning);
      const hash = threads.open(() => {});
      const buffer = new ArrayBuffer(5000);
      new Uint8Array(buffer).set(data);
      hash.update(buffer, 5000);
      // A buffer handed to a thread is transferred (detached here); one hashed inline is not.
      assertEquals(buffer.byteLength, inlineRunning ? 5000 : 0);
      assertEquals(await hash.digest(), sha(data));
      hash.close();
      assertEquals(await threads.hashRange(`${tmp.path}/f.bin`, 0, 5000), sha(data));
    } finally {
      threads.close();
    }
  }
});

Deno.test("sha256 threads: a hash opened alongside another feeds both with one hand-over, in order, on a thread and inline", async () => {
  const sha = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  const pieces = [0, 1, 2, 3].map((k) => new Uint8Array(70_000 + k).map((_, i) => i * (k + 7)));
  const all = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
  pieces.reduce((at, p) => (all.set(p, at), at + p.byteLength), 0);
  for (const count of [0, 1]) {
    const threads = new Sha256Threads(count);
    try {
      let recycled = 0;
      const whole = threads.open(() => recycled++);
      // Two "parts" of two pieces each, both feeding the whole.
      const digests: string[] = [];
      for (const part of [pieces.slice(0, 2), pieces.slice(2)]) {
        const hash = threads.open(() => recycled++, whole);
        for (const piece of part) {
          const buffer = new ArrayBuffer(piece.byteLength);
          new Uint8Array(buffer).set(piece);
          hash.update(buffer, piece.byteLength);
        }
        digests.push(await hash.digest());
        hash.close();
      }
      assertEquals(digests, [
        sha(new Uint8Array([...pieces[0], ...pieces[1]])),
        sha(new Uint8Array([...pieces[2], ...pieces[3]])),
      ], `${count} threads`);
      assertEquals(await whole.digest(), sha(all), `${count} threads`);
      // Every buffer came back once (through the hash it was given to).
      await new Promise((resolve) => setTimeout(resolve, 0));
      assertEquals(recycled, 4);
      // Only a hash that `open` returned can be fed alongside.
      const made = { update() {}, reset() {}, digest: () => Promise.resolve(""), close() {} };
      assertThrows(() => threads.open(() => {}, made), TypeError);
    } finally {
      threads.close();
    }
  }
});
