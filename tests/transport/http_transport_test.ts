import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { BodyLengthError, NetworkError, PeerRefusedError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { type RawServer, response, startRawServer } from "./_raw_server.ts";
import { assertCertificateRefused, makeTestCa } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";

const MiB = 1 << 20;

function put(url: string, body: ReadableStream<Uint8Array> | null, length?: number): Request {
  return new Request(url, {
    method: "PUT",
    body,
    headers: length === undefined ? {} : { "content-length": String(length) },
    duplex: "half",
  } as RequestInit);
}

/** A body stream of the given chunks, then (unless `hang`) the end. */
function chunks(parts: Uint8Array[], hang = false): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (i < parts.length) controller.enqueue(parts[i++]);
      else if (hang) await new Promise(() => {});
      else controller.close();
    },
  }, { highWaterMark: 0 });
}

function pattern(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed) & 0xff;
  return bytes;
}

async function withServer(
  server: RawServer,
  fn: (server: RawServer) => Promise<void>,
): Promise<void> {
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

Deno.test("streams a body with its exact content-length, never chunked", async () => {
  await withServer(startRawServer(), async (server) => {
    const transport = new HttpTransport();
    try {
      const parts = [pattern(MiB, 1), pattern(3, 2), pattern(MiB + 17, 3)];
      const total = parts.reduce((n, p) => n + p.byteLength, 0);
      const hash = createHash("sha256");
      for (const p of parts) hash.update(p);
      const res = await transport.fetch(put(`${server.origin}/upload`, chunks(parts), total));
      assertStrictEquals(res.status, 200);
      await res.body?.cancel();
      const [request] = server.requests;
      assertStrictEquals(request.headers["content-length"], String(total));
      assertStrictEquals(request.headers["transfer-encoding"], undefined);
      assertStrictEquals(request.chunked, false);
      assertStrictEquals(request.bodyBytes, total);
      assertStrictEquals(request.sha256, hash.digest("hex"));
    } finally {
      transport.close();
    }
  });
});

Deno.test("a body-less POST is framed with content-length 0", async () => {
  await withServer(startRawServer(), async (server) => {
    const transport = new HttpTransport();
    try {
      const res = await transport.fetch(new Request(`${server.origin}/post`, { method: "POST" }));
      assertStrictEquals(res.status, 200);
      await res.arrayBuffer();
      assertStrictEquals(server.requests[0].headers["content-length"], "0");
      assertStrictEquals(server.requests[0].headers["transfer-encoding"], undefined);
    } finally {
      transport.close();
    }
  });
});

Deno.test("a body without content-length is refused before anything is sent", async () => {
  await withServer(startRawServer(), async (server) => {
    const transport = new HttpTransport();
    try {
      await assertRejects(
        transport.fetch(put(`${server.origin}/x`, chunks([pattern(10, 0)]))),
        TypeError,
      );
      assertStrictEquals(server.connections.length, 0);
    } finally {
      transport.close();
    }
  });
});

for (
  const [name, parts, declared] of [
    ["shorter", [pattern(MiB, 1), pattern(100, 2)], MiB + 101],
    ["longer", [pattern(MiB, 1), pattern(MiB, 2)], MiB + 100],
    // Exactly the declared length and then one more byte: the last declared byte is held back.
    [
      "longer after the declared length",
      [pattern(MiB, 1), pattern(100, 2), pattern(1, 3)],
      MiB + 100,
    ],
  ] as const
) {
  Deno.test(`a body ${name} than declared fails and the server never gets it whole`, async () => {
    await withServer(startRawServer(), async (server) => {
      const transport = new HttpTransport();
      try {
        const err = await transport.fetch(put(`${server.origin}/x`, chunks([...parts]), declared))
          .then(() => undefined, (e) => e);
        assert(err instanceof BodyLengthError, String(err));
        await server.closed();
        assertStrictEquals(server.requests.length, 1);
        assertStrictEquals(server.requests[0].complete, false);
        assert(server.requests[0].bodyBytes < declared);
      } finally {
        transport.close();
      }
    });
  });
}

Deno.test("peer guard refusing the connected address: the server receives zero bytes", async () => {
  await withServer(startRawServer(), async (server) => {
    for (let round = 0; round < 10; round++) {
      // The literal passes the pre-dial check; the connected socket is then refused.
      const seen: string[] = [];
      const transport = new HttpTransport({
        peerGuard: (address) => {
          seen.push(address);
          return seen.length === 1;
        },
      });
      try {
        const err = await transport.fetch(
          put(`${server.origin}/x`, chunks([pattern(4096, 1)]), 4096),
        ).then(() => undefined, (e) => e);
        assert(err instanceof PeerRefusedError, String(err));
        assertEquals(seen, ["127.0.0.1", "127.0.0.1"]);
      } finally {
        transport.close();
      }
    }
    await server.closed();
    assertStrictEquals(server.connections.length, 10);
    for (const connection of server.connections) assertStrictEquals(connection.bytesReceived, 0);
    assertStrictEquals(server.requests.length, 0);
  });
});

Deno.test("peer guard over HTTPS refuses before the TLS handshake: zero bytes", async () => {
  await withServer(startRawServer(), async (server) => {
    let calls = 0;
    const transport = new HttpTransport({ peerGuard: () => ++calls === 1 });
    try {
      const err = await transport.fetch(new Request(`https://127.0.0.1:${server.port}/x`))
        .then(() => undefined, (e) => e);
      assert(err instanceof PeerRefusedError, String(err));
      assertStrictEquals(calls, 2);
    } finally {
      transport.close();
    }
    await server.closed();
    assertStrictEquals(server.connections.length, 1);
    assertStrictEquals(server.connections[0].bytesReceived, 0);
  });
});

Deno.test("peer guard refusing an IP literal: no connection is made", async () => {
  await withServer(startRawServer(), async (server) => {
    const seen: [string, number][] = [];
    const guarded = new HttpTransport({
      peerGuard: (address, family) => {
        seen.push([address, family]);
        return false;
      },
    });
    const plain = new HttpTransport();
    try {
      const err = await guarded.fetch(new Request(`${server.origin}/x`)).then(() => {}, (e) => e);
      assert(err instanceof PeerRefusedError);
      assertStrictEquals(retryable(err).retryable, false);
      assertEquals(seen, [["127.0.0.1", 4]]);
      // A later connection is the first the server ever accepted.
      const res = await plain.fetch(new Request(`${server.origin}/after`));
      await res.arrayBuffer();
      assertStrictEquals(server.connections.length, 1);
      assertStrictEquals(server.requests[0].path, "/after");
    } finally {
      guarded.close();
      plain.close();
    }
  });
});

Deno.test("peer guard vets every resolved address of a host name before dialing", async () => {
  await withServer(startRawServer(), async (server) => {
    const seen: string[] = [];
    const guarded = new HttpTransport({
      peerGuard: (address) => {
        seen.push(address);
        return false;
      },
    });
    try {
      const err = await guarded.fetch(new Request(`http://localhost:${server.port}/x`))
        .then(() => {}, (e) => e);
      assert(err instanceof PeerRefusedError, String(err));
      assert(seen.length >= 1);
      assert(seen.every((a) => a === "127.0.0.1" || a === "::1"), seen.join());
      assertStrictEquals(server.connections.length, 0);
    } finally {
      guarded.close();
    }
  });
});

Deno.test("redirects are returned, never followed", async () => {
  const server = startRawServer((request, writer) =>
    writer.write(
      response(request.path === "/a" ? 302 : 307, { location: "/elsewhere" }, "moved"),
    )
  );
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const a = await transport.fetch(new Request(`${server.origin}/a`));
      assertStrictEquals(a.status, 302);
      assertStrictEquals(a.headers.get("location"), "/elsewhere");
      assertStrictEquals(await a.text(), "moved");
      const b = await transport.fetch(put(`${server.origin}/b`, chunks([pattern(10, 1)]), 10));
      assertStrictEquals(b.status, 307);
      await b.arrayBuffer();
      assertEquals(server.requests.map((r) => r.path), ["/a", "/b"]);
    } finally {
      transport.close();
    }
  });
});

