/**
 * One large blob on a per-connection-capped link, against the tools that pull it over one
 * stream: Distribution and every client run in a network namespace whose loopback gives each
 * connection to or from the registry port its own HTB class at `--rate` (default 200 mbit =
 * 25 MB/s, `bench/_netns.ts`). The file is pushed (before the cap) as the one layer of an
 * artifact laid out as `oras push` writes it (the layer titled with the file's name); then, in
 * the same run and alternating: `ocipart blob pull` and `ocipart pull` of that artifact with
 * `--workers`, against `skopeo copy` (to `dir:`) and the Go peers `peer-oras` and `peer-crane`
 * (`bench/_peers.ts`), which read the layer over one stream; a tool that is not installed is
 * skipped and said so. Target: ours ≤ 0.2× of the one-stream tools' median.
 *
 * Then, through a counting TCP proxy in front of the registry (every byte the registry's answers
 * carry, headers included): `ocipart blob pull` killed with SIGKILL once the proxy has passed
 * half of the blob, and the same command again (target: the rerun fetches ≤ 55 % of the blob);
 * and `ocipart pull --overwrite` of version 2 of a 16-part parted file over version 1, the last
 * part changed (target: ≤ 1.1/16 of the file fetched).
 *
 * Needs root, `ip` and `tc` (iproute2); without them it prints why and exits 0.
 *
 * Usage: `deno run -A bench/blob_peers_bench.ts [--size 2GiB] [--rate 200] [--workers 8]
 * [--runs 1]` (rate in mbit per connection; a smaller `--size` for a quick run).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { connect, createServer, type Socket } from "node:net";
import { cpuLine } from "./_cpu.ts";
import { capPorts, enterCappedNamespace } from "./_netns.ts";
import { measure, type Measurement, median } from "./_measure.ts";
import { findPeers, peersNote } from "./_peers.ts";
import { findBinary, startRegistry } from "../tests/fixtures/registry.ts";
import { writePatternFile } from "../tests/fixtures/files.ts";
import { parseSize } from "../src/cli/arguments/size.ts";
import { sha256Digest } from "../mod.ts";
import { cliCommand } from "./_cli.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "2GiB" },
    rate: { type: "string", default: "200" },
    workers: { type: "string", default: "8" },
    runs: { type: "string", default: "1" },
    inside: { type: "boolean", default: false },
  },
  strict: false,
});

if (!values.inside) {
  const status = await enterCappedNamespace(new URL(import.meta.url).pathname, Deno.args);
  Deno.exit(status);
}

const SIZE = parseSize(String(values.size));
const RATE_MBIT = Number(values.rate);
const WORKERS = Number(values.workers);
const RUNS = Number(values.runs);
const PARTS = 16;
const CLI = new URL("../cli.ts", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "ocipart-blob-peers-" });

const ocipart = (...args: string[]) => [
  ...cliCommand(CLI),
  ...args,
  "--plain-http",
  "--progress",
  "none",
];

function ok(m: Measurement, what: string): number {
  if (m.code !== 0) throw new Error(`${what} failed (${m.code}): ${m.stderr.slice(-2000)}`);
  return m.wallSeconds;
}

async function clean(path: string): Promise<void> {
  await Deno.remove(path, { recursive: true }).catch(() => {});
}

/** A TCP proxy to `port` that counts the bytes sent back to its clients. */
async function countingProxy(port: number) {
  let bytes = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.on("data", (chunk: Uint8Array) => (bytes += chunk.length));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no proxy address");
  return {
    host: `127.0.0.1:${address.port}`,
    get bytes() {
      return bytes;
    },
    reset: () => (bytes = 0),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Runs `command`, killing it with SIGKILL once `reached()` holds; resolves to its status. */
async function killWhen(command: string[], reached: () => boolean): Promise<Deno.CommandStatus> {
  const child = new Deno.Command(command[0], {
    args: command.slice(1),
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let done = false;
  const status = child.status.finally(() => (done = true));
  while (!done) {
    if (reached()) {
      child.kill("SIGKILL");
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return await status;
}

const SKOPEO = findBinary("skopeo");
const loadAtStart = Deno.loadavg()[0].toFixed(1);
const cpu = await cpuLine();
const peers = await findPeers();
const registry = await startRegistry();
const proxy = await countingProxy(registry.port);
try {
  const host = registry.host;
  const src = `${dir}/data.bin`;
  console.error(`generating ${SIZE} bytes`);
  const digest = await writePatternFile(src, SIZE, 42);
  // Before the cap: the one-file artifact, and two versions of a parted file.
  ok(await measure(ocipart("blob", "push", `${host}/bench/file`, src)), "blob push");
  const ref = await putOneFileManifest(host, "bench/file", "v1", { digest, size: SIZE });
  const v1 = `${dir}/v1/data.bin`;
  const v2 = `${dir}/v2/data.bin`;
  await Deno.mkdir(`${dir}/v1`);
  await Deno.mkdir(`${dir}/v2`);
  await Deno.rename(src, v1);
  await Deno.copyFile(v1, v2);
  await changeLastPart(v2, SIZE, PARTS);
  const partSize = String(Math.ceil(SIZE / PARTS));
  for (const [tag, file] of [["v1", v1], ["v2", v2]]) {
    const push = ocipart("push", `${host}/bench/parted:${tag}`, file, "--part-size", partSize);
    ok(await measure(push), `push ${tag}`);
  }
  await capPorts([registry.port], RATE_MBIT);

  const out = `${dir}/out`;
  const workers = ["--workers", String(WORKERS)];
  const runs: Record<string, number[]> = {};
  const time = async (name: string, command: string[]) => {
    await clean(out);
    await Deno.mkdir(out);
    const target = name === "ocipart blob pull" ? `${out}/data.bin` : out;
    const seconds = ok(await measure(command.map((a) => a === "{out}" ? target : a)), name);
    (runs[name] ??= []).push(seconds);
    console.error(`${name}: ${seconds.toFixed(1)} s`);
  };
  for (let run = 0; run < RUNS; run++) {
    await time(
      "ocipart blob pull",
      ocipart("blob", "pull", `${host}/bench/file@${digest}`, "{out}", ...workers),
    );
    await time("ocipart pull (one-file artifact)", ocipart("pull", ref, "{out}", ...workers));
    if (SKOPEO !== undefined) {
      await time("skopeo copy (one stream)", [
        SKOPEO,
        "copy",
        "--quiet",
        "--src-tls-verify=false",
        `docker://${ref}`,
        `dir:${out}/skopeo`,
      ]);
    }
    for (const peer of peers) await time(`${peer.name} pull (one stream)`, peer.pull(ref, out));
  }

  // Kill at half the blob fetched, then the same command.
  await clean(out);
  await Deno.mkdir(out);
  const blobPull = ocipart(
    "blob",
    "pull",
    `${proxy.host}/bench/file@${digest}`,
    `${out}/data.bin`,
    ...workers,
    "--json",
  );
  proxy.reset();
  const killed = await killWhen(blobPull, () => proxy.bytes >= SIZE / 2);
  const atKill = proxy.bytes;
  const kept = (await Deno.stat(`${out}/data.bin.blob-partial`)).size;
  proxy.reset();
  const rerun = await measure(blobPull);
  ok(rerun, "blob pull after the kill");
  const refetched = proxy.bytes;
  const report = JSON.parse(rerun.stdout) as { bytesFetched: number; bytesResumed: number };

  // Version 2 over version 1: one part of sixteen changed.
  await clean(out);
  await Deno.mkdir(out);
  ok(await measure(ocipart("pull", `${host}/bench/parted:v1`, out)), "pull v1");
  proxy.reset();
  const reuse = await measure(
    ocipart("pull", `${proxy.host}/bench/parted:v2`, out, "--overwrite", "--json", ...workers),
  );
  ok(reuse, "pull v2 --overwrite");
  const reused = proxy.bytes;

  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  const pct = (n: number) => `${(100 * n / SIZE).toFixed(1)} %`;
  console.log(
    `\n${mib(SIZE)} blob, ${RATE_MBIT} mbit (${RATE_MBIT / 8} MB/s) per connection, ` +
      `${WORKERS} workers, ${RUNS} run(s), medians`,
  );
  // Other work on the machine takes the cores these pulls need (the one-stream tools need little).
  const load = `${loadAtStart} at the start, ${Deno.loadavg()[0].toFixed(1)} at the end`;
  console.log(`CPU: ${cpu}; load average ${load} (${navigator.hardwareConcurrency} cores)`);
  console.log(peersNote(peers));
  if (SKOPEO === undefined) console.log("# skipped skopeo: not installed");
  const oneStream = median(
    Object.entries(runs).filter(([name]) => name.includes("one stream")).map(([, s]) => median(s)),
  );
  console.log(
    "\n| command | each run, s | median s | vs one stream (median of the one-stream tools) |" +
      "\n|---|---|---|---|",
  );
  for (const [name, seconds] of Object.entries(runs)) {
    const s = median(seconds);
    const target = name.startsWith("ocipart") ? (s / oneStream <= 0.2 ? " (≤ 0.2× met)" : "") : "";
    const ratio = Number.isFinite(oneStream) ? `${(s / oneStream).toFixed(2)}×` : "—";
    const each = seconds.map((t) => t.toFixed(1)).join(", ");
    console.log(`| ${name} | ${each} | ${s.toFixed(1)} | ${ratio}${target} |`);
  }
  console.log(
    `\nkill -9 of \`blob pull\` once ${mib(atKill)} (${pct(atKill)}) had passed the proxy ` +
      `(exit ${killed.signal ?? killed.code}); the partial file held ${mib(kept)} (${pct(kept)}).`,
  );
  console.log(
    `the same command again: ${mib(refetched)} through the proxy (${
      pct(refetched)
    }; target ≤ 55 %), ` +
      `its report: fetched ${mib(report.bytesFetched)}, resumed ${mib(report.bytesResumed)}; ` +
      `${rerun.wallSeconds.toFixed(1)} s.`,
  );
  console.log(
    `pull --overwrite of version 2 over version 1 (1 part of ${PARTS} changed): ` +
      `${mib(reused)} through the proxy, ${(PARTS * reused / SIZE).toFixed(2)}/${PARTS} ` +
      `(target ≤ 1.1/${PARTS}); ${reuse.wallSeconds.toFixed(1)} s.`,
  );
} finally {
  await proxy.close();
  await registry.stop();
  await clean(dir);
}

/**
 * Puts the manifest of a one-file artifact as `oras push` writes it (an empty config, one
 * `layer.v1.tar` layer titled `data.bin`) over a blob already pushed; returns its reference.
 */
async function putOneFileManifest(
  host: string,
  repository: string,
  tag: string,
  layer: { digest: string; size: number },
): Promise<string> {
  const config = new TextEncoder().encode("{}");
  const configDigest = sha256Digest(config);
  const start = await fetch(`http://${host}/v2/${repository}/blobs/uploads/`, { method: "POST" });
  await start.body?.cancel();
  const location = new URL(start.headers.get("location")!, `http://${host}`);
  location.searchParams.set("digest", configDigest);
  const put = await fetch(location, { method: "PUT", body: config });
  await put.body?.cancel();
  if (put.status !== 201) throw new Error(`config upload: status ${put.status}`);
  const mediaType = "application/vnd.oci.image.manifest.v1+json";
  const manifest = {
    schemaVersion: 2,
    mediaType,
    config: { mediaType: "application/vnd.oci.empty.v1+json", digest: configDigest, size: 2 },
    layers: [{
      mediaType: "application/vnd.oci.image.layer.v1.tar",
      ...layer,
      annotations: { "org.opencontainers.image.title": "data.bin" },
    }],
  };
  const answer = await fetch(`http://${host}/v2/${repository}/manifests/${tag}`, {
    method: "PUT",
    body: JSON.stringify(manifest),
    headers: { "content-type": mediaType },
  });
  await answer.body?.cancel();
  if (answer.status !== 201) throw new Error(`manifest upload: status ${answer.status}`);
  return `${host}/${repository}:${tag}`;
}

/** Rewrites the last of `parts` parts of `path` with other bytes. */
async function changeLastPart(path: string, size: number, parts: number): Promise<void> {
  const part = Math.ceil(size / parts);
  const start = part * (parts - 1);
  using file = await Deno.open(path, { write: true });
  await file.seek(start, Deno.SeekMode.Start);
  const bytes = new Uint8Array(Math.min(1 << 20, size - start)).fill(0x5a);
  for (let at = start; at < size; at += bytes.length) {
    let n = 0;
    const piece = bytes.subarray(0, Math.min(bytes.length, size - at));
    while (n < piece.length) n += await file.write(piece.subarray(n));
  }
}
