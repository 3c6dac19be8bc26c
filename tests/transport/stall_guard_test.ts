import {
  assert,
  assertEquals,
  assertMatch,
  assertStrictEquals,
  assertThrows,
} from "../fixtures/assert.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StallError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { fileBody } from "../../src/transport/file_body.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import {
  DEFAULT_STALL_TIMEOUT_MS,
  validateStallTimeout,
} from "../../src/transport/layers/stall_guard.ts";
import { layeredFetch } from "../../src/transport/layers/layered_fetch.ts";
import { startLoopbackServer } from "../fixtures/loopback_server.ts";
import { recordErrors } from "../reliability/leak_scan.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function serve(handler: Handler) {
  const server = await startLoopbackServer((req, res) => Promise.resolve(handler(req, res)));
  return { url: `http://${server.host}/x`, close: () => server.close() };
}

/** Runs `fn` with a guarded default transport; fails the test if it hangs past 10 s. */
async function withGuarded(
  handler: Handler,
  fn: (fetch: (r: Request) => Promise<Response>, url: string) => Promise<void>,
  stallTimeoutMs = 150,
) {
  const server = await serve(handler);
  const transport = new HttpTransport();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      fn(layeredFetch(transport.fetch, { stallTimeoutMs }), server.url),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("test watchdog: hung")), 10_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    transport.close();
    await server.close();
  }
}

async function expectStall(promise: Promise<unknown>): Promise<StallError> {
  const err = await promise.then(() => undefined, (e) => e);
  assert(err instanceof StallError, `expected StallError, got ${err}`);
  assertStrictEquals(retryable(err).retryable, true);
  recordErrors("stall_guard", [err]);
  return err;
}

Deno.test("stall guard: a response body that stops moving fails with a retryable StallError", async () => {
  await withGuarded((_req, res) => {
    res.writeHead(200, { "content-length": "1000" });
    res.write(new Uint8Array(100)); // then silence, connection kept open
  }, async (fetch, url) => {
    const response = await fetch(new Request(url));
    assertStrictEquals(response.status, 200);
    const err = await expectStall(response.arrayBuffer());
    assertMatch(err.message, /^GET request: no progress for 150 ms$/);
  });
});

Deno.test("stall guard: a server that never answers fails the request, not the caller", async () => {
  await withGuarded((req) => {
    req.resume(); // reads the request, never answers
  }, async (fetch, url) => {
    await expectStall(fetch(new Request(url)));
  });
});

Deno.test("stall guard: an upload the server stops reading fails with StallError", async () => {
  await withGuarded((req) => {
    req.pause(); // never reads: the socket buffers fill and the upload stops moving
  }, async (fetch, url) => {
    const size = 64 << 20;
    const chunk = new Uint8Array(1 << 20);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= size) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const err = await expectStall(
      fetch(
        new Request(url, {
          method: "PUT",
          body,
          headers: { "content-length": String(size) },
          duplex: "half",
        } as RequestInit),
      ),
    );
    assertMatch(err.message, /^PUT request:/);
    assert(sent < size, "the body was not fully sent");
  });
});

Deno.test("stall guard: a fileBody upload the server stops reading fails with StallError", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const size = 64 << 20;
    const path = `${dir}/body.bin`;
    await Deno.writeFile(path, new Uint8Array(size));
    await withGuarded((req) => {
      req.pause(); // never reads: the socket buffers fill and the upload stops moving
    }, async (fetch, url) => {
      let sent = 0;
      const err = await expectStall(
        fetch(
          new Request(url, {
            method: "PUT",
            body: fileBody(path, 0, size, { onBytes: (n) => sent += n }),
            headers: { "content-length": String(size) },
            duplex: "half",
          } as RequestInit),
        ),
      );
      assertMatch(err.message, /^PUT request:/);
      // The caller's hook still sees the chunks that went out.
      assert(sent > 0 && sent < size, `sent ${sent}`);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stall guard: a slow but moving body and a slow source are not stalls", async () => {
  await withGuarded((req, res) => {
    const parts: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => parts.push(c));
    req.on("end", () => {
      const total = parts.reduce((n, p) => n + p.byteLength, 0);
      res.writeHead(200, { "content-length": "8" });
      let i = 0;
      // 8 bytes, one every 60 ms: each gap is below the 150 ms timeout, the total is above it.
      const tick = setInterval(() => {
        res.write(new Uint8Array([total & 0xff]));
        if (++i === 8) {
          clearInterval(tick);
          res.end();
        }
      }, 60);
    });
  }, async (fetch, url) => {
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // The source itself takes longer than the timeout: that is not the network stalling.
        await new Promise((r) => setTimeout(r, 250));
        if (n++ === 2) return controller.close();
        controller.enqueue(new Uint8Array(10));
      },
    });
    const response = await fetch(
      new Request(url, {
        method: "PUT",
        body,
        headers: { "content-length": "20" },
        duplex: "half",
      } as RequestInit),
    );
    const bytes = new Uint8Array(await response.arrayBuffer());
    assertEquals([...bytes], new Array(8).fill(20));
  });
});

Deno.test("stall guard: an unread response body is not a stall", async () => {
  await withGuarded((_req, res) => {
    res.writeHead(200, { "content-length": "4" });
    res.end("abcd");
  }, async (fetch, url) => {
    const response = await fetch(new Request(url));
    await new Promise((r) => setTimeout(r, 400));
    assertStrictEquals(await response.text(), "abcd");
  });
});

Deno.test("stall guard: the caller's abort wins and keeps its reason", async () => {
  await withGuarded((req) => req.resume(), async (fetch, url) => {
    const controller = new AbortController();
    const reason = new Error("caller stop");
    setTimeout(() => controller.abort(reason), 20);
    const err = await fetch(new Request(url, { signal: controller.signal })).catch((e) => e);
    assertStrictEquals(err, reason);
  }, 5_000);
});

Deno.test("stall guard: options", () => {
  assertStrictEquals(validateStallTimeout(undefined), DEFAULT_STALL_TIMEOUT_MS);
  assertStrictEquals(DEFAULT_STALL_TIMEOUT_MS, 60_000);
  for (const bad of [-1, NaN, "5" as unknown as number]) {
    assertThrows(() => validateStallTimeout(bad), RangeError);
  }
});
