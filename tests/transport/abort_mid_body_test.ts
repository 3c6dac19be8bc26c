/**
 * An abort in the middle of a download's body ends it at once, on each kind of socket the
 * transport's own client reads (the runtime's, and `node:net` read into one buffer, which carries
 * every download on Node and pinned or unverified ones on Deno): the next read rejects with the
 * abort's reason, even while bytes that arrived before the abort are still held.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { rawDownload } from "../../src/transport/engine/raw_download.ts";
import { IdleConnections } from "../../src/transport/engine/idle_connections.ts";
import { denoSockets } from "../../src/transport/engine/deno_socket.ts";
import { nodeTcpSockets } from "../../src/transport/engine/node_read_socket.ts";
import type { DialedSocket, SocketKind } from "../../src/transport/engine/dial.ts";
import { startRawServer } from "./_raw_server.ts";

const KiB = 1024;

const SOCKETS: Array<[string, () => SocketKind<DialedSocket>]> = [
  ["the runtime's sockets", () => denoSockets([])!],
  ["node:net read into one buffer", () => nodeTcpSockets()],
];

for (const [kind, sockets] of SOCKETS) {
  Deno.test(`${kind}: an abort mid-body rejects the next read with its reason, bytes held or not`, async () => {
    // The head announces 1 MiB, 512 KiB follow at once, then nothing: the client holds some.
    let sent!: () => void;
    const allSent = new Promise<void>((resolve) => sent = resolve);
    const server = startRawServer(async (_request, writer) => {
      await writer.write("HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n");
      await writer.write(new Uint8Array(512 * KiB));
      sent();
      await writer.ended;
    });
    const pool = new IdleConnections(4);
    try {
      const controller = new AbortController();
      const response = await rawDownload(
        {
          url: new URL(`${server.origin}/blob`),
          method: "GET",
          headers: {},
          signal: controller.signal,
        },
        sockets(),
        { pool, route: "test" },
      );
      const reader = response.body!.getReader({ mode: "byob" });
      const first = await reader.read(new Uint8Array(16 * KiB));
      assert(first.value !== undefined && first.value.byteLength > 0);
      await allSent;
      // Let the bytes sent land in the client's buffers before the abort.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const reason = new Error("stopped by the test");
      controller.abort(reason);
      const started = performance.now();
      const next = await reader.read(new Uint8Array(16 * KiB)).then(
        (read) => `read ${read.value?.byteLength ?? 0} bytes`,
        (err) => err,
      );
      assertStrictEquals(next, reason, "the read after the abort");
      assert(performance.now() - started < 1000);
    } finally {
      pool.close();
      await server.close();
    }
  });
}

Deno.test("node:net read into one buffer: what the socket held goes with its close, a read after it rejects", async () => {
  const server = startRawServer(async (_request, writer) => {
    await writer.write(new Uint8Array(64 * KiB));
    await writer.ended;
  });
  try {
    const socket = await nodeTcpSockets().connect("127.0.0.1", server.port, undefined);
    await socket.write(new TextEncoder().encode("GET / HTTP/1.1\r\nhost: x\r\n\r\n"));
    // The first read waits for the answer; the rest of it lands in the socket's buffer.
    assert((await socket.read(new Uint8Array(1))) === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.close();
    const after = await socket.read(new Uint8Array(16 * KiB)).then((n) => `read ${n}`, (e) => e);
    assert(after instanceof Error, `after the close: ${after}`);
  } finally {
    await server.close();
  }
});
