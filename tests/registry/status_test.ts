import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { ContentEncodingError, HttpStatusError, ProtocolError } from "../../src/errors/mod.ts";
import { isRetryableStatus } from "../../src/errors/retryable.ts";
import {
  ERROR_BODY_LIMIT,
  expectStatus,
  readBoundedBody,
  requireIdentityEncoding,
} from "../../src/registry/status.ts";

/** A body that counts what it hands out and records whether it was cancelled. */
function countingBody(total: number, chunk = 1000) {
  const state = { pulled: 0, pulls: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.pulls++;
      const size = Math.min(chunk, total - state.pulled);
      if (size <= 0) return controller.close();
      state.pulled += size;
      controller.enqueue(new Uint8Array(size).fill(0x61));
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { stream, state };
}

/** A body that fails the test if anybody reads it, and never ends on its own. */
function forbiddenBody() {
  const state = { pulls: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull() {
      state.pulls++;
      throw new Error("this body must not be read");
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { stream, state };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

Deno.test("an expected status resolves and leaves the body for the caller", async () => {
  for (const status of [200, 201, 202, 206, 307, 404]) {
    const response = new Response(status === 307 ? null : "payload", { status });
    await expectStatus(response, [status], "GET blob");
    assertStrictEquals(response.bodyUsed, false);
    if (response.body !== null) assertStrictEquals(await response.text(), "payload");
  }
  await expectStatus(new Response(null, { status: 202 }), [201, 202], "POST blob upload");
});

Deno.test("an unexpected 2xx is a ProtocolError, never success", async () => {
  const noContent = await rejection(
    expectStatus(new Response(null, { status: 204 }), [200], "GET blob"),
  );
  assert(noContent instanceof ProtocolError);
  assertStrictEquals(noContent.status, 204);
  for (const status of [200, 201, 202, 206]) {
    const { stream, state } = forbiddenBody();
    const err = await rejection(
      expectStatus(new Response(stream, { status }), [status === 200 ? 206 : 200], "GET blob"),
    );
    assert(err instanceof ProtocolError);
    assertStrictEquals(err.message, `GET blob: unexpected status ${status}`);
    assertStrictEquals(err.status, status);
    assertStrictEquals(err.retryable, false);
    assertStrictEquals(state.pulls, 0);
    assertStrictEquals(state.cancelled, true);
  }
});

Deno.test("error statuses become HttpStatusError classified by isRetryableStatus", async () => {
  for (const status of [301, 400, 401, 403, 404, 405, 409, 410, 413, 429, 500, 502, 503, 504]) {
    for (const offOrigin of [false, true]) {
      const err = await rejection(
        expectStatus(new Response("{}", { status }), [200], "GET blob", { offOrigin }),
      );
      assert(err instanceof HttpStatusError, `${status}`);
      assertStrictEquals(err.status, status);
      assertStrictEquals(err.operation, "GET blob");
      assertStrictEquals(err.offOrigin, offOrigin);
      assertStrictEquals(
        err.retryable,
        isRetryableStatus(status, offOrigin),
        `${status} ${offOrigin}`,
      );
      assertStrictEquals(err.retryAfterMs, undefined);
      assertStrictEquals(
        err.message,
        offOrigin ? `GET blob: storage answered ${status}` : `GET blob: status ${status}`,
      );
    }
  }
  // The classification the specs require, spelled out.
  const retryableOf = async (status: number, offOrigin: boolean) =>
    ((await rejection(
      expectStatus(new Response(null, { status }), [200], "op", { offOrigin }),
    )) as HttpStatusError).retryable;
  assertStrictEquals(await retryableOf(404, false), false);
  assertStrictEquals(await retryableOf(401, false), false);
  assertStrictEquals(await retryableOf(413, false), false);
  assertStrictEquals(await retryableOf(429, false), true);
  assertStrictEquals(await retryableOf(500, false), true);
  assertStrictEquals(await retryableOf(404, true), true);
  assertStrictEquals(await retryableOf(403, true), true);
  assertStrictEquals(await retryableOf(410, true), true);
  assertStrictEquals(await retryableOf(400, true), false);
});

Deno.test("Retry-After in seconds and as an HTTP-date becomes retryAfterMs", async () => {
  const now = Date.UTC(2030, 0, 1, 0, 0, 0);
  const cases: [string, number | undefined][] = [
    ["3", 3000],
    [" 0 ", 0],
    ["120", 120_000],
    [new Date(now + 7000).toUTCString(), 7000],
    [new Date(now - 7000).toUTCString(), 0],
    ["soon", undefined],
    ["-1", undefined],
    ["1.5", undefined],
    ["99999999999999999999", undefined],
  ];
  for (const [value, expected] of cases) {
    const response = new Response(null, { status: 429, headers: { "retry-after": value } });
    const err = await rejection(expectStatus(response, [200], "PUT blob upload", { nowMs: now }));
    assert(err instanceof HttpStatusError);
    assertStrictEquals(err.retryAfterMs, expected, value);
    assertStrictEquals(err.retryable, true);
  }
  const offOrigin = new Response(null, { status: 503, headers: { "retry-after": "2" } });
  const err = await rejection(expectStatus(offOrigin, [201], "PUT", { offOrigin: true }));
  assertStrictEquals((err as HttpStatusError).retryAfterMs, 2000);
});

Deno.test("the error body is kept bounded and never rendered, even with URLs and tokens", async () => {
  const secret =
    '{"errors":[{"code":"DENIED","message":"https://storage.example/up?X-Amz-Signature=s3cr3t",' +
    '"detail":"Bearer eyJhbGciOiJFUzI1NiJ9.tok"}]}';
  const err = await rejection(
    expectStatus(new Response(secret, { status: 403 }), [200], "PUT manifest"),
  );
  assert(err instanceof HttpStatusError);
  assertStrictEquals(new TextDecoder().decode(err.body), secret);
  assertStrictEquals(err.message, "PUT manifest: status 403");
  const rendered = `${err}\n${err.stack}\n${JSON.stringify(err)}`;
  for (const part of ["storage.example", "s3cr3t", "eyJhbGciOiJFUzI1NiJ9", "DENIED"]) {
    assert(!rendered.includes(part), part);
  }
  const big = "x".repeat(100_000);
  const bounded = await rejection(expectStatus(new Response(big, { status: 400 }), [201], "op"));
  assertStrictEquals((bounded as HttpStatusError).body.byteLength, ERROR_BODY_LIMIT);
  const custom = await rejection(
    expectStatus(new Response(big, { status: 400 }), [201], "op", { bodyLimit: 10 }),
  );
  assertStrictEquals((custom as HttpStatusError).body.byteLength, 10);
});

Deno.test("a 416 body is never read", async () => {
  const { stream, state } = forbiddenBody();
  const response = new Response(stream, {
    status: 416,
    headers: { "content-range": "bytes */10" },
  });
  const err = await rejection(expectStatus(response, [206], "GET blob"));
  assert(err instanceof HttpStatusError);
  assertStrictEquals(err.status, 416);
  assertStrictEquals(err.body.byteLength, 0);
  assertStrictEquals(err.retryable, false);
  assertStrictEquals(state.pulls, 0);
  assertStrictEquals(state.cancelled, true);
});

Deno.test("an off-origin error body is dropped unread: it may echo a signed URL", async () => {
  const { stream, state } = forbiddenBody();
  const err = await rejection(
    expectStatus(new Response(stream, { status: 403 }), [201], "PUT blob upload", {
      offOrigin: true,
    }),
  );
  assert(err instanceof HttpStatusError);
  assertStrictEquals(err.body.byteLength, 0);
  assertStrictEquals(state.pulls, 0);
  assertStrictEquals(state.cancelled, true);
});

Deno.test("a large error body is not read past the limit and the rest is cancelled", async () => {
  const { stream, state } = countingBody(64 * 1024 * 1024, 1000);
  const err = await rejection(expectStatus(new Response(stream, { status: 500 }), [200], "op"));
  assert(err instanceof HttpStatusError);
  assertStrictEquals(err.body.byteLength, ERROR_BODY_LIMIT);
  // 4096 bytes need five 1000-byte chunks; nothing more is pulled from the source.
  assertStrictEquals(state.pulled, 5000);
  assertStrictEquals(state.cancelled, true);
});

Deno.test("readBoundedBody: short, exact, empty, null and failing bodies", async () => {
  assertEquals(await readBoundedBody(new Response("abc"), 10), new TextEncoder().encode("abc"));
  assertStrictEquals((await readBoundedBody(new Response("x".repeat(10)), 10)).byteLength, 10);
  assertStrictEquals((await readBoundedBody(new Response(null))).byteLength, 0);
  assertStrictEquals((await readBoundedBody(new Response(""), 10)).byteLength, 0);
  const { stream, state } = countingBody(100, 10);
  assertStrictEquals((await readBoundedBody(new Response(stream), 0)).byteLength, 0);
  assertStrictEquals(state.pulled, 0);
  let sent = false;
  const failing = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent) return controller.error(new Error("connection reset"));
      sent = true;
      controller.enqueue(new TextEncoder().encode("part"));
    },
  }, { highWaterMark: 0 });
  assertStrictEquals(
    new TextDecoder().decode(await readBoundedBody(new Response(failing))),
    "part",
  );
});

Deno.test("requireIdentityEncoding refuses any coding but identity", () => {
  requireIdentityEncoding(new Response("x"), "GET blob");
  requireIdentityEncoding(
    new Response("x", { headers: { "content-encoding": "identity" } }),
    "GET blob",
  );
  requireIdentityEncoding(
    new Response("x", { headers: { "content-encoding": " Identity " } }),
    "GET blob",
  );
  for (const coding of ["gzip", "br", "deflate", "zstd", "identity, gzip", "x-secret-coding"]) {
    const { stream, state } = forbiddenBody();
    const response = new Response(stream, { headers: { "content-encoding": coding } });
    let caught: unknown;
    try {
      requireIdentityEncoding(response, "GET manifest");
    } catch (err) {
      caught = err;
    }
    assert(caught instanceof ContentEncodingError, coding);
    assertStrictEquals(caught.retryable, false);
    assert(caught.message.startsWith("GET manifest: "));
    assert(!caught.message.includes(coding), "the coding is not named");
    assertStrictEquals(state.pulls, 0);
    assertStrictEquals(state.cancelled, true);
  }
});
