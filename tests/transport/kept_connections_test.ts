/**
 * Downloads (body-less GET and HEAD) keep their connection for the next request of the same
 * route, on every TLS mode and through a proxy: a kept connection the server closed is replaced
 * and the request sent once more only when no byte of an answer came; an answer not read to its
 * end, or one that closes, leaves nothing kept; close() ends what is kept; a kept connection does
 * not keep the process running.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { HttpTransport, type HttpTransportOptions } from "../../src/transport/mod.ts";
import { NetworkError } from "../../src/errors/kinds.ts";
import { everyTlsMode, type TlsMode as Mode } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";

const encoder = new TextEncoder();
const BODY = new Uint8Array(300_000).map((_, i) => i % 251);

/** What the server does with the nth request (from 1) it reads. */
type Answer =
  | "whole"
  | "whole-then-hang-up"
  | "closes"
  | "http/1.0"
  | "cut-in-head"
  | "forged-next" // the body, then at once a forged answer for the next request
  | "forged-next-later" // the same, the forged answer 50 ms after the body
  | "204-with-body" // a 204 that announces and sends a body
  | "status-600";

const FORGED = "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nforged";

interface Server {
  readonly origin: string;
  readonly port: number;
  /** Connections accepted, and requests read on each. */
  readonly connections: number[];
  /** Connections that ended. */
  ended(): number;
  close(): Promise<void>;
}

// A keep-alive HTTP/1.1 server (TLS when `tls` is given) answering each request by `answerOf`.
function startServer(
  answerOf: (request: number) => Answer,
  tls?: { cert: string; key: string },
): Server {
  const listener = tls
    ? Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: tls.cert, key: tls.key })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const connections: number[] = [];
  const open = new Set<Deno.Conn>();
  const served: Promise<void>[] = [];
  let requests = 0;
  let ended = 0;
  const serve = async (conn: Deno.Conn, id: number) => {
    open.add(conn);
    let buffered = "";
    const chunk = new Uint8Array(16 * 1024);
    try {
      for (;;) {
        while (!buffered.includes("\r\n\r\n")) {
          const n = await conn.read(chunk);
          if (n === null) return;
          buffered += new TextDecoder().decode(chunk.subarray(0, n));
        }
        const head = buffered.slice(0, buffered.indexOf("\r\n\r\n"));
        buffered = buffered.slice(head.length + 4);
        connections[id]++;
        const answer = answerOf(++requests);
        const isHead = head.startsWith("HEAD ");
        if (answer === "cut-in-head") {
          await write(conn, encoder.encode("HTTP/1.1 2"));
          return;
        }
        if (answer === "status-600") {
          await write(conn, encoder.encode("HTTP/1.1 600 Odd\r\ncontent-length: 0\r\n\r\n"));
          continue;
        }
        if (answer === "204-with-body") {
          await write(
            conn,
            encoder.encode(`HTTP/1.1 204 No\r\ncontent-length: ${FORGED.length}\r\n\r\n`),
          );
          await new Promise((r) => setTimeout(r, 50));
          await write(conn, encoder.encode(FORGED));
          continue;
        }
        const version = answer === "http/1.0" ? "HTTP/1.0" : "HTTP/1.1";
        const closing = answer === "closes" ? "connection: close\r\n" : "";
        await write(
          conn,
          encoder.encode(
            `${version} 200 OK\r\ncontent-length: ${BODY.byteLength}\r\n${closing}\r\n`,
          ),
        );
        if (answer === "forged-next-later") {
          await write(conn, BODY);
          await new Promise((r) => setTimeout(r, 50));
          await write(conn, encoder.encode(FORGED));
          continue;
        }
        if (answer === "forged-next") {
          const both = new Uint8Array(BODY.byteLength + FORGED.length);
          both.set(BODY);
          both.set(encoder.encode(FORGED), BODY.byteLength);
          await write(conn, both);
          continue;
        }
        if (!isHead) await write(conn, BODY);
        if (answer !== "whole") return;
      }
    } catch {
      /* the client went away */
    } finally {
      open.delete(conn);
      ended++;
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      connections.push(0);
      served.push(serve(conn, connections.length - 1));
    }
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  return {
    origin: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    port,
    connections,
    ended: () => ended,
    async close() {
      listener.close();
      for (const conn of open) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
      await accepting;
      await Promise.all(served);
    },
  };
}