Deno.test("HEAD and 204 answers have null bodies and keep the connection", async () => {
  const server = startRawServer((request, writer) =>
    writer.write(
      request.method === "HEAD"
        ? new TextEncoder().encode("HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n")
        : request.path === "/none"
        ? new TextEncoder().encode("HTTP/1.1 204 No Content\r\n\r\n")
        : response(200, {}, "ok"),
    )
  );
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const head = await transport.fetch(new Request(`${server.origin}/h`, { method: "HEAD" }));
      assertStrictEquals(head.status, 200);
      assertStrictEquals(head.body, null);
      assertStrictEquals(head.headers.get("content-length"), "1000");
      const none = await transport.fetch(new Request(`${server.origin}/none`));
      assertStrictEquals(none.status, 204);
      assertStrictEquals(none.body, null);
      const ok = await transport.fetch(new Request(`${server.origin}/ok`));
      assertStrictEquals(await ok.text(), "ok");
      assertStrictEquals(server.connections.length, 1);
    } finally {
      transport.close();
    }
  });
});

Deno.test("1xx answers are not surfaced; bytes are never decompressed", async () => {
  const gzipish = pattern(300, 9);
  const server = startRawServer(async (_request, writer) => {
    await writer.write("HTTP/1.1 100 Continue\r\n\r\n");
    await writer.write(response(200, { "content-encoding": "gzip" }, gzipish));
  });
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const res = await transport.fetch(new Request(`${server.origin}/x`));
      assertStrictEquals(res.status, 200);
      assertStrictEquals(res.headers.get("content-encoding"), "gzip");
      assertEquals(new Uint8Array(await res.arrayBuffer()), gzipish);
      // Without a caller's choice the transport asks for the bytes as stored.
      assertStrictEquals(server.requests[0].headers["accept-encoding"], "identity");
    } finally {
      transport.close();
    }
  });
});

