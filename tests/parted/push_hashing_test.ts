/**
 * Where a push hashes: on the calling thread first (the default on a fast core), moving the parts
 * left to threads once a part is present; on threads from the start otherwise. Whatever the path,
 * every digest is right, a cold push starts no thread, and an abort ends the hashing at once.
 * The job's hashing is real; only the choice the session would make is given by the test, so
 * every path runs on every machine.
 */
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { patternBytes, sha256Bytes, writePatternFile } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { seededRandom } from "../fixtures/random.ts";
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";
import { ShortFileError } from "../../src/hashing/hash_range.ts";
import { THREADED_HASH_MIN_BYTES } from "../../src/hashing/stream_sha256.ts";
import type { PartDescriptor } from "../../src/parted/manifest.ts";
import { planParts } from "../../src/parted/plan.ts";
import { PushHashing } from "../../src/parted/push_hashing.ts";
import type { TransferJob } from "../../src/parted/transfer_job.ts";
import type { HashWork } from "../../src/remote/session.ts";

const PART = THREADED_HASH_MIN_BYTES / 2;
const SIZE = 4 * PART + 123;

/** A job whose push hashing starts inline (`inlineFirst`) or on threads, recording each ask. */
function jobHashing(inlineFirst: boolean, hashThreads = 2) {
  const asked: { count: number; work: HashWork | undefined; pool: Sha256Threads }[] = [];
  const job = {
    hashThreads,
    hashing(count: number, work?: HashWork) {
      const pool = new Sha256Threads(work === "push" && inlineFirst ? 0 : count);
      asked.push({ count, work, pool });
      return pool;
    },
  } as unknown as TransferJob;
  return { job, asked };
}

async function sourceFile(dir: string) {
  const path = `${dir}/source.bin`;
  const fileDigest = await writePatternFile(path, SIZE);
  const plan = planParts(SIZE, PART);
  const partDigests = plan.map((p) => sha256Bytes(patternBytes(p.size, 1, p.offset)));
  return { source: { path, size: SIZE, plan }, fileDigest, partDigests };
}

Deno.test("push hashing: a cold push on a fast core hashes every digest on its own thread and starts no hashing thread", async () => {
  await using dir = await tempDir();
  const { source, fileDigest, partDigests } = await sourceFile(dir.path);
  const { job, asked } = jobHashing(true);
  const hashing = new PushHashing(job, source, new AbortController().signal);
  const seen: PartDescriptor[] = [];
  // Every part is missing, as the registry would answer a first push.
  const digest = await hashing.run((part) => {
    seen.push(part);
    queueMicrotask(() => hashing.uploading());
  });
  hashing.close();
  assertEquals(digest, fileDigest);
  assertEquals(seen.map((p) => p.digest), partDigests);
  assertEquals(seen.map((p) => p.index), [0, 1, 2, 3, 4]);
  assertEquals(asked.map(({ count, work }) => [count, work]), [[2, "push"]]);
  assert(asked[0].pool.inlineOnly);
});

Deno.test("push hashing: a present part moves the parts left to hashThreads - 1 threads, the file digest stays, every digest right", async () => {
  await using dir = await tempDir();
  const { source, fileDigest, partDigests } = await sourceFile(dir.path);
  const { job, asked } = jobHashing(true, 3);
  const hashing = new PushHashing(job, source, new AbortController().signal);
  const seen: string[] = [];
  // The registry has every part: a re-push.
  const digest = await hashing.run((part) => {
    seen.push(part.digest);
    setTimeout(() => hashing.present(), 5);
  });
  hashing.close();
  assertEquals(digest, fileDigest);
  assertEquals(seen, partDigests);
  assertEquals(asked.map(({ count, work }) => [count, work]), [[2, "push"], [2, undefined]]);
  assert(!asked[1].pool.inlineOnly, "the parts left ran on a thread");
});

Deno.test("push hashing: on one core (hashThreads 1) a present part moves nothing", async () => {
  await using dir = await tempDir();
  const { source, fileDigest, partDigests } = await sourceFile(dir.path);
  const { job, asked } = jobHashing(true, 1);
  const hashing = new PushHashing(job, source, new AbortController().signal);
  const seen: string[] = [];
  const digest = await hashing.run((part) => {
    seen.push(part.digest);
    hashing.present();
  });
  hashing.close();
  assertEquals([digest, seen], [fileDigest, partDigests]);
  assertEquals(asked.length, 1);
});