async function write(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.byteLength;) at += await conn.write(bytes.subarray(at));
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  assert(ok(), what);
}

async function getWhole(transport: HttpTransport, url: string): Promise<void> {
  const res = await transport.fetch(new Request(url));
  assertStrictEquals(res.status, 200);
  const got = new Uint8Array(await res.arrayBuffer());
  assertStrictEquals(got.byteLength, BODY.byteLength);
  assert(got.every((b, i) => b === BODY[i]), "the body arrived whole and in order");
}

// A server answering by `answerOf` and a transport with `options`, both closed after `use`.
async function withServer(
  answerOf: (request: number) => Answer,
  options: HttpTransportOptions,
  use: (server: Server, transport: HttpTransport) => Promise<void>,
  tls?: Mode["tls"],
): Promise<void> {
  const server = startServer(answerOf, tls);
  const transport = new HttpTransport(options);
  try {
    await use(server, transport);
  } finally {
    transport.close();
    await server.close();
  }
}

// What `promise` rejected with; undefined when it resolved.
function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => undefined, (err) => err);
}

Deno.test("a download's connection carries the next GET and HEAD on every TLS mode; close() ends it", async () => {
  await using dir = await tempDir();
  for (const mode of await everyTlsMode(dir.path)) {
    await withServer(() => "whole", mode.options, async (server, transport) => {
      await getWhole(transport, `${server.origin}/v2/r/blobs/a`);
      const head = await transport.fetch(new Request(`${server.origin}/v2/`, { method: "HEAD" }));
      assertStrictEquals(head.status, 200, mode.name);
      assertStrictEquals(head.body, null, mode.name);
      await getWhole(transport, `${server.origin}/v2/r/blobs/b`);
      assertEquals(server.connections, [3], `${mode.name}: three requests on one connection`);
      transport.close();
      await until(`${mode.name}: close() ended the kept connection`, () => server.ended() === 1);
    }, mode.tls);
  }
});

Deno.test("a kept connection the server closed is replaced: the request goes again, once, on every TLS mode", async () => {
  await using dir = await tempDir();
  for (const mode of await everyTlsMode(dir.path)) {
    await withServer(() => "whole-then-hang-up", mode.options, async (server, transport) => {
      await getWhole(transport, `${server.origin}/v2/r/blobs/a`);
      await until(`${mode.name}: the server hung up`, () => server.ended() === 1);
      await getWhole(transport, `${server.origin}/v2/r/blobs/b`);
      assertEquals(server.connections, [1, 1], `${mode.name}: each request read once`);
    }, mode.tls);
  }
});

Deno.test("an answer cut after its first bytes on a kept connection fails; the request is not sent again", async () => {
  const answerOf = (n: number): Answer => n === 1 ? "whole" : "cut-in-head";
  await withServer(answerOf, { proxy: false }, async (server, transport) => {
    await getWhole(transport, `${server.origin}/v2/r/blobs/a`);
    const err = await failure(transport.fetch(new Request(`${server.origin}/v2/r/blobs/b`)));
    assert(err instanceof NetworkError, String(err));
    assertEquals(server.connections, [2], "the second request was read once, on the kept one");
  });
});

Deno.test("nothing is kept of an answer not read to its end, one that says close, or an HTTP/1.0 one", async () => {
  for (const answer of ["whole", "closes", "http/1.0"] as const) {
    await withServer(() => answer, { proxy: false }, async (server, transport) => {
      const first = await transport.fetch(new Request(`${server.origin}/v2/r/blobs/a`));
      const reader = first.body!.getReader();
      await reader.read();
      if (answer === "whole") await reader.cancel();
      else while (!(await reader.read()).done) { /* to its end */ }
      await getWhole(transport, `${server.origin}/v2/r/blobs/b`);
      assertEquals(server.connections, [1, 1], `${answer}: a new connection for the next request`);
    });
  }
});