Deno.test("a slow reader holds back the response instead of buffering it", async () => {
  const total = 512 * MiB;
  let written = 0;
  const server = startRawServer(async (_request, writer) => {
    await writer.write(
      `HTTP/1.1 200 OK\r\ncontent-length: ${total}\r\n\r\n`,
    );
    const block = new Uint8Array(256 * 1024);
    try {
      while (written < total) {
        await writer.write(block);
        written += block.byteLength;
      }
    } catch { /* the client hung up */ }
  });
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const res = await transport.fetch(new Request(`${server.origin}/big`));
      const reader = res.body!.getReader();
      let consumed = 0;
      while (consumed < 4 * MiB) {
        const { value } = await reader.read();
        consumed += value!.byteLength;
      }
      // Wait until the sender is stuck on a full pipe: its count stops moving.
      let last = -1;
      let still = 0;
      while (still < 5) {
        await new Promise((r) => setTimeout(r, 50));
        still = written === last ? still + 1 : 0;
        last = written;
      }
      const inFlight = written - consumed;
      // Kernel socket buffers on loopback reach ~36 MiB; the rest of 512 MiB must still wait.
      assert(inFlight < 64 * MiB, `client let ${inFlight} bytes pile up`);
      await reader.cancel();
      await server.closed();
      assert(written < total);
    } finally {
      transport.close();
    }
  });
});

Deno.test("aborting mid-response rejects the read with the reason and drops the connection", async () => {
  const server = startRawServer(async (_request, writer) => {
    await writer.write(`HTTP/1.1 200 OK\r\ncontent-length: ${10 * MiB}\r\n\r\n`);
    await writer.write(new Uint8Array(MiB));
    await writer.ended;
  });
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const controller = new AbortController();
      const res = await transport.fetch(
        new Request(`${server.origin}/x`, { signal: controller.signal }),
      );
      const reader = res.body!.getReader();
      await reader.read();
      const reason = new Error("stop now");
      controller.abort(reason);
      const err = await (async () => {
        for (;;) await reader.read();
      })().catch((e) => e);
      assertStrictEquals(err, reason);
      await server.closed();
    } finally {
      transport.close();
    }
  });
});

Deno.test("aborting mid-request-body rejects with the reason; the server gets no whole request", async () => {
  const server = startRawServer();
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const controller = new AbortController();
      let pulled = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          pulled++;
          if (pulled === 3) {
            controller.abort(new DOMException("user stop", "AbortError"));
            await new Promise(() => {});
          }
          c.enqueue(pattern(MiB, pulled));
        },
      }, { highWaterMark: 0 });
      const request = new Request(`${server.origin}/x`, {
        method: "PUT",
        body,
        headers: { "content-length": String(10 * MiB) },
        duplex: "half",
        signal: controller.signal,
      } as RequestInit);
      const err = await transport.fetch(request).then(() => undefined, (e) => e);
      assert(err instanceof DOMException && err.message === "user stop", String(err));
      await server.closed();
      assertStrictEquals(server.requests[0].complete, false);
    } finally {
      transport.close();
    }
  });
});