Deno.test("push hashing: threads from the start (a slow core, or hashThreads asked) give the same digests and never move", async () => {
  await using dir = await tempDir();
  const { source, fileDigest, partDigests } = await sourceFile(dir.path);
  const { job, asked } = jobHashing(false);
  const hashing = new PushHashing(job, source, new AbortController().signal);
  const seen: string[] = [];
  const digest = await hashing.run((part) => {
    seen.push(part.digest);
    if (part.index === 0) hashing.uploading();
    else hashing.present();
  });
  hashing.close();
  assertEquals([digest, seen], [fileDigest, partDigests]);
  assertEquals(asked.map(({ count, work }) => [count, work]), [[2, "push"]]);
  assert(!asked[0].pool.inlineOnly);
});

Deno.test("push hashing: inline, the second part waits for the registry's word on the first; an abort while waiting ends the hashing at once", async () => {
  await using dir = await tempDir();
  const { source } = await sourceFile(dir.path);
  const { job } = jobHashing(true);
  const controller = new AbortController();
  const hashing = new PushHashing(job, source, controller.signal);
  const seen: number[] = [];
  let first!: () => void;
  const firstSeen = new Promise<void>((resolve) => (first = resolve));
  const run = hashing.run((part) => {
    seen.push(part.index);
    first();
  });
  run.catch(() => {});
  await firstSeen;
  // Time for a second part to be hashed, were it not waiting (a part hashes in milliseconds).
  await new Promise((resolve) => setTimeout(resolve, 300));
  assertEquals(seen, [0]);
  const started = performance.now();
  controller.abort(new Error("stopped by the test"));
  await assertRejects(() => run, Error, "stopped by the test");
  assert(performance.now() - started < 1000, "ended within 1 s");
  hashing.close();
});

Deno.test("push hashing: without a word on the first part, the second waits at most a second, and every digest comes", async () => {
  await using dir = await tempDir();
  const { source, fileDigest, partDigests } = await sourceFile(dir.path);
  const { job } = jobHashing(true);
  const hashing = new PushHashing(job, source, new AbortController().signal);
  const seen: { digest: string; at: number }[] = [];
  // A registry whose HEAD never answers: nobody calls uploading() or present().
  const digest = await hashing.run((part) =>
    seen.push({ digest: part.digest, at: performance.now() })
  );
  hashing.close();
  assertEquals([digest, seen.map((s) => s.digest)], [fileDigest, partDigests]);
  const waited = seen[1].at - seen[0].at;
  assert(
    waited >= 900 && waited < 5000,
    `the second part came ${waited.toFixed(0)} ms after the first`,
  );
});

