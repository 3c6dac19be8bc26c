import {
  assert,
  assertEquals,
  assertRejects,
  assertStrictEquals,
  assertThrows,
} from "../fixtures/assert.ts";
import { createHash, randomFillSync } from "node:crypto";
import { FILE_BODY_CHUNK_SIZE, fileBody, fileBodyRange } from "../../src/transport/file_body.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { BodyLengthError, LocalFileError } from "../../src/errors/kinds.ts";
import { startRawServer } from "./_raw_server.ts";
import { tempDir } from "../fixtures/tmp.ts";

const MiB = 1 << 20;

/** Writes `size` pseudo-random bytes to `path` and returns their sha256 hex. */
async function writeFile(path: string, size: number): Promise<string> {
  const hash = createHash("sha256");
  const block = randomFillSync(new Uint8Array(4 * MiB));
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  for (let written = 0, round = 0; written < size; round++) {
    block[0] = round & 0xff; // no two blocks alike
    const piece = block.subarray(0, Math.min(block.byteLength, size - written));
    hash.update(piece);
    for (let offset = 0; offset < piece.byteLength;) {
      offset += await file.write(piece.subarray(offset));
    }
    written += piece.byteLength;
  }
  return hash.digest("hex");
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

function put(url: string, body: ReadableStream<Uint8Array>, length: number): Request {
  return new Request(url, {
    method: "PUT",
    body,
    headers: { "content-length": String(length), "content-type": "application/octet-stream" },
    duplex: "half",
  } as RequestInit);
}

Deno.test("fileBody streams exactly the range in 1 MiB chunks", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/data.bin`;
  await writeFile(path, 5 * MiB);
  const all = await Deno.readFile(path);
  const offset = 12345;
  const length = 3 * MiB + 7;
  const chunks = await collect(fileBody(path, offset, length));
  assertStrictEquals(chunks[0].byteLength, FILE_BODY_CHUNK_SIZE);
  assert(chunks.every((c) => c.byteLength <= FILE_BODY_CHUNK_SIZE));
  const joined = new Uint8Array(await new Blob(chunks as BlobPart[]).arrayBuffer());
  assertEquals(joined, all.subarray(offset, offset + length));
  // A fresh call re-reads for a retry.
  const again = await collect(fileBody(path, offset, length));
  assertStrictEquals(again.reduce((n, c) => n + c.byteLength, 0), length);
});

Deno.test("fileBody: an empty range closes at once; bad arguments throw", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/data.bin`;
  await writeFile(path, 10);
  assertEquals(await collect(fileBody(path, 10, 0)), []);
  assertThrows(() => fileBody(path, -1, 1), RangeError);
  assertThrows(() => fileBody(path, 0, 1.5), RangeError);
  assertThrows(() => fileBody("", 0, 1), TypeError);
});

Deno.test("fileBody opens the file lazily and errors with LocalFileError", async () => {
  await using dir = await tempDir();
  const missing = fileBody(`${dir.path}/missing.bin`, 0, 10); // constructing opens nothing
  await assertRejects(collect(missing), LocalFileError);
  const path = `${dir.path}/short.bin`;
  await writeFile(path, MiB + 10);
  const err = await collect(fileBody(path, 0, 2 * MiB)).then(() => undefined, (e) => e);
  assert(err instanceof LocalFileError, String(err));
  assertStrictEquals(err.message, "file body: file ended before the requested range");
});

Deno.test("a Request keeps the identity of a fileBody stream, so the transport can see it", () => {
  const body = fileBody("./unused.bin", 4, 8);
  const request = put("http://127.0.0.1:9/", body, 8);
  assertStrictEquals(request.body, body);
  assertEquals(fileBodyRange(request.body), { path: "./unused.bin", offset: 4, length: 8 });
  assertStrictEquals(fileBodyRange(new ReadableStream()), undefined);
});

Deno.test("256 MiB from a file arrives whole with content-length and no chunking", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/big.bin`;
  const size = 256 * MiB;
  const sha = await writeFile(path, size);
  const server = startRawServer();
  const transport = new HttpTransport();
  try {
    const res = await transport.fetch(put(`${server.origin}/big`, fileBody(path, 0, size), size));
    assertStrictEquals(res.status, 200);
    await res.body?.cancel();
    const [request] = server.requests;
    assertStrictEquals(request.headers["content-length"], String(size));
    assertStrictEquals(request.headers["transfer-encoding"], undefined);
    assertStrictEquals(request.bodyBytes, size);
    assertStrictEquals(request.complete, true);
    assertStrictEquals(request.sha256, sha);

    // The same bytes through the generic stream path (the stream hidden behind a transform).
    const hidden = fileBody(path, 0, size).pipeThrough(new TransformStream());
    const res2 = await transport.fetch(put(`${server.origin}/big2`, hidden, size));
    assertStrictEquals(res2.status, 200);
    await res2.body?.cancel();
    assertStrictEquals(server.requests[1].bodyBytes, size);
    assertStrictEquals(server.requests[1].sha256, sha);
    assertStrictEquals(server.requests[1].headers["transfer-encoding"], undefined);
  } finally {
    transport.close();
    await server.close();
  }
});

Deno.test("a fileBody whose range disagrees with content-length fails before it is sent", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/data.bin`;
  await writeFile(path, 4 * MiB);
  const server = startRawServer();
  const transport = new HttpTransport();
  try {
    for (const declared of [4 * MiB - 1, 4 * MiB + 1]) {
      const err = await transport.fetch(put(server.origin, fileBody(path, 0, 4 * MiB), declared))
        .then(() => undefined, (e) => e);
      assert(err instanceof BodyLengthError, String(err));
    }
    await server.closed();
    assert(server.requests.every((r) => !r.complete));
  } finally {
    transport.close();
    await server.close();
  }
});

Deno.test("a file shorter than its fileBody range fails the upload; the server never gets it whole", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/data.bin`;
  await writeFile(path, 3 * MiB);
  const server = startRawServer();
  const transport = new HttpTransport();
  try {
    const err = await transport.fetch(put(server.origin, fileBody(path, 0, 4 * MiB), 4 * MiB))
      .then(() => undefined, (e) => e);
    assert(err instanceof LocalFileError, String(err));
    await server.closed();
    assertStrictEquals(server.requests.length, 1);
    assertStrictEquals(server.requests[0].complete, false);
  } finally {
    transport.close();
    await server.close();
  }
});

Deno.test("fileBody's onBytes counts every byte on the direct path and the stream path", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/counted.bin`;
  const size = 5 * MiB + 123;
  await writeFile(path, size);
  const server = startRawServer();
  const transport = new HttpTransport();
  try {
    let direct = 0;
    const body = fileBody(path, 0, size, { onBytes: (n) => direct += n });
    assertStrictEquals(typeof fileBodyRange(body)?.onBytes, "function");
    const res = await transport.fetch(put(`${server.origin}/direct`, body, size));
    await res.body?.cancel();
    assertStrictEquals(direct, size);

    let streamed = 0;
    const hidden = fileBody(path, 7, size - 7, { onBytes: (n) => streamed += n })
      .pipeThrough(new TransformStream());
    const res2 = await transport.fetch(put(`${server.origin}/stream`, hidden, size - 7));
    await res2.body?.cancel();
    assertStrictEquals(streamed, size - 7);
    assertEquals(server.requests.map((r) => r.bodyBytes), [size, size - 7]);
    assertThrows(() => fileBody(path, 0, 1, { onBytes: 5 as never }), TypeError);
  } finally {
    transport.close();
    await server.close();
  }
});