Deno.test("an already aborted signal rejects without connecting", async () => {
  await withServer(startRawServer(), async (server) => {
    const transport = new HttpTransport();
    try {
      const reason = new Error("early");
      const err = await transport.fetch(
        new Request(server.origin, { signal: AbortSignal.abort(reason) }),
      ).then(() => undefined, (e) => e);
      assertStrictEquals(err, reason);
      assertStrictEquals(server.connections.length, 0);
    } finally {
      transport.close();
    }
  });
});

Deno.test("keep-alive: sequential requests share one connection; external() has its own pool", async () => {
  await withServer(startRawServer(), async (server) => {
    const transport = new HttpTransport();
    try {
      for (let i = 0; i < 3; i++) {
        const res = await transport.fetch(new Request(`${server.origin}/${i}`));
        await res.arrayBuffer();
      }
      assertStrictEquals(server.connections.length, 1);
      const external = transport.external();
      assertStrictEquals(transport.external(), external);
      for (let i = 0; i < 2; i++) {
        const res = await external.fetch(new Request(`${server.origin}/ext${i}`));
        await res.arrayBuffer();
      }
      assertStrictEquals(server.connections.length, 2);
      assertEquals(server.requests.map((r) => r.connection), [0, 0, 0, 1, 1]);
    } finally {
      transport.close();
    }
  });
});

Deno.test("close() ends every connection, the external pool's too", async () => {
  await withServer(startRawServer(), async (server) => {
    const transport = new HttpTransport();
    const res = await transport.fetch(new Request(`${server.origin}/a`));
    await res.arrayBuffer();
    const ext = await transport.external().fetch(new Request(`${server.origin}/b`));
    await ext.arrayBuffer();
    const clone = transport.clone();
    const other = await clone.fetch(new Request(`${server.origin}/c`));
    await other.arrayBuffer();
    assertStrictEquals(server.connections.length, 3);
    transport.close();
    // The clone is independent: its idle connection survives the original's close().
    const again = await clone.fetch(new Request(`${server.origin}/d`));
    await again.arrayBuffer();
    assertStrictEquals(server.connections.length, 3);
    clone.close();
    await server.closed();
    assert(server.connections.every((c) => c.ended));
  });
});

Deno.test("a refused connection names no host; final where nothing ever answered, retryable after an answer", async () => {
  const server = startRawServer();
  const port = server.port;
  const transport = new HttpTransport();
  const fresh = new HttpTransport();
  try {
    const answered = await transport.fetch(new Request(`http://127.0.0.1:${port}/x`));
    await answered.body?.cancel();
    await server.close();
    // The port answered before: a refusal now may be a restart, worth another attempt.
    const err = await transport.fetch(new Request(`http://127.0.0.1:${port}/x`))
      .then(() => undefined, (e) => e);
    assert(err instanceof NetworkError, String(err));
    assertStrictEquals(err.message, "HTTP request: connection failed (connection refused)");
    assertStrictEquals(retryable(err).retryable, true);
    assert(err.cause instanceof Error);
    // Never answered this transport: a wrong address, told at once.
    const first = await fresh.fetch(new Request(`http://127.0.0.1:${port}/x`))
      .then(() => undefined, (e) => e);
    assert(first instanceof NetworkError, String(first));
    assertStrictEquals(first.message, "HTTP request: connection failed (connection refused)");
    assertStrictEquals(retryable(first).retryable, false);
  } finally {
    transport.close();
    fresh.close();
  }
});

Deno.test("a connection lost mid-response errors the body with NetworkError", async () => {
  const server = startRawServer(async (_request, writer) => {
    await writer.write(`HTTP/1.1 200 OK\r\ncontent-length: ${4 * MiB}\r\n\r\n`);
    await writer.write(new Uint8Array(MiB));
    writer.close();
  });
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const res = await transport.fetch(new Request(`${server.origin}/x`));
      const err = await res.arrayBuffer().then(() => undefined, (e) => e);
      assert(err instanceof NetworkError, String(err));
      assertStrictEquals(retryable(err).retryable, true);
    } finally {
      transport.close();
    }
  });
});

