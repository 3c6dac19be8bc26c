/**
 * File-range uploads through `HttpTransport` on Deno go out on a connection of their own,
 * written from the file: framing, answers, early answers, the peer guard, TLS, abort and
 * connection failures behave as on the node:http path.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { createHash } from "node:crypto";
import { NetworkError, PeerRefusedError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { fileBody } from "../../src/transport/file_body.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { response, startRawServer } from "./_raw_server.ts";
import { assertCertificateRefused, makeTestCa } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";

const MiB = 1 << 20;

function put(url: string, body: ReadableStream<Uint8Array>, length: number): Request {
  return new Request(url, {
    method: "PUT",
    body,
    headers: { "content-length": String(length), "content-type": "application/octet-stream" },
    duplex: "half",
  } as RequestInit);
}

async function patternFile(path: string, size: number): Promise<string> {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 7 + 3) & 0xff;
  await Deno.writeFile(path, bytes);
  return createHash("sha256").update(bytes).digest("hex");
}

async function listen(server: http.Server | https.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function stop(server: http.Server | https.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

Deno.test("fileBody uploads: exact framing; answers by length, chunks or close read whole", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/body.bin`;
  const size = 3 * MiB + 5;
  const sha = await patternFile(path, size);
  const server = startRawServer(async (request, writer) => {
    if (request.path === "/length") {
      await writer.write("HTTP/1.1 100 Continue\r\n\r\n");
      await writer.write(response(201, { location: "/done" }, "created"));
    } else if (request.path === "/chunked") {
      await writer.write(
        "HTTP/1.1 202 Accepted\r\ntransfer-encoding: chunked\r\n\r\n" +
          "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n",
      );
    } else {
      await writer.write("HTTP/1.1 200 OK\r\n\r\nuntil the end");
      writer.close();
    }
  });
  const transport = new HttpTransport();
  try {
    const answers: [number, string][] = [];
    for (const path_ of ["/length", "/chunked", "/close"]) {
      const res = await transport.fetch(
        put(`${server.origin}${path_}`, fileBody(path, 0, size), size),
      );
      answers.push([res.status, await res.text()]);
      if (path_ === "/length") assertStrictEquals(res.headers.get("location"), "/done");
    }
    assertEquals(answers, [[201, "created"], [202, "hello world"], [200, "until the end"]]);
    await server.closed();
    assertStrictEquals(server.requests.length, 3);
    for (const request of server.requests) {
      assertStrictEquals(request.method, "PUT");
      assertStrictEquals(request.headers["content-length"], String(size));
      assertStrictEquals(request.headers["content-type"], "application/octet-stream");
      assertStrictEquals(request.headers["host"], `127.0.0.1:${server.port}`);
      assertStrictEquals(request.chunked, false);
      assertStrictEquals(request.complete, true);
      assertStrictEquals(request.sha256, sha);
    }
    // One connection per upload, closed after its answer.
    assertEquals(server.requests.map((r) => r.connection), [0, 1, 2]);
  } finally {
    transport.close();
    await server.close();
  }
});

Deno.test("fileBody upload: an early 413 is returned and the upload stops", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/big.bin`;
  const size = 128 * MiB;
  await Deno.writeFile(path, new Uint8Array(size));
  let received = 0;
  const server = http.createServer((req, res) => {
    res.writeHead(413, { "content-length": "5" });
    res.end("large");
    req.on("data", (chunk: Uint8Array) => received += chunk.byteLength);
  });
  const port = await listen(server);
  const transport = new HttpTransport();
  try {
    let sent = 0;
    const body = fileBody(path, 0, size, { onBytes: (n) => sent += n });
    const res = await transport.fetch(put(`http://127.0.0.1:${port}/x`, body, size));
    assertStrictEquals(res.status, 413);
    assertStrictEquals(await res.text(), "large");
    assert(sent < size, "the upload went on after the answer");
    assert(received < size);
  } finally {
    transport.close();
    await stop(server);
  }
});

Deno.test("fileBody upload through a guard: a refused peer receives zero bytes", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/body.bin`;
  await patternFile(path, 4096);
  const server = startRawServer();
  try {
    // The literal passes the pre-dial check; the connected address is then refused.
    const seen: string[] = [];
    const connected = new HttpTransport({
      peerGuard: (address) => (seen.push(address), seen.length === 1),
    });
    // A name whose every address is refused is never dialled.
    const named = new HttpTransport({ peerGuard: () => false });
    try {
      for (const [transport, host] of [[connected, "127.0.0.1"], [named, "localhost"]] as const) {
        const err = await transport.fetch(
          put(`http://${host}:${server.port}/x`, fileBody(path, 0, 4096), 4096),
        ).then(() => undefined, (e) => e);
        assert(err instanceof PeerRefusedError, String(err));
      }
      assertEquals(seen, ["127.0.0.1", "127.0.0.1"]);
    } finally {
      connected.close();
      named.close();
    }
    await server.closed();
    assertStrictEquals(server.connections.length, 1);
    assertStrictEquals(server.connections[0].bytesReceived, 0);
    assertStrictEquals(server.requests.length, 0);
  } finally {
    await server.close();
  }
});

Deno.test("fileBody upload over HTTPS: works with caCerts, fails terminally without", async () => {
  await using dir = await tempDir();
  const ca = await makeTestCa(dir.path);
  const path = `${dir.path}/body.bin`;
  const size = 2 * MiB;
  const sha = await patternFile(path, size);
  const server = https.createServer({
    cert: await Deno.readTextFile(ca.certPath),
    key: await Deno.readTextFile(ca.keyPath),
  }, (req, res) => {
    const hash = createHash("sha256");
    req.on("data", (chunk: Uint8Array) => hash.update(chunk));
    req.on("end", () => res.end(hash.digest("hex")));
  });
  const port = await listen(server);
  const trusting = new HttpTransport({ caCerts: [ca.caCert] });
  const guarded = trusting.clone({ peerGuard: () => true });
  const plain = new HttpTransport();
  try {
    for (const transport of [trusting, guarded]) {
      for (const host of ["127.0.0.1", "localhost"]) {
        const res = await transport.fetch(
          put(`https://${host}:${port}/x`, fileBody(path, 0, size), size),
        );
        assertStrictEquals(res.status, 200);
        assertStrictEquals(await res.text(), sha);
      }
    }
    await assertCertificateRefused(
      plain.fetch(put(`https://127.0.0.1:${port}/x`, fileBody(path, 0, size), size)),
    );
  } finally {
    trusting.close();
    guarded.close();
    plain.close();
    await stop(server);
  }
});

Deno.test("aborting a fileBody upload mid-body rejects with the reason", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/big.bin`;
  const size = 128 * MiB;
  await Deno.writeFile(path, new Uint8Array(size));
  const server = http.createServer((req) => req.pause());
  const port = await listen(server);
  const transport = new HttpTransport();
  try {
    const controller = new AbortController();
    const reason = new Error("stop the upload");
    const body = fileBody(path, 0, size, { onBytes: () => controller.abort(reason) });
    const err = await transport.fetch(
      new Request(`http://127.0.0.1:${port}/x`, {
        method: "PUT",
        body,
        headers: { "content-length": String(size) },
        duplex: "half",
        signal: controller.signal,
      } as RequestInit),
    ).then(() => undefined, (e) => e);
    assertStrictEquals(err, reason);
  } finally {
    transport.close();
    await stop(server);
  }
});

Deno.test("fileBody upload to a closed port never answered: a final NetworkError naming no host", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/body.bin`;
  await patternFile(path, 10);
  const server = startRawServer();
  const port = server.port;
  await server.close();
  const transport = new HttpTransport();
  try {
    const err = await transport.fetch(put(`http://127.0.0.1:${port}/x`, fileBody(path, 0, 10), 10))
      .then(() => undefined, (e) => e);
    assert(err instanceof NetworkError, String(err));
    assertStrictEquals(err.message, "HTTP request: connection failed (connection refused)");
    assertStrictEquals(retryable(err).retryable, false);
  } finally {
    transport.close();
  }
});

Deno.test("fileBody upload: an answer that arrives before the first file read leaks no rejection", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/part.bin`;
  const size = 8 * MiB;
  await Deno.writeFile(path, new Uint8Array(size));
  // Answers the moment the connection opens, before the request head is even read (nginx's
  // 413 path can look like this): the upload may end before the file's first read settles.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const early = new TextEncoder().encode(
    "HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
  );
  const serving = (async () => {
    for await (const conn of listener) {
      await conn.write(early).catch(() => {});
      conn.close();
    }
  })();
  const transport = new HttpTransport();
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    for (let i = 0; i < 20; i++) {
      const res = await transport.fetch(
        put(`http://127.0.0.1:${port}/x`, fileBody(path, 0, size), size),
      ).catch((err) => err);
      // Either the answer or a retryable connection failure; never an unhandled rejection,
      // which the test runner reports as a failure of this test.
      if (res instanceof Response) {
        assertStrictEquals(res.status, 413);
        await res.body?.cancel();
      } else {
        assert(res instanceof NetworkError, String(res));
      }
    }
  } finally {
    transport.close();
    listener.close();
    await serving.catch(() => {});
  }
});
