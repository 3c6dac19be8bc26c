/**
 * A download body's reads into the caller's buffers, on every TLS mode: a read hands on what
 * came soon, even when the caller's buffer has room for more (a slow link shows its bytes as
 * they arrive), and a body cut short hands on every byte it brought before its failure.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { HttpTransport } from "../../src/transport/mod.ts";
import { NetworkError } from "../../src/errors/kinds.ts";
import { everyTlsMode } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { type RawServer, startRawServer } from "./_raw_server.ts";

const LENGTH = 1_000_000;

// A server (TLS with `tls`) whose one answer announces LENGTH bytes, then gets what `send` writes
// before the connection closes.
function serveOnce(
  tls: { cert: string; key: string } | undefined,
  send: (write: (bytes: Uint8Array) => Promise<void>) => Promise<void>,
): RawServer {
  return startRawServer(async (_request, writer) => {
    try {
      await writer.write(`HTTP/1.1 200 OK\r\ncontent-length: ${LENGTH}\r\n\r\n`);
      await send((bytes) => writer.write(bytes));
    } catch {
      /* the client went away */
    } finally {
      writer.close();
    }
  }, { tls });
}

const bytesOf = (from: number, length: number) =>
  new Uint8Array(length).map((_, i) => (from + i) % 251);

Deno.test("a body read hands on the bytes that came even when the buffer has room for more, on every TLS mode", async () => {
  await using dir = await tempDir();
  for (const mode of await everyTlsMode(dir.path)) {
    let resume!: () => void;
    const later = new Promise<void>((resolve) => resume = resolve);
    const server = serveOnce(mode.tls, async (write) => {
      await write(bytesOf(0, 1000));
      await later;
    });
    const transport = new HttpTransport(mode.options);
    try {
      const res = await transport.fetch(new Request(`${server.origin}/v2/r/blobs/a`));
      const reader = res.body!.getReader({ mode: "byob" });
      // The rest of the body comes only after this read: a read that waited for it fails here
      // (in 5 s) instead of hanging the test.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const tooLate = new Promise<"late">((resolve) => timer = setTimeout(resolve, 5000, "late"));
      const read = await Promise.race([reader.read(new Uint8Array(1 << 20)), tooLate]);
      clearTimeout(timer);
      assert(read !== "late", `${mode.name}: the bytes that came were not handed on`);
      assertStrictEquals(read.value?.byteLength, 1000, mode.name);
      await reader.cancel();
    } finally {
      resume();
      transport.close();
      await server.close();
    }
  }
});

Deno.test("a body cut short hands on every byte that came before its failure, on every TLS mode", async () => {
  await using dir = await tempDir();
  for (const mode of await everyTlsMode(dir.path)) {
    // Many small writes, as TLS records or TCP segments, then the connection closes early.
    const server = serveOnce(mode.tls, async (write) => {
      for (let at = 0; at < 300_000; at += 15_000) await write(bytesOf(at, 15_000));
    });
    const transport = new HttpTransport(mode.options);
    try {
      const res = await transport.fetch(new Request(`${server.origin}/v2/r/blobs/a`));
      const reader = res.body!.getReader({ mode: "byob" });
      let got = 0;
      let intact = true;
      let failure: unknown;
      try {
        for (;;) {
          const { value, done } = await reader.read(new Uint8Array(1 << 20));
          if (done) break;
          intact &&= value.every((b, i) => b === (got + i) % 251);
          got += value.byteLength;
        }
      } catch (err) {
        failure = err;
      }
      assertStrictEquals(got, 300_000, `${mode.name}: every byte sent came before the failure`);
      assert(intact, `${mode.name}: in order`);
      assert(failure instanceof NetworkError, `${mode.name}: a network failure, not an end`);
    } finally {
      transport.close();
      await server.close();
    }
  }
});
