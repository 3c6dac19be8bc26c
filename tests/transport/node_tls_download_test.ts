/**
 * Downloads from a host only `node:tls` can judge (a pinned self-signed certificate,
 * `insecureTls`) go through the transport's own HTTP/1.1 client, read into the caller's
 * buffers: every byte in order, a cut or a stall told as a failure, an abort obeyed within a
 * second, a certificate other than the pinned one refused before a request byte is sent, and a
 * peer guard applied before anything is sent.
 */
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { NetworkError, PeerRefusedError } from "../../src/errors/mod.ts";
import { assertCertificateRefused, makeSelfSigned, type SelfSigned } from "../fixtures/tls.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";

const MiB = 1 << 20;
const BODY = patternBytes(24 * MiB, 7);

type Answer = "whole" | "cut" | "stall";

// A TLS server that answers each request with `answer`, and counts the requests it read.
async function tlsServer(cert: SelfSigned, answer: Answer) {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: cert.cert,
    key: await Deno.readTextFile(cert.keyPath),
  });
  const conns = new Set<Deno.Conn>();
  let requests = 0;
  const serve = async (conn: Deno.Conn) => {
    conns.add(conn);
    try {
      const head = new Uint8Array(16 * 1024);
      let read = 0;
      while (!new TextDecoder().decode(head.subarray(0, read)).includes("\r\n\r\n")) {
        const n = await conn.read(head.subarray(read));
        if (n === null) return;
        read += n;
      }
      requests++;
      const header = `HTTP/1.1 200 OK\r\ncontent-length: ${BODY.byteLength}\r\n\r\n`;
      await conn.write(new TextEncoder().encode(header));
      const sent = answer === "whole" ? BODY : BODY.subarray(0, BODY.byteLength / 2);
      for (let at = 0; at < sent.byteLength;) at += await conn.write(sent.subarray(at));
      if (answer === "stall") await new Promise(() => {});
    } catch {
      /* the client went away */
    } finally {
      conns.delete(conn);
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
  (async () => {
    for await (const conn of listener) serve(conn);
  })().catch(() => {});
  return {
    url: `https://127.0.0.1:${listener.addr.port}/v2/r/blobs/b`,
    requests: () => requests,
    [Symbol.dispose]() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
    },
  };
}

async function withCerts(fn: (served: SelfSigned, other: SelfSigned) => Promise<void>) {
  const dir = await makeTempDir("ocipart-node-tls-");
  try {
    await fn(await makeSelfSigned(dir, "served"), await makeSelfSigned(dir, "other"));
  } finally {
    await removeDir(dir);
  }
}

const MODES = [
  { name: "unverified", options: () => ({ insecureTls: true }) },
  { name: "pinned", options: (cert: SelfSigned) => ({ caCerts: [cert.cert] }) },
];

for (const mode of MODES) {
  Deno.test(`${mode.name} TLS download: every byte, in order, into the caller's buffers`, async () => {
    await withCerts(async (served) => {
      using server = await tlsServer(served, "whole");
      const transport = new HttpTransport({ ...mode.options(served), proxy: false });
      try {
        const response = await transport.fetch(new Request(server.url));
        assertEquals(response.status, 200);
        // A byte stream: each read fills the caller's own buffer.
        const reader = response.body!.getReader({ mode: "byob" });
        let got = new Uint8Array(BODY.byteLength);
        let at = 0;
        for (;;) {
          const view = got.subarray(at, Math.min(at + 3 * MiB + 17, got.byteLength));
          if (view.byteLength === 0) {
            assert((await reader.read(new Uint8Array(1))).done, "nothing after the body");
            break;
          }
          const { done, value } = await reader.read(view);
          if (done) break;
          // The read hands the caller's buffer back, filled.
          got = new Uint8Array(value.buffer);
          at += value.byteLength;
        }
        assertEquals(at, BODY.byteLength);
        assertEquals(sha256Bytes(got), sha256Bytes(BODY));
      } finally {
        transport.close();
      }
    });
  });

  Deno.test(`${mode.name} TLS download: a body cut short fails the read`, async () => {
    await withCerts(async (served) => {
      using server = await tlsServer(served, "cut");
      const transport = new HttpTransport({ ...mode.options(served), proxy: false });
      try {
        const response = await transport.fetch(new Request(server.url));
        await assertRejects(() => new Response(response.body).arrayBuffer());
      } finally {
        transport.close();
      }
    });
  });

  Deno.test(`${mode.name} TLS download: an abort mid-body ends the read within 1 s`, async () => {
    await withCerts(async (served) => {
      using server = await tlsServer(served, "stall");
      const transport = new HttpTransport({ ...mode.options(served), proxy: false });
      try {
        const controller = new AbortController();
        const response = await transport.fetch(
          new Request(server.url, { signal: controller.signal }),
        );
        const reader = response.body!.getReader();
        let received = 0;
        while (received < BODY.byteLength / 2) {
          const { done, value } = await reader.read();
          assert(!done, "the stalled half arrives");
          received += value.byteLength;
        }
        const reason = new Error("stop");
        const started = performance.now();
        const pending = reader.read();
        setTimeout(() => controller.abort(reason), 50);
        const err = await pending.then(() => undefined, (e) => e);
        const took = performance.now() - started - 50;
        assert(err !== undefined, "the read fails");
        assert(took < 1000, `stopped after ${Math.round(took)} ms`);
      } finally {
        transport.close();
      }
    });
  });
}

Deno.test("pinned TLS download: a server presenting another certificate is refused, no request read", async () => {
  await withCerts(async (served, other) => {
    using server = await tlsServer(served, "whole");
    const transport = new HttpTransport({ caCerts: [other.cert], proxy: false });
    try {
      await assertCertificateRefused(transport.fetch(new Request(server.url)));
      assertEquals(server.requests(), 0);
    } finally {
      transport.close();
    }
  });
});

Deno.test("unverified TLS download: a plain-HTTP server on the port is a clear failure", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted = (async () => {
    const conn = await listener.accept();
    await conn.write(new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\n\r\n")).catch(() => {});
    conn.close();
  })();
  const transport = new HttpTransport({ insecureTls: true, proxy: false });
  try {
    const err = await transport.fetch(new Request(`https://127.0.0.1:${listener.addr.port}/v2/`))
      .then(() => undefined, (e) => e);
    assert(err instanceof NetworkError, `expected NetworkError, got ${err}`);
    assert(!/127\.0\.0\.1|https?:/.test(err.message), err.message);
  } finally {
    transport.close();
    await accepted.catch(() => {});
    listener.close();
  }
});

for (const mode of MODES) {
  Deno.test(`${mode.name} TLS download behind a peer guard: refused before a byte, allowed in full`, async () => {
    await withCerts(async (served) => {
      using server = await tlsServer(served, "whole");
      const refusing = new HttpTransport({
        ...mode.options(served),
        proxy: false,
        peerGuard: () => false,
      });
      const allowing = new HttpTransport({
        ...mode.options(served),
        proxy: false,
        peerGuard: (address) => address === "127.0.0.1",
      });
      try {
        const err = await refusing.fetch(new Request(server.url)).then(() => undefined, (e) => e);
        assert(err instanceof PeerRefusedError, `expected PeerRefusedError, got ${err}`);
        assertEquals(server.requests(), 0);
        const response = await allowing.fetch(new Request(server.url));
        const got = new Uint8Array(await response.arrayBuffer());
        assertEquals(sha256Bytes(got), sha256Bytes(BODY));
        assertEquals(server.requests(), 1);
      } finally {
        refusing.close();
        allowing.close();
      }
    });
  });
}
