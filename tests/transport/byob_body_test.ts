import type { IncomingMessage, ServerResponse } from "node:http";
import { createHash } from "node:crypto";
import { assert, assertEquals, assertInstanceOf } from "../fixtures/assert.ts";
import { NetworkError, StallError } from "../../src/errors/kinds.ts";
import { type ByobSource, openByob, relayBody } from "../../src/transport/byob_body.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { layeredFetch } from "../../src/transport/layers/layered_fetch.ts";
import { startLoopbackServer } from "../fixtures/loopback_server.ts";
import { recordErrors } from "../reliability/leak_scan.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function serve(handler: Handler) {
  const server = await startLoopbackServer((req, res) => Promise.resolve(handler(req, res)));
  return { url: `http://${server.host}/x`, [Symbol.asyncDispose]: () => server.close() };
}

/** Reads a whole body through one reused buffer; returns the bytes' sha256 and count. */
async function readAll(
  source: ByobSource,
): Promise<{ digest: string; bytes: number; reads: number }> {
  const hash = createHash("sha256");
  let buffer = new ArrayBuffer(64 << 10);
  let bytes = 0;
  let reads = 0;
  for (;;) {
    const { done, value } = await source.read(new Uint8Array(buffer));
    if (done) break;
    reads++;
    hash.update(value);
    bytes += value.byteLength;
    buffer = value.buffer as ArrayBuffer;
  }
  return { digest: hash.digest("hex"), bytes, reads };
}

const payload = new Uint8Array(3 << 20).map((_, i) => (i * 13) & 0xff);

Deno.test("byob body: reaches the runtime body through the transport and the stall guard", async () => {
  await using server = await serve((_req, res) => {
    res.writeHead(200, { "content-length": String(payload.length) });
    res.end(payload);
  });
  const transport = new HttpTransport();
  try {
    const fetch = layeredFetch(transport.fetch, { stallTimeoutMs: 5000 });
    const response = await fetch(new Request(server.url));
    const source = openByob(response.body!);
    // On Deno the runtime's body is a byte stream; elsewhere the caller falls back.
    if (typeof Deno === "undefined") return;
    assert(source !== undefined, "no bring-your-own-buffer read");
    assert(response.body!.locked, "the wrapper stays locked while the read is open");
    const got = await readAll(source);
    assertEquals(got.bytes, payload.length);
    assertEquals(got.digest, createHash("sha256").update(payload).digest("hex"));
  } finally {
    transport.close();
  }
});

Deno.test("byob body: a cut body fails with the transport's NetworkError", async () => {
  await using server = await serve((_req, res) => {
    res.writeHead(200, { "content-length": String(payload.length) });
    res.write(payload.subarray(0, 100_000), () => res.socket?.destroy());
  });
  const transport = new HttpTransport();
  try {
    const response = await layeredFetch(transport.fetch, {})(new Request(server.url));
    const source = openByob(response.body!)!;
    const err = await readAll(source).then(() => undefined, (e) => e);
    assertInstanceOf(err, NetworkError);
    recordErrors("byob_body", [err]);
  } finally {
    transport.close();
  }
});

Deno.test("byob body: the stall watchdog applies to bring-your-own-buffer reads", async () => {
  await using server = await serve((_req, res) => {
    res.writeHead(200, { "content-length": "1000" });
    res.write(new Uint8Array(100)); // then silence, connection kept open
  });
  const transport = new HttpTransport();
  try {
    const response = await layeredFetch(transport.fetch, { stallTimeoutMs: 150 })(
      new Request(server.url),
    );
    const source = openByob(response.body!)!;
    const err = await readAll(source).then(() => undefined, (e) => e);
    assertInstanceOf(err, StallError);
    recordErrors("byob_body", [err]);
  } finally {
    transport.close();
  }
});

Deno.test("byob body: a relay over a default stream stays one, for a default reader", async () => {
  const plain = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array([1, 2, 3]));
      controller.close();
    },
  });
  const relayed = relayBody(plain, { read: (next) => next() });
  assertEquals(openByob(relayed), undefined);
  assert(!relayed.locked && !plain.locked, "nothing is read before the first read");
  const { value } = await relayed.getReader().read();
  assertEquals(value, new Uint8Array([1, 2, 3]));
});