Deno.test("custom CA: HTTPS works with caCerts and fails without, terminally", async () => {
  await using dir = await tempDir();
  const ca = await makeTestCa(dir.path);
  const server = https.createServer({
    cert: await Deno.readTextFile(ca.certPath),
    key: await Deno.readTextFile(ca.keyPath),
  }, (req, res) => {
    req.resume();
    req.on("end", () => res.end("secure"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const trusting = new HttpTransport({ caCerts: [ca.caCert] });
  const plain = new HttpTransport();
  try {
    for (const host of ["127.0.0.1", "localhost"]) {
      const res = await trusting.fetch(new Request(`https://${host}:${port}/x`));
      assertStrictEquals(res.status, 200);
      assertStrictEquals(await res.text(), "secure");
    }
    const external = await trusting.external().fetch(new Request(`https://127.0.0.1:${port}/y`));
    assertStrictEquals(await external.text(), "secure");
    // The guarded dialer starts TLS itself: SNI and roots must survive it.
    const seen: string[] = [];
    const guarded = trusting.clone({ peerGuard: (address) => (seen.push(address), true) });
    try {
      const res = await guarded.fetch(new Request(`https://localhost:${port}/z`));
      assertStrictEquals(await res.text(), "secure");
      assert(seen.length >= 2 && seen.every((a) => a === "127.0.0.1" || a === "::1"));
    } finally {
      guarded.close();
    }
    await assertCertificateRefused(plain.fetch(new Request(`https://127.0.0.1:${port}/x`)));
  } finally {
    trusting.close();
    plain.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

Deno.test("an early answer (413 before the body is read) is returned and the upload stops", async () => {
  const http = await import("node:http");
  let received = 0;
  const server = http.createServer((req, res) => {
    res.writeHead(413, { "content-length": "5" });
    res.end("large");
    // Like nginx's lingering close: keep reading what the client still sends.
    req.on("data", (chunk: Uint8Array) => received += chunk.byteLength);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const transport = new HttpTransport();
  try {
    const declared = 256 * MiB;
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += MiB;
        if (pulled > declared) c.close();
        else c.enqueue(new Uint8Array(MiB));
      },
    }, { highWaterMark: 0 });
    const res = await transport.fetch(put(`http://127.0.0.1:${port}/x`, body, declared));
    assertStrictEquals(res.status, 413);
    assertStrictEquals(await res.text(), "large");
    assert(pulled < declared, "the body kept being read after the answer");
    assert(received < declared);
  } finally {
    transport.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

Deno.test("downloads: a compressed answer is never decoded, whatever the request accepts", async () => {
  const { gzipSync } = await import("node:zlib");
  const gzipped = gzipSync(pattern(4096, 5));
  const server = startRawServer((_request, writer) =>
    writer.write(response(200, { "content-encoding": "gzip" }, gzipped))
  );
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      for (const accept of [undefined, "gzip", "identity"]) {
        const res = await transport.fetch(
          new Request(`${server.origin}/x`, {
            headers: accept === undefined ? {} : { "accept-encoding": accept },
          }),
        );
        assertStrictEquals(res.headers.get("content-encoding"), "gzip");
        assertEquals(new Uint8Array(await res.arrayBuffer()), new Uint8Array(gzipped));
      }
      assertEquals(
        server.requests.map((r) => r.headers["accept-encoding"]),
        ["identity", "gzip", "identity"],
      );
    } finally {
      transport.close();
    }
  });
});

Deno.test("downloads of a guarded transport still check the connected peer: zero bytes", async () => {
  await withServer(startRawServer(), async (server) => {
    const seen: string[] = [];
    const transport = new HttpTransport({
      peerGuard: (address) => {
        seen.push(address);
        return seen.length === 1;
      },
    });
    try {
      for (const method of ["GET", "HEAD"]) {
        seen.length = 0;
        const err = await transport.fetch(new Request(`${server.origin}/x`, { method }))
          .then(() => undefined, (e) => e);
        assert(err instanceof PeerRefusedError, String(err));
        assertEquals(seen, ["127.0.0.1", "127.0.0.1"]);
      }
    } finally {
      transport.close();
    }
    await server.closed();
    for (const connection of server.connections) assertStrictEquals(connection.bytesReceived, 0);
  });
});

Deno.test("aborting a download before its answer rejects with the reason", async () => {
  const server = startRawServer(async (_request, writer) => {
    await writer.ended;
  });
  await withServer(server, async () => {
    const transport = new HttpTransport();
    try {
      const controller = new AbortController();
      const pending = transport.fetch(
        new Request(`${server.origin}/slow`, { signal: controller.signal }),
      );
      while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      const reason = new Error("give up");
      controller.abort(reason);
      assertStrictEquals(await pending.then(() => undefined, (e) => e), reason);
      await server.closed();
    } finally {
      transport.close();
    }
  });
});
