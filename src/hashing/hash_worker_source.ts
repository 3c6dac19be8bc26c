/**
 * The source of a hashing thread. CommonJS: the form `node:worker_threads` evaluates on every
 * runtime that has it.
 *
 * Two kinds of work share a thread, interleaved by its event loop: running hashes fed with
 * transferred buffers (each buffer is handed back once hashed, after feeding a second hash too
 * when the update names one in `also`) or with file ranges, and file ranges hashed on their own;
 * ranges are read with double-buffered 1 MiB reads (larger ones were no faster and cost each
 * thread 6 MiB more). A range checks
 * for a cancel between reads, so stopping one never needs the thread ended and another started,
 * and, when asked to report, says how many bytes each read hashed (a `hashed` message, which
 * owes no answer). A range read with a `fork` id also finds its written prefix (the scan's own
 * source is included) and keeps the prefix's hash as the running hash `fork`, which a download
 * then continues.
 *
 * @module
 */
import { HASH_READ_BYTES, readRange } from "./hash_range.ts";
import { PREFIX_BLOCK_BYTES, scanWrittenPrefix } from "./written_prefix.ts";

/**
 * Evaluated by `new Worker(source, { eval: true })`.
 *
 * @example Starting a hashing thread by hand
 * ```ts
 * import { Worker } from "node:worker_threads";
 * import { HASH_WORKER_SOURCE } from "./hash_worker_source.ts";
 * const worker = new Worker(HASH_WORKER_SOURCE, { eval: true });
 * worker.postMessage({ id: 1, op: "digest" });
 * const answer = await new Promise((resolve) => worker.once("message", resolve));
 * console.log(answer); // { id: 1, op: "digest", digest: "sha256:e3b0c442…" }
 * await worker.terminate();
 * ```
 */
export const HASH_WORKER_SOURCE: string = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const { open } = require("node:fs/promises");
const CHUNK = ${HASH_READ_BYTES};
const hashes = new Map();
const cancelled = new Set();
let buffers;
${scanWrittenPrefix.toString()}
${readRange.toString()}

function runningHash(id) {
  let hash = hashes.get(id);
  if (hash === undefined) {
    hash = createHash("sha256");
    hashes.set(id, hash);
  }
  return hash;
}

async function hashRange(id, { path, offset, size, into, fork, report }) {
  buffers ??= [new Uint8Array(CHUNK), new Uint8Array(CHUNK)];
  const handle = await open(path, "r");
  try {
    const hash = into === undefined ? createHash("sha256") : runningHash(into);
    const scan = fork === undefined ? undefined : scanWrittenPrefix(hash, ${PREFIX_BLOCK_BYTES});
    const outcome = await readRange(handle, buffers, offset, size, (bytes) => {
      (scan ?? hash).update(bytes);
      if (report) parentPort.postMessage({ id, op: "hashed", bytes: bytes.byteLength });
    }, () => cancelled.has(id));
    if (outcome === "stopped") return { cancelled: true };
    if (outcome === "short") return { error: "short" };
    if (scan !== undefined) {
      const { prefix, prefixHash } = scan.finish();
      hashes.set(fork, prefixHash);
      return { digest: "sha256:" + hash.digest("hex"), prefix, fork };
    }
    return into === undefined ? { digest: "sha256:" + hash.digest("hex") } : { digest: "" };
  } finally {
    await handle.close();
  }
}

parentPort.on("message", (data) => {
  const { id, op } = data;
  if (op === "update") {
    const bytes = new Uint8Array(data.buffer, 0, data.length);
    runningHash(id).update(bytes);
    if (data.also !== undefined) runningHash(data.also).update(bytes);
    parentPort.postMessage({ id, op: "recycle", buffer: data.buffer }, [data.buffer]);
  } else if (op === "reset" || op === "close") {
    hashes.delete(id);
  } else if (op === "digest") {
    const hash = hashes.get(id) ?? createHash("sha256");
    parentPort.postMessage({ id, op: "digest", digest: "sha256:" + hash.copy().digest("hex") });
  } else if (op === "range") {
    hashRange(id, data).then(
      (result) => parentPort.postMessage({ id, op: "range", ...result }),
      (err) => {
        const code = String(err?.code ?? "");
        parentPort.postMessage({ id, op: "range", error: "io", code });
      },
    ).finally(() => cancelled.delete(id));
  } else if (op === "cancel") {
    cancelled.add(id);
  }
});
`;
