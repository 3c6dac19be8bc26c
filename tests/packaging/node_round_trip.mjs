// Run by Node: imports the bundled library and round-trips a file through a registry.
// Usage: node node_round_trip.mjs <bundle.mjs> <registry host> <directory>
import { createHash, randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";

const [bundle, host, dir] = process.argv.slice(2);
const { BlobClient, fromFile, PartedClient, toFile } = await import(pathToFileURL(bundle).href);
const digestOf = (bytes) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

const bytes = randomBytes(3 * 1024 * 1024 + 11);
await writeFile(`${dir}/node-src.bin`, bytes);
const parted = new PartedClient({ plainHttp: true });
const pushed = await parted.push(`${host}/node/file:v1`, fromFile(`${dir}/node-src.bin`), {
  partSize: 1024 * 1024,
});
await parted.pull(`${host}/node/file:v1`, toFile(`${dir}/node-out.bin`));
parted.close();
const pulled = await readFile(`${dir}/node-out.bin`);

const blobs = new BlobClient({ plainHttp: true });
const small = randomBytes(70_000);
await blobs.push({ host, name: "node/blob" }, digestOf(small), small.length, small);
const back = Buffer.from(
  await new Response(await blobs.pull({ host, name: "node/blob" }, digestOf(small))).arrayBuffer(),
);
blobs.close();

console.log(JSON.stringify({
  manifest: pushed.digest,
  file: digestOf(pulled) === digestOf(bytes),
  blob: back.equals(small),
}));
