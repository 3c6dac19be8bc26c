/**
 * Cancellation on a real slow link: nginx `limit_rate 4m` in front of Distribution, 64 MiB
 * parts (about 16 s each), so an abort that does not reach the body in flight shows as a
 * transfer that runs on for many seconds. A forced `gc()` before each abort makes sure the
 * abort does not depend on request or response objects staying reachable.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startNginx } from "../fixtures/nginx.ts";
import { startThrottledRegistry } from "../fixtures/slow_link.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { BlobClient } from "../../src/blob/client.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { fileBody } from "../../src/transport/file_body.ts";
import { blob } from "../blob/_helpers.ts";

const MiB = 1024 * 1024;
const PART = 64 * MiB;
// The bound a user relies on is 1 s; the rest is slack for a loaded 2-core machine. A part
// takes about 16 s on this link, so a missed abort cannot pass.
const STOP_BOUND_MS = 3_000;

function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  assert(gc !== undefined, "run the tests with --v8-flags=--expose-gc");
  gc();
  gc();
}

registryTest(
  "BlobClient.pull: a signal fired mid-body (after gc) errors the stream with its reason within 1 s",
  { needs: ["nginx"] },
  async () => {
    await using link = await startThrottledRegistry();
    const { bytes, digest } = blob(PART, 7);
    {
      using direct = new BlobClient({ plainHttp: true });
      await direct.push(`${link.registry.host}/cancel/blob`, digest, bytes.length, bytes);
    }
    using client = new BlobClient({ plainHttp: true });
    const controller = new AbortController();
    const reason = new Error("caller stopped");
    const stream = await client.pull(`${link.nginx.host}/cancel/blob`, digest, {
      signal: controller.signal,
    });
    let received = 0;
    let firedAt = 0;
    let scheduled = false;
    let error: unknown;
    try {
      for await (const chunk of stream) {
        received += chunk.byteLength;
        if (!scheduled && received >= 4 * MiB) {
          scheduled = true;
          // Fired from a timer while the reader waits for the next chunk, as a user's would be.
          setTimeout(() => {
            collectGarbage();
            firedAt = performance.now();
            controller.abort(reason);
          }, 200);
        }
      }
    } catch (err) {
      error = err;
    }
    const stoppedAfter = performance.now() - firedAt;
    assert(firedAt > 0, "the abort never fired");
    assertEquals(error, reason, "the stream errors with the signal's reason");
    assert(received < PART, "the body did not complete");
    assert(stoppedAfter < STOP_BOUND_MS, `stopped ${Math.round(stoppedAfter)} ms after the abort`);
  },
);

registryTest(
  "PartedClient.pull with AbortSignal.timeout(2000) rejects within 1 s of firing; a rerun completes",
  { needs: ["nginx"] },
  async () => {
    await using link = await startThrottledRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    const digest = await writePatternFile(src, 2 * PART);
    {
      using direct = new PartedClient({ plainHttp: true });
      await direct.push(`${link.registry.host}/cancel/parted:v1`, fromFile(src), {
        partSize: PART,
      });
    }
    const out = `${dir.path}/out.bin`;
    using client = new PartedClient({ plainHttp: true });
    const started = performance.now();
    const signal = AbortSignal.timeout(2_000);
    // A collection while the parts are in flight must not detach the abort from them.
    const collector = setTimeout(collectGarbage, 1_500);
    const err = await client.pull(`${link.nginx.host}/cancel/parted:v1`, toFile(out), { signal })
      .then(() => undefined, (e) => e);
    clearTimeout(collector);
    const elapsed = performance.now() - started;
    assert(signal.aborted && err === signal.reason, `rejected with the signal's reason: ${err}`);
    assert(elapsed < 2_000 + STOP_BOUND_MS, `rejected ${Math.round(elapsed)} ms after the start`);
    await Deno.stat(`${out}.parted-partial`); // kept for resume

    await client.pull(`${link.registry.host}/cancel/parted:v1`, toFile(out));
    assertEquals(await sha256File(out), digest);
  },
);

/** A server that accepts connections and never reads them: an upload fills the socket. */
function deafServer(): { url: string; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) conns.push(conn);
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/upload`,
    close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
    },
  };
}

for (const kind of ["file range", "stream"] as const) {
  Deno.test(`an upload (${kind}) blocked on a peer that stopped reading ends within 1 s of the abort`, async () => {
    await using dir = await tempDir();
    const path = `${dir.path}/body.bin`;
    await writePatternFile(path, PART);
    const server = deafServer();
    const transport = new HttpTransport();
    try {
      const controller = new AbortController();
      const body = kind === "file range"
        ? fileBody(path, 0, PART)
        : (await Deno.open(path)).readable;
      const reason = new Error("caller stopped");
      const pending = transport.fetch(
        new Request(server.url, {
          method: "PUT",
          body,
          headers: { "content-length": String(PART) },
          signal: controller.signal,
          duplex: "half",
        } as RequestInit),
      ).then(() => undefined, (e) => e);
      await new Promise((r) => setTimeout(r, 500));
      collectGarbage();
      const firedAt = performance.now();
      controller.abort(reason);
      const err = await pending;
      const stoppedAfter = performance.now() - firedAt;
      assertEquals(err, reason);
      assert(stoppedAfter < STOP_BOUND_MS, `stopped ${Math.round(stoppedAfter)} ms after abort`);
    } finally {
      transport.close();
      server.close();
    }
  });
}

registryTest(
  "PartedClient.pull from a slow storage redirect rejects within 1 s of the signal (after gc)",
  { needs: ["nginx"] },
  async () => {
    await using storage = await tempDir();
    await using files = await startFileServer({ root: storage.path });
    await using nginx = await startNginx({
      upstream: files.url,
      clientMaxBodySize: "0",
      limitRate: "4m",
    });
    await using registry = await startRegistry({
      storageDir: storage.path,
      redirect: { baseUrl: nginx.url },
    });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    await writePatternFile(src, PART);
    using client = new PartedClient({ plainHttp: true });
    const reference = `${registry.host}/cancel/redirected:v1`;
    await client.push(reference, fromFile(src), { partSize: PART });
    const out = `${dir.path}/out.bin`;
    const signal = AbortSignal.timeout(2_000);
    const collector = setTimeout(collectGarbage, 1_500);
    const started = performance.now();
    const err = await client.pull(reference, toFile(out), { signal }).then(
      () => undefined,
      (e) => e,
    );
    clearTimeout(collector);
    const elapsed = performance.now() - started;
    assert(signal.aborted && err === signal.reason, `rejected with the signal's reason: ${err}`);
    assert(elapsed < 2_000 + STOP_BOUND_MS, `rejected ${Math.round(elapsed)} ms after the start`);
    const blobReads = files.log.filter((r) => r.path.includes("/blobs/sha256/"));
    assert(blobReads.some((r) => r.method === "GET"), "the part was read from storage");
  },
);

registryTest(
  "PartedClient.push with AbortSignal.timeout(2000) rejects within 1 s of firing mid-upload",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    await writePatternFile(src, PART);
    // The part's PUT is not read for 60 s: its body fills the socket and the upload waits.
    proxy.fault({ method: "PUT", path: /\/blobs\/uploads\//, delayMs: 60_000 });
    using client = new PartedClient({ plainHttp: true });
    const signal = AbortSignal.timeout(2_000);
    const collector = setTimeout(collectGarbage, 1_500);
    const started = performance.now();
    const err = await client.push(`${proxy.host}/cancel/pushed:v1`, fromFile(src), {
      partSize: PART,
      signal,
    }).then(() => undefined, (e) => e);
    clearTimeout(collector);
    const elapsed = performance.now() - started;
    assert(signal.aborted && err === signal.reason, `rejected with the signal's reason: ${err}`);
    assert(elapsed < 2_000 + STOP_BOUND_MS, `rejected ${Math.round(elapsed)} ms after the start`);
    // Nothing half-done stands in the way of a rerun.
    await client.push(`${registry.host}/cancel/pushed:v1`, fromFile(src), { partSize: PART });
  },
);
