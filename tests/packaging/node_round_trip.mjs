// Run by Node: imports the bundled library and round-trips a file through a registry (into a
// file and into a stream), and a blob (whole and in parallel ranges).
// Usage: node node_round_trip.mjs <bundle.mjs> <registry host> <directory>
import { createHash, randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";

const [bundle, host, dir] = process.argv.slice(2);
const { BlobClient, fromFile, PartedClient, toFile, toStream } = await import(
  pathToFileURL(bundle).href
);
const digestOf = (bytes) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

const bytes = randomBytes(3 * 1024 * 1024 + 11);
await writeFile(`${dir}/node-src.bin`, bytes);
const parted = new PartedClient({ plainHttp: true });
const pushed = await parted.push(`${host}/node/file:v1`, fromFile(`${dir}/node-src.bin`), {
  partSize: 1024 * 1024,
});
await parted.pull(`${host}/node/file:v1`, toFile(`${dir}/node-out.bin`));
const chunks = [];
const sink = new WritableStream({ write: (chunk) => void chunks.push(Buffer.from(chunk)) });
await parted.pull(`${host}/node/file:v1`, toStream(sink));
parted.close();
const streamed = Buffer.concat(chunks);
const pulled = await readFile(`${dir}/node-out.bin`);

const blobs = new BlobClient({ plainHttp: true });
const small = randomBytes(70_000);
await blobs.push({ host, name: "node/blob" }, digestOf(small), small.length, small);
const back = Buffer.from(
  await new Response(await blobs.pull({ host, name: "node/blob" }, digestOf(small))).arrayBuffer(),
);
blobs.close();
const ranged = new BlobClient({ plainHttp: true, parallelPull: { workers: 3, chunkSize: 16_384 } });
const inRanges = Buffer.from(
  await new Response(await ranged.pull({ host, name: "node/blob" }, digestOf(small)))
    .arrayBuffer(),
);
ranged.close();

console.log(JSON.stringify({
  manifest: pushed.digest,
  file: digestOf(pulled) === digestOf(bytes),
  stream: streamed.equals(bytes),
  blob: back.equals(small),
  ranges: inRanges.equals(small),
}));