Deno.test("byob body: a relay over a byte stream reads into the caller's buffer through its rules", async () => {
  const source = new ReadableStream({
    type: "bytes",
    pull(controller: ReadableByteStreamController) {
      const request = controller.byobRequest!;
      new Uint8Array(request.view!.buffer, request.view!.byteOffset, request.view!.byteLength)
        .fill(9);
      request.respond(request.view!.byteLength);
    },
  });
  let reads = 0;
  let cancelled: unknown;
  const relayed = relayBody(source, {
    read: (next) => {
      reads++;
      return next();
    },
    cancel: (reason) => (cancelled = reason),
    maxRead: 1000,
  });
  const byob = openByob(relayed)!;
  assertEquals(openByob(relayed), undefined, "a second read cannot open");
  const buffer = new ArrayBuffer(4000);
  const first = await byob.read(new Uint8Array(buffer));
  assertEquals(first.value?.byteLength, 1000, "at most maxRead bytes per read");
  assertEquals(first.value?.buffer.byteLength, 4000, "into the caller's buffer");
  assertEquals(first.value?.[999], 9);
  await byob.cancel("stop");
  assertEquals(cancelled, "stop");
  assertEquals(reads, 1);
});

Deno.test("byob body: a relay hands a default reader chunks no larger than maxRead, each through its rules", async () => {
  const relayed = relayBody(new Response(new Uint8Array(2500).fill(7)).body!, {
    read: async (next) => {
      const result = await next();
      if (!result.done) sizes.push(result.value.byteLength);
      return result;
    },
    maxRead: 1000,
  });
  const sizes: number[] = [];
  const got = new Uint8Array(await new Response(relayed).arrayBuffer());
  assertEquals(got, new Uint8Array(2500).fill(7));
  assertEquals(sizes, [1000, 1000, 500]);
});

Deno.test("byob body: a relay over a byte stream hands a default reader every byte of a chunk it cuts", async () => {
  const bytes = new Uint8Array(2500).map((_, i) => i & 0xff);
  const source = new ReadableStream({
    type: "bytes",
    start(controller) {
      controller.enqueue(bytes.slice());
      controller.close();
    },
  });
  const relayed = relayBody(source, { read: (next) => next(), maxRead: 1000 });
  const got = new Uint8Array(await new Response(relayed).arrayBuffer());
  assertEquals(got, bytes);
});

Deno.test("byob body: layers over an unread relay read as one stream, each rule once per read, the inner nearest the source", async () => {
  const calls: string[] = [];
  const layer = (name: string, maxRead?: number) => ({
    read: async (next: () => Promise<ReadableStreamReadResult<Uint8Array>>) => {
      calls.push(`${name} in`);
      const result = await next();
      calls.push(`${name} out`);
      return result;
    },
    opened: () => calls.push(`${name} opened`),
    ...(maxRead === undefined ? {} : { maxRead }),
  });
  const source = new ReadableStream({
    type: "bytes",
    start(controller) {
      controller.enqueue(new Uint8Array(3000).fill(5));
      controller.close();
    },
  });
  const inner = relayBody(source, layer("inner", 1000));
  const outer = relayBody(inner, layer("outer"));
  assert(inner.locked, "the inner relay is taken over");
  const byob = openByob(outer)!;
  const first = await byob.read(new Uint8Array(4000));
  assertEquals(first.value?.byteLength, 1000, "the inner layer's limit holds");
  assertEquals(calls, [
    "inner opened",
    "outer opened",
    "outer in",
    "inner in",
    "inner out",
    "outer out",
  ]);

  // A relay that was read already is wrapped as a stream of its own.
  const read = relayBody(new Response("abcdef").body!, layer("read"));
  const reader = read.getReader();
  await reader.read();
  reader.releaseLock();
  const over = relayBody(read, layer("over"));
  assert(!read.locked, "nothing is taken over before the first read");
  await new Response(over).arrayBuffer();
});