Deno.test("through a proxy, a kept connection serves the same route only", async () => {
  // The server plays the proxy for plain HTTP: absolute-form requests on its connections.
  const server = startServer(() => "whole");
  const direct = startServer(() => "whole");
  const proxy = `http://127.0.0.1:${server.port}`;
  const transport = new HttpTransport({ proxy: { http: proxy, https: proxy } });
  try {
    await getWhole(transport, `http://192.0.2.1:5000/v2/r/blobs/a`);
    await getWhole(transport, `http://192.0.2.1:5000/v2/r/blobs/b`);
    assertEquals(server.connections, [2], "two requests on one connection to the proxy");
    // Another origin through the same proxy dials again.
    await getWhole(transport, `http://192.0.2.2:5000/v2/r/blobs/c`);
    assertEquals(server.connections, [2, 1]);
    assertEquals(direct.connections, [], "nothing went around the proxy");
  } finally {
    transport.close();
    await server.close();
    await direct.close();
  }
});

Deno.test("a kept connection does not keep the process running, on every TLS mode", async () => {
  await using dir = await tempDir();
  for (const mode of await everyTlsMode(dir.path)) {
    const server = startServer(() => "whole", mode.tls);
    try {
      // A program that downloads and never closes its transport.
      const script = `
        import { HttpTransport } from ${
        JSON.stringify(new URL("../../src/transport/mod.ts", import.meta.url).href)
      };
        const transport = new HttpTransport(${JSON.stringify(mode.options)});
        const res = await transport.fetch(new Request(${JSON.stringify(`${server.origin}/v2/`)}));
        await res.arrayBuffer();
        console.log("read", res.status);
      `;
      const child = new Deno.Command(Deno.execPath(), {
        args: ["eval", "--no-check", script],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      const out = await child.output();
      clearTimeout(timer);
      assertStrictEquals(new TextDecoder().decode(out.stdout).trim(), "read 200", mode.name);
      assert(out.success, `${mode.name}: the program ended by itself`);
      assertEquals(server.connections, [1], mode.name);
    } finally {
      await server.close();
    }
  }
});

// Bytes that come after the next request went out are that request's answer, on any HTTP/1.1
// connection that is kept; those that come with the body's end, or while the connection is idle,
// end the connection.
Deno.test("bytes past an answer, with its end or while idle, never become the next request's answer", async () => {
  const cases = [["forged-next", 0], ["204-with-body", 0], ["forged-next-later", 150]] as const;
  for (const [first, idleMs] of cases) {
    const answerOf = (n: number): Answer => n === 1 ? first : "whole";
    await withServer(answerOf, { proxy: false }, async (server, transport) => {
      const res = await transport.fetch(new Request(`${server.origin}/v2/r/blobs/a`));
      await res.arrayBuffer();
      await new Promise((r) => setTimeout(r, idleMs));
      await getWhole(transport, `${server.origin}/v2/r/blobs/b`);
      assertEquals(server.connections.length, 2, `${first}: the out-of-step connection was left`);
    });
  }
});

Deno.test("a status no Fetch response can hold is a malformed answer; its connection is closed", async () => {
  await withServer(() => "status-600", { proxy: false }, async (server, transport) => {
    for (let i = 0; i < 3; i++) {
      const err = await failure(transport.fetch(new Request(`${server.origin}/v2/`)));
      assert(err instanceof NetworkError, String(err));
    }
    await until("every connection was closed", () => server.ended() === server.connections.length);
  });
});

Deno.test("close() while a download dials: the request fails and leaves no connection", async () => {
  await withServer(() => "whole", { proxy: false }, async (server, transport) => {
    const pending = transport.fetch(new Request(`${server.origin}/v2/`));
    transport.close();
    const err = await failure(pending);
    assert(err instanceof NetworkError, String(err));
    await until(
      "the dialed connection was closed",
      () => server.ended() === server.connections.length,
    );
  });
});
