import type { IncomingMessage, ServerResponse } from "node:http";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { startLoopbackServer } from "../fixtures/loopback_server.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { LookAhead } from "../../src/blob/look_ahead.ts";
import { blob, collect } from "./_helpers.ts";
import { startStorageServer } from "./_storage_server.ts";

const KiB = 1024;

Deno.test("look-ahead: starts at two chunks, opens to the worker count, closes on a pile-up", () => {
  const lookAhead = new LookAhead(4);
  assertEquals(lookAhead.window, 2);
  assert(lookAhead.starved());
  assert(lookAhead.starved());
  assert(!lookAhead.starved(), "never beyond the worker count");
  assertEquals(lookAhead.window, 4);
  lookAhead.piledUp(1);
  assertEquals(lookAhead.window, 4, "one finished chunk ahead is no pile-up");
  lookAhead.piledUp(2);
  lookAhead.piledUp(3);
  lookAhead.piledUp(3);
  assertEquals(lookAhead.window, 2, "never below two");
  assertEquals(new LookAhead(1).window, 1);
});

/** Serves `bytes` by range, trickling each answer (16 KiB every 10 ms per connection). */
async function startTrickleServer(bytes: Uint8Array) {
  let active = 0;
  let maxActive = 0;
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    active++;
    maxActive = Math.max(maxActive, active);
    try {
      const [, a, b] = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? "") ?? [];
      const start = a === undefined ? 0 : Number(a);
      const end = b ? Math.min(Number(b), bytes.length - 1) : bytes.length - 1;
      res.writeHead(a === undefined ? 200 : 206, {
        "content-length": String(end - start + 1),
        "accept-ranges": "bytes",
        ...(a === undefined ? {} : { "content-range": `bytes ${start}-${end}/${bytes.length}` }),
      });
      for (let at = start; at <= end && !res.destroyed; at += 16 * KiB) {
        await new Promise((r) => setTimeout(r, 10));
        res.write(bytes.subarray(at, Math.min(end + 1, at + 16 * KiB)));
      }
      await new Promise<void>((resolve) => res.end(resolve));
    } finally {
      active--;
    }
  };
  const server = await startLoopbackServer(serve);
  return {
    host: server.host,
    get maxActive() {
      return maxActive;
    },
    [Symbol.asyncDispose]: () => server.close(),
  };
}

Deno.test("parallel pull: where each connection is slow, every worker fetches at once", async () => {
  const { bytes, digest } = blob(8 * 64 * KiB, 11);
  await using server = await startTrickleServer(bytes);
  using client = new BlobClient({
    plainHttp: true,
    parallelPull: { workers: 4, chunkSize: 64 * KiB },
  });
  assertEquals(await collect(await client.pull(`${server.host}/la/x`, digest)), bytes);
  assertEquals(server.maxActive, 4);
});

Deno.test("parallel pull: a consumer slower than the network keeps one chunk ahead", async () => {
  const chunkSize = 64 * KiB;
  const { bytes, digest } = blob(8 * chunkSize, 12);
  await using server = await startStorageServer({
    blobs: new Map([[`/v2/la/y/blobs/${digest}`, bytes]]),
  });
  using client = new BlobClient({ plainHttp: true, parallelPull: { workers: 4, chunkSize } });
  const reader = (await client.pull(`${new URL(server.url).host}/la/y`, digest)).getReader();
  const parts: Uint8Array[] = [];
  let consumed = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    consumed += value.byteLength;
    // Slower than loopback: the next bytes are always waiting when the consumer comes back.
    await new Promise((r) => setTimeout(r, 20));
    const emitting = Math.floor((consumed - 1) / chunkSize);
    assert(
      server.log.length <= emitting + 2,
      `${server.log.length} chunks requested while emitting chunk ${emitting}`,
    );
  }
  assertEquals(new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer()), bytes);
  assertEquals(server.log.length, 8, "one request per chunk");
});
