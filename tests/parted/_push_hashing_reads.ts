/**
 * A push's hashing on the calling thread, alone in a process of its own so that the kernel's
 * count of the bytes it read (`/proc/self/io`) is the hashing's and no other test's.
 *
 * Usage: `deno run -A _push_hashing_reads.ts <file> <part size> <along|apart>`: `along` says no
 * part's digest is ever wanted (the file digest rides along), `apart` that every one is. Prints
 * `{ digest, parts, read }` as JSON; `read` is null where `/proc` is missing.
 *
 * @module
 */
import { Sha256Threads } from "../../src/hashing/sha256_threads.ts";
import { planParts } from "../../src/parted/plan.ts";
import { PushHashing } from "../../src/parted/push_hashing.ts";
import type { TransferJob } from "../../src/parted/transfer_job.ts";

const [path, partSize, mode] = Deno.args;
const size = (await Deno.stat(path)).size;
const job = { hashThreads: 2, hashing: () => new Sha256Threads(0) } as unknown as TransferJob;
const hashing = new PushHashing(
  job,
  { path, size, plan: planParts(size, Number(partSize)) },
  new AbortController().signal,
);
const parts: string[] = [];
const before = bytesRead();
const digest = await hashing.run((part) => {
  parts.push(part.digest);
  queueMicrotask(() => hashing.uploading());
}, () => mode === "apart");
const after = bytesRead();
hashing.close();
console.log(JSON.stringify({ digest, parts, read: before === null ? null : after! - before }));

/** Bytes this process has read through `read` calls so far (Linux), or null. */
function bytesRead(): number | null {
  try {
    return Number(/^rchar: (\d+)$/m.exec(Deno.readTextFileSync("/proc/self/io"))?.[1]);
  } catch {
    return null;
  }
}
