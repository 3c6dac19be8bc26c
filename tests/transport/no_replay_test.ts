/**
 * A request with a body is sent once: when the reused keep-alive connection it went out on
 * closes mid-body, the transport rejects with a retryable `NetworkError` instead of resending it
 * on a new connection. (Deno's node:http resends such a request by itself; an upload session
 * that already took part of a PUT answers the resend with 404, which ended pushes with a
 * terminal NotFoundError.) Bodyless requests may still be resent: nothing of theirs is lost.
 */
import { assert, assertStrictEquals, fail } from "../fixtures/assert.ts";
import { NetworkError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { fileBody } from "../../src/transport/file_body.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { acceptConnections } from "./_raw_server.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface SeenRequest {
  connection: number;
  method: string;
  path: string;
  bodyBytes: number;
}

/**
 * A keep-alive HTTP/1.1 server that answers `GET` with 200 and, for `PUT` and `POST`, reads
 * `cutAfter` body bytes and then closes the connection without answering.
 */
function startCuttingServer(cutAfter: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const seen: SeenRequest[] = [];
  let connections = 0;
  const serve = async (conn: Deno.Conn, id: number) => {
    let buffer = new Uint8Array(0);
    const chunk = new Uint8Array(64 << 10);
    const more = async () => {
      const n = await conn.read(chunk).catch(() => null);
      if (n === null) return false;
      const next = new Uint8Array(buffer.byteLength + n);
      next.set(buffer);
      next.set(chunk.subarray(0, n), buffer.byteLength);
      buffer = next;
      return true;
    };
    for (;;) {
      let end: number;
      while ((end = decoder.decode(buffer).indexOf("\r\n\r\n")) < 0) if (!await more()) return;
      const head = decoder.decode(buffer.subarray(0, end));
      buffer = buffer.slice(end + 4);
      const [method, path] = head.split(" ");
      const request = { connection: id, method, path, bodyBytes: 0 };
      seen.push(request);
      if (method === "GET") {
        await conn.write(encoder.encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
        continue;
      }
      while (buffer.byteLength < cutAfter) if (!await more()) break;
      request.bodyBytes = Math.min(buffer.byteLength, cutAfter);
      return; // closes the connection mid-body
    }
  };
  const accepted = acceptConnections(listener, (conn) => serve(conn, connections++));
  return {
    origin: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    seen,
    get connections() {
      return connections;
    },
    close: accepted.close,
  };
}

async function warmUp(transport: HttpTransport, origin: string): Promise<void> {
  // Leaves one idle keep-alive connection in the pool, so the next request reuses it. A GET
  // that accepts gzip stays on node:http (plain downloads take the transport's own client), whose
  // pool the uploads use.
  const res = await transport.fetch(
    new Request(`${origin}/v2/`, { headers: { "accept-encoding": "gzip" } }),
  );
  assertStrictEquals(await res.text(), "ok");
}

function streamOf(size: number): ReadableStream<Uint8Array> {
  let left = size;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left === 0) return controller.close();
      const n = Math.min(left, 16 << 10);
      left -= n;
      controller.enqueue(new Uint8Array(n).fill(7));
    },
  }, { highWaterMark: 0 });
}

async function expectSentOnce(
  body: () => ReadableStream<Uint8Array>,
  size: number,
  connection = 0,
): Promise<void> {
  const server = startCuttingServer(40_000);
  const transport = new HttpTransport();
  try {
    await warmUp(transport, server.origin);
    const err = await transport.fetch(
      new Request(`${server.origin}/v2/r/blobs/uploads/session-1?digest=x`, {
        method: "PUT",
        headers: { "content-length": String(size), "content-type": "application/octet-stream" },
        body: body(),
        duplex: "half",
        // A watchdog, not a timing assertion: a resend whose body never completes would hang.
        signal: AbortSignal.timeout(20_000),
      } as RequestInit),
    ).then(() => undefined, (e: unknown) => e);
    assert(err instanceof NetworkError, `expected NetworkError, got ${String(err)}`);
    assertStrictEquals(retryable(err).retryable, true);
    const puts = server.seen.filter((r) => r.method === "PUT");
    assertStrictEquals(puts.length, 1, "the PUT reached the server once");
    assertStrictEquals(puts[0].connection, connection, "on the expected connection");
    assert(puts[0].bodyBytes > 0, "part of its body reached the server before the cut");
  } finally {
    transport.close();
    await server.close();
  }
}

Deno.test("a streamed PUT cut mid-body on a reused connection is not resent", async () => {
  await expectSentOnce(() => streamOf(256 << 10), 256 << 10);
});

Deno.test("a fileBody PUT cut mid-body is not resent", async () => {
  const dir = await makeTempDir("ocipart-no-replay-");
  try {
    const path = `${dir}/part.bin`;
    await Deno.writeFile(path, new Uint8Array(256 << 10).fill(9));
    // File-range uploads go out on a new connection of their own (Deno's raw upload path).
    await expectSentOnce(
      () => fileBody(path, 0, 256 << 10),
      256 << 10,
      "Deno" in globalThis ? 1 : 0,
    );
  } finally {
    await removeDir(dir);
  }
});

Deno.test("the transport works on after a refused resend: the next request succeeds", async () => {
  const server = startCuttingServer(1);
  const transport = new HttpTransport();
  try {
    await warmUp(transport, server.origin);
    await transport.fetch(
      new Request(`${server.origin}/v2/r/blobs/uploads/`, {
        method: "POST",
        headers: { "content-length": "4" },
        body: streamOf(4),
        duplex: "half",
        signal: AbortSignal.timeout(20_000),
      } as RequestInit),
    ).then(() => fail("the POST must fail"), () => {});
    await warmUp(transport, server.origin);
    assertStrictEquals(server.seen.filter((r) => r.method === "POST").length, 1);
  } finally {
    transport.close();
    await server.close();
  }
});
