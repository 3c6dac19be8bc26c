/**
 * One parted operation as its own process, so benchmarks measure its wall time, CPU and peak
 * RSS alone: `deno run -A bench/_parted_op.ts push|pull <ref> <path> [partSize] [workers]
 * [bytesPerSecond] [hashThreads]` (an empty or `0` argument keeps the default; a rate caps the
 * client; `hashThreads` is the client's option, `0` included, and empty keeps the default).
 * A pull prints the seconds its commit took (the flush to disk before the rename, which `curl -o`
 * does not do) on standard output. Both print on standard error `transfer <seconds>`, the
 * operation alone without the process's start-up, and `flow <seconds>`, the time between entering
 * and leaving the uploading or downloading phase (what a bandwidth cap governs), and
 * `steady <bytes per second>`, the wire rate between 10 % and 90 % of the bytes (without the
 * requests' start and end).
 *
 * @module
 */
import { fromFile, PartedClient, type ProgressSnapshot, toFile } from "../src/parted/mod.ts";

const [op, ref, path, partSize, workers, rate, hashThreads] = Deno.args;
const given = (text: string | undefined) => text !== undefined && Number(text) > 0;
using client = new PartedClient({
  plainHttp: true,
  ...(given(rate) ? { rateLimit: { bytesPerSecond: Number(rate) } } : {}),
  ...(hashThreads === undefined || hashThreads === "" ? {} : { hashThreads: Number(hashThreads) }),
});
const options = {
  ...(given(partSize) ? { partSize: Number(partSize) } : {}),
  ...(given(workers) ? { workers: Number(workers) } : {}),
};
const started = performance.now();
const flow = { from: 0, to: 0 };
const marks: { at: number; bytes: number }[] = [];
const watchFlow = (s: ProgressSnapshot) => {
  marks.push({ at: performance.now(), bytes: s.wireBytes });
  const moving = s.phase === "uploading" || s.phase === "downloading";
  if (moving && flow.from === 0) flow.from = performance.now();
  if (!moving && flow.from !== 0 && flow.to === 0) flow.to = performance.now();
};
const transfer = () => {
  console.error(`transfer ${((performance.now() - started) / 1000).toFixed(3)}`);
  console.error(`flow ${(((flow.to || performance.now()) - flow.from) / 1000).toFixed(3)}`);
  const total = Math.max(0, ...marks.map((m) => m.bytes));
  const from = marks.find((m) => m.bytes >= total * 0.1);
  const to = marks.find((m) => m.bytes >= total * 0.9);
  if (from !== undefined && to !== undefined && to.at > from.at) {
    console.error(`steady ${((to.bytes - from.bytes) / ((to.at - from.at) / 1000)).toFixed(0)}`);
  }
};
if (op === "push") {
  const descriptor = await client.push(ref, fromFile(path), { ...options, onProgress: watchFlow });
  transfer();
  console.log(descriptor.digest);
} else if (op === "pull") {
  let committing = 0;
  await client.pull(ref, toFile(path), {
    ...options,
    onProgress: (s) => {
      watchFlow(s);
      if (s.phase === "committing" && committing === 0) committing = performance.now();
    },
  });
  transfer();
  console.log(((performance.now() - committing) / 1000).toFixed(3));
} else {
  throw new Error(`unknown operation ${op}`);
}
