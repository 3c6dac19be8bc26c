/**
 * Transport benchmark: uploads a 1 GiB file with one PUT through `HttpTransport` + `fileBody`
 * and with `curl -T`, to (a) a loopback sink that discards the bytes and answers 201 and (b) the
 * real Distribution registry (monolithic `POST` + `PUT ?digest=`). Each client runs as its own
 * process so its CPU seconds (user + sys) and peak RSS can be measured; medians of 3 runs.
 *
 * Usage: `deno run -A bench/transport_bench.ts [--size-mib N] [--runs N]`; prints a markdown
 * table and the targets (client CPU ≤ 1.5 × curl's, peak RSS ≤ 80 MiB).
 *
 * @module
 */
import { createHash, randomFillSync } from "node:crypto";
import { measure, type Measurement, median } from "./_measure.ts";
import { cpuLine } from "./_cpu.ts";
import { startRegistry } from "../tests/fixtures/registry.ts";

const MiB = 1 << 20;

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const sizeMiB = flag("--size-mib", 1024);
const runs = flag("--runs", 3);
const size = sizeMiB * MiB;

/** Writes `size` pseudo-random bytes; returns the sha256 digest. */
async function writeFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  const block = randomFillSync(new Uint8Array(4 * MiB));
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  for (let written = 0, round = 0; written < size; round++) {
    block[0] = round & 0xff;
    block[1] = (round >> 8) & 0xff;
    const piece = block.subarray(0, Math.min(block.byteLength, size - written));
    hash.update(piece);
    for (let offset = 0; offset < piece.byteLength;) {
      offset += await file.write(piece.subarray(offset));
    }
    written += piece.byteLength;
  }
  return `sha256:${hash.digest("hex")}`;
}

/** A raw TCP server that reads each request's declared body, discards it, answers 201. */
function startSink(): { url: string; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const encoder = new TextEncoder();
  const serve = async (conn: Deno.Conn) => {
    const buffer = new Uint8Array(4 * MiB);
    let filled = 0;
    try {
      for (;;) {
        let headEnd = -1;
        while (headEnd < 0) {
          const n = await conn.read(buffer.subarray(filled));
          if (n === null) return;
          filled += n;
          headEnd = new TextDecoder().decode(buffer.subarray(0, filled)).indexOf("\r\n\r\n");
        }
        const head = new TextDecoder().decode(buffer.subarray(0, headEnd)).toLowerCase();
        const length = Number(/\r\ncontent-length:\s*(\d+)/.exec(head)?.[1] ?? "0");
        if (/\r\nexpect:\s*100-continue/.test(head)) {
          await conn.write(encoder.encode("HTTP/1.1 100 Continue\r\n\r\n"));
        }
        let remaining = length - (filled - (headEnd + 4));
        filled = 0;
        while (remaining > 0) {
          const n = await conn.read(buffer);
          if (n === null) return;
          remaining -= n;
        }
        // Bytes past the body (a pipelined request) are not expected from these clients.
        await conn.write(encoder.encode("HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n"));
      }
    } catch {
      // the client went away
    } finally {
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
  (async () => {
    for await (const conn of listener) serve(conn);
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  return { url: `http://127.0.0.1:${port}/sink`, close: () => listener.close() };
}

interface Row {
  target: string;
  client: string;
  runs: Measurement[];
}

function check(m: Measurement, what: string): Measurement {
  if (m.code !== 0 || m.stdout.trim() !== "201") {
    throw new Error(`${what} failed (exit ${m.code}): ${m.stdout.trim()} ${m.stderr.slice(-500)}`);
  }
  return m;
}

const dir = await Deno.makeTempDir({ prefix: "transport-bench-" });
const sink = startSink();
const registry = await startRegistry();
try {
  const file = `${dir}/blob.bin`;
  const digest = await writeFile(file);
  const client = new URL("./_upload_client.ts", import.meta.url).pathname;
  const ours = (url: string) => measure([Deno.execPath(), "run", "-A", client, url, file]);
  const curl = (url: string) =>
    measure([
      "curl",
      "-sS",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}\n",
      "-T",
      file,
      "-X",
      "PUT",
      "-H",
      "Content-Type: application/octet-stream",
      "-H",
      "Expect:",
      url,
    ]);
  // A fresh upload session per PUT; the blob is deleted after each run so every PUT commits.
  const session = async (): Promise<string> => {
    const res = await fetch(`${registry.url}/v2/bench/blobs/uploads/`, {
      method: "POST",
      headers: { "content-length": "0" },
    });
    await res.body?.cancel();
    if (res.status !== 202) throw new Error(`POST upload: status ${res.status}`);
    const location = new URL(res.headers.get("location")!, registry.url);
    location.searchParams.set("digest", digest);
    return location.href;
  };
  const dropBlob = async () => {
    const res = await fetch(`${registry.url}/v2/bench/blobs/${digest}`, { method: "DELETE" });
    await res.body?.cancel();
  };

  const rows: Row[] = [
    { target: "loopback sink", client: "HttpTransport", runs: [] },
    { target: "loopback sink", client: "curl -T", runs: [] },
    { target: "Distribution 2.8", client: "HttpTransport", runs: [] },
    { target: "Distribution 2.8", client: "curl -T", runs: [] },
  ];
  for (let run = 0; run < runs; run++) {
    rows[0].runs.push(check(await ours(sink.url), "HttpTransport → sink"));
    rows[1].runs.push(check(await curl(sink.url), "curl → sink"));
    rows[2].runs.push(check(await ours(await session()), "HttpTransport → registry"));
    await dropBlob();
    rows[3].runs.push(check(await curl(await session()), "curl → registry"));
    await dropBlob();
  }

  const fmt = (n: number, digits = 2) => n.toFixed(digits);
  console.log(`\n### Upload of ${sizeMiB} MiB in one PUT (median of ${runs})\n`);
  console.log(`CPU: ${await cpuLine()}\n`);
  console.log("| target | client | wall s | MB/s | client CPU s (user+sys) | peak RSS MiB |");
  console.log("|---|---|---:|---:|---:|---:|");
  const medians = rows.map((row) => {
    const wall = median(row.runs.map((m) => m.wallSeconds));
    const cpu = median(row.runs.map((m) => m.cpuSeconds));
    const rss = median(row.runs.map((m) => m.peakRssMiB));
    console.log(
      `| ${row.target} | ${row.client} | ${fmt(wall)} | ${fmt(size / 1e6 / wall, 0)} | ${
        fmt(cpu)
      } | ${fmt(rss, 1)} |`,
    );
    return { cpu, rss };
  });
  console.log("");
  for (const [i, target] of [[0, "loopback sink"], [2, "Distribution 2.8"]] as const) {
    const ratio = medians[i].cpu / medians[i + 1].cpu;
    const cpuOk = ratio <= 1.5;
    const rssOk = medians[i].rss <= 80;
    console.log(
      `- ${target}: client CPU ${fmt(ratio)} × curl (target ≤ 1.5: ${cpuOk ? "met" : "MISSED"}), ` +
        `peak RSS ${fmt(medians[i].rss, 1)} MiB (target ≤ 80: ${rssOk ? "met" : "MISSED"})`,
    );
  }
} finally {
  sink.close();
  await registry.stop();
  await Deno.remove(dir, { recursive: true });
}
