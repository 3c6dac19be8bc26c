/**
 * One parted operation as its own process, so benchmarks measure its wall time, CPU and peak
 * RSS alone: `deno run -A bench/_parted_op.ts push|pull <ref> <path> [partSize] [workers]`.
 * A pull prints the seconds its commit took (the flush to disk before the rename, which `curl -o`
 * does not do) on standard output.
 *
 * @module
 */
import { fromFile, PartedClient, toFile } from "../src/parted/mod.ts";

const [op, ref, path, partSize, workers] = Deno.args;
using client = new PartedClient({ plainHttp: true });
const options = {
  ...(partSize ? { partSize: Number(partSize) } : {}),
  ...(workers ? { workers: Number(workers) } : {}),
};
if (op === "push") {
  const descriptor = await client.push(ref, fromFile(path), options);
  console.log(descriptor.digest);
} else if (op === "pull") {
  let committing = 0;
  await client.pull(ref, toFile(path), {
    ...options,
    onProgress: (s) => {
      if (s.phase === "committing" && committing === 0) committing = performance.now();
    },
  });
  console.log(((performance.now() - committing) / 1000).toFixed(3));
} else {
  throw new Error(`unknown operation ${op}`);
}
