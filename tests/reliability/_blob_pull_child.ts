/**
 * A process that pulls one blob with `BlobClient` into a file, for tests that measure a whole
 * process (peak memory). Arguments: one JSON object
 * `{ repository, digest, out, tls: "plain" | "insecure" | { caFile }, parallel?: { workers,
 * chunkSize } }`. Proxies come from the environment, as for any program. Exits 0 once the
 * verified blob is in `out`.
 *
 * @module
 */
import { BlobClient } from "../../src/blob/client.ts";

interface Job {
  repository: string;
  digest: string;
  out: string;
  tls: "plain" | "insecure" | { caFile: string };
  parallel?: { workers: number; chunkSize: number };
}

const job = JSON.parse(Deno.args[0]) as Job;
const tls = job.tls === "plain"
  ? { plainHttp: true }
  : job.tls === "insecure"
  ? { insecureTls: true }
  : { caCerts: [await Deno.readTextFile(job.tls.caFile)] };
using client = new BlobClient({ ...tls, ...(job.parallel ? { parallelPull: job.parallel } : {}) });
const stream = await client.pull(job.repository, job.digest);
const file = await Deno.open(job.out, { write: true, create: true, truncate: true });
// The pipe closes the file: its promise settles only once every write is on disk (with
// `preventClose` it may settle while the last write is still under way).
await stream.pipeTo(file.writable);