Deno.test("push hashing: a file under 16 MiB waits for no word and asks for no thread", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/small.bin`;
  const size = 3 * 1024 * 1024 + 5;
  const fileDigest = await writePatternFile(path, size);
  const plan = planParts(size, 1024 * 1024);
  const { job, asked } = jobHashing(false, 4);
  const hashing = new PushHashing(job, { path, size, plan }, new AbortController().signal);
  const started = performance.now();
  const seen: string[] = [];
  const digest = await hashing.run((part) => {
    seen.push(part.digest);
    hashing.present();
  });
  hashing.close();
  assertEquals(digest, fileDigest);
  assertEquals(seen, plan.map((p) => sha256Bytes(patternBytes(p.size, 1, p.offset))));
  assert(performance.now() - started < 900, "no wait for the registry's word");
  assertEquals(asked.map(({ count, work }) => [count, work]), [[0, "push"]]);
});

const ABORT_CASES = [
  { name: "calling thread first", inlineFirst: true, riding: false },
  { name: "threads from the start", inlineFirst: false, riding: false },
  // Two parts wanted, then none: the file digest catches up, then rides along.
  {
    name: "calling thread, the file digest catching up and riding",
    inlineFirst: true,
    riding: true,
  },
];

for (const { name, inlineFirst, riding } of ABORT_CASES) {
  Deno.test(`push hashing: an abort while parts hash ends the hashing within 1 s (${name})`, async () => {
    await using dir = await tempDir();
    const path = `${dir.path}/large.bin`;
    // Hashing all of it (both digests) takes more than a second even on the fastest core, so a
    // hashing that went on after the abort would miss the bound.
    const size = 1536 * 1024 * 1024;
    await writePatternFile(path, size);
    const plan = planParts(size, 64 * 1024 * 1024);
    const { job } = jobHashing(inlineFirst);
    const controller = new AbortController();
    const hashing = new PushHashing(job, { path, size, plan }, controller.signal);
    let first!: () => void;
    const firstSeen = new Promise<void>((resolve) => (first = resolve));
    let seen = 0;
    const run = hashing.run((part) => {
      seen++;
      if (part.index === (riding ? 2 : 0)) first();
      hashing.uploading();
    }, () => !riding || seen < 2);
    run.catch(() => {});
    await firstSeen;
    const started = performance.now();
    controller.abort(new Error("stopped by the test"));
    await assertRejects(() => run, Error, "stopped by the test");
    const took = performance.now() - started;
    hashing.close();
    assert(took < 1000, `the hashing ended ${took.toFixed(0)} ms after the abort`);
  });
}

/** A cold push hashed on the calling thread, `partWanted` saying when a part's digest is wanted. */
async function inlinePush(
  source: Awaited<ReturnType<typeof sourceFile>>["source"],
  partWanted: () => boolean,
) {
  const { job, asked } = jobHashing(true);
  const hashing = new PushHashing(job, source, new AbortController().signal);
  const seen: string[] = [];
  const digest = await hashing.run((part) => {
    seen.push(part.digest);
    queueMicrotask(() => hashing.uploading());
  }, partWanted);
  hashing.close();
  assert(asked.every(({ pool }) => pool.inlineOnly), "no hashing thread");
  return { digest, seen };
}

/**
 * The same in a process of its own (`_push_hashing_reads.ts`), with the bytes it read: test
 * files run side by side in one process, whose own count would add theirs.
 */
async function inlinePushApart(path: string, mode: "along" | "apart") {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./_push_hashing_reads.ts", import.meta.url).pathname,
      path,
      String(PART),
      mode,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout)) as {
    digest: string;
    parts: string[];
    read: number | null;
  };
}

Deno.test("push hashing: on the calling thread, while no part's digest is wanted yet, the file digest rides along with the parts: the file is read once, not twice", async () => {
  await using dir = await tempDir();
  const { source, fileDigest, partDigests } = await sourceFile(dir.path);
  const along = await inlinePushApart(source.path, "along");
  const apart = await inlinePushApart(source.path, "apart");
  for (const run of [along, apart]) {
    assertEquals([run.digest, run.parts], [fileDigest, partDigests]);
  }
  if (along.read === null) return; // no /proc here: the digests are what can be checked
  assert(along.read < 1.25 * SIZE, `riding along: ${along.read} bytes read for ${SIZE}`);
  assert(apart.read! >= 2 * SIZE, `parts wanted: ${apart.read} bytes read for ${SIZE}`);
});

Deno.test("push hashing: parts wanted and not wanted, changing at any moment, leave every digest right (40 schedules)", async () => {
  await using dir = await tempDir();
  const { source, fileDigest, partDigests } = await sourceFile(dir.path);
  for (let seed = 1; seed <= 40; seed++) {
    const random = seededRandom(seed);
    // Runs of wanted and not wanted, each a few reads long: rides cut mid-part, catch-ups cut
    // mid-piece, and parts hashed alone, in every order.
    const flipEvery = 1 + Math.floor(random() * 40);
    let calls = 0;
    let waiting = random() < 0.5;
    const run = await inlinePush(source, () => {
      if (++calls % flipEvery === 0) waiting = random() < 0.5;
      return waiting;
    });
    assertEquals([run.digest, run.seen], [fileDigest, partDigests], `schedule ${seed}`);
  }
});

Deno.test("push hashing: a file that shrinks while the first part awaits the registry's word fails at once and leaves no timer behind", async () => {
  await using dir = await tempDir();
  const { source } = await sourceFile(dir.path);
  const { job } = jobHashing(true);
  const hashing = new PushHashing(job, source, new AbortController().signal);
  using timers = trackTimers();
  const started = performance.now();
  // The first part is wanted, so it is hashed alone; no word on it ever comes, and the file
  // digest, catching up meanwhile, finds the file short.
  await assertRejects(
    () =>
      hashing.run((part) => {
        if (part.index === 0) Deno.truncateSync(source.path, PART / 2);
      }, () => true),
    ShortFileError,
  );
  hashing.close();
  const took = performance.now() - started;
  assert(took < 900, `failed after ${took.toFixed(0)} ms, not at the end of the wait`);
  assertEquals(timers.pending.size, 0, "the wait's timer was cleared");
});

/** Counts the timers started and not yet fired or cleared, until disposed. */
function trackTimers() {
  const pending = new Set<unknown>();
  const { setTimeout: set, clearTimeout: clear } = globalThis;
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    const id = set(() => {
      pending.delete(id);
      fn();
    }, ms);
    pending.add(id);
    return id;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((id?: ReturnType<typeof setTimeout>) => {
    if (id !== undefined) pending.delete(id);
    clear(id);
  }) as typeof clearTimeout;
  return {
    pending,
    [Symbol.dispose]() {
      globalThis.setTimeout = set;
      globalThis.clearTimeout = clear;
    },
  };
}
