/**
 * `layeredFetch`, the one call that puts a route's layers in front of its transport: the
 * User-Agent (a caller's own kept), the stall watchdog (a silent exchange fails as a retryable
 * `StallError`, 0 and `Infinity` turn it off, a bad value is refused) and the bandwidth cap on
 * both bodies.
 */
import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { StallError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { layeredFetch } from "../../src/transport/layers/layered_fetch.ts";
import { RateLimiter } from "../../src/transport/layers/rate_limit.ts";
import { USER_AGENT } from "../../src/transport/layers/user_agent.ts";

function echoAgent(seen: string[]) {
  return (request: Request) => {
    seen.push(request.headers.get("user-agent") ?? "");
    return Promise.resolve(new Response(null, { status: 204 }));
  };
}

/** A transport that never answers until the request's signal ends it. */
function silent(request: Request): Promise<Response> {
  return new Promise((_, reject) => {
    request.signal.addEventListener("abort", () => reject(request.signal.reason), { once: true });
  });
}

Deno.test("layeredFetch names the package unless the request names itself", async () => {
  const seen: string[] = [];
  const fetch = layeredFetch(echoAgent(seen), {});
  await fetch(new Request("http://127.0.0.1/", { headers: { "user-agent": "mine/1" } }));
  await fetch(new Request("http://127.0.0.1/"));
  assertEquals(seen, ["mine/1", USER_AGENT]);
});

Deno.test("layeredFetch fails a silent exchange with a retryable StallError", async () => {
  const fetch = layeredFetch(silent, { stallTimeoutMs: 50 });
  // The watchdog's timer does not hold the process open; a test's own timer does.
  const alive = setTimeout(() => {}, 5_000);
  const err = await assertRejects(() => fetch(new Request("http://127.0.0.1/")));
  clearTimeout(alive);
  assertInstanceOf(err, StallError);
  assertEquals(retryable(err).retryable, true);
});

Deno.test("layeredFetch watches nothing when the stall timeout is 0 or Infinity", async () => {
  for (const stallTimeoutMs of [0, Infinity]) {
    const controller = new AbortController();
    const fetch = layeredFetch(silent, { stallTimeoutMs });
    const answer = fetch(new Request("http://127.0.0.1/", { signal: controller.signal }));
    const reason = new Error("caller stop");
    setTimeout(() => controller.abort(reason), 100);
    assertEquals(await answer.catch((e) => e), reason, String(stallTimeoutMs));
  }
});

Deno.test("layeredFetch refuses an invalid stall timeout", () => {
  for (const stallTimeoutMs of [-1, NaN]) {
    let thrown: unknown;
    try {
      layeredFetch(silent, { stallTimeoutMs });
    } catch (err) {
      thrown = err;
    }
    assertInstanceOf(thrown, RangeError);
  }
});

Deno.test("layeredFetch draws both bodies through the cap", async () => {
  const limiter = new RateLimiter({ bytesPerSecond: 64 * 1024 });
  const fetch = layeredFetch(async (request) => {
    const sent = new Uint8Array(await request.arrayBuffer());
    return new Response(sent);
  }, { limiter });
  const body = new Uint8Array(96 * 1024).fill(7);
  const started = performance.now();
  const response = await fetch(new Request("http://127.0.0.1/", { method: "PUT", body }));
  const back = new Uint8Array(await response.arrayBuffer());
  const elapsed = performance.now() - started;
  assertEquals(back.length, body.length);
  // 192 KiB through a 64 KiB/s cap (its first second's allowance spent at once) takes over 1 s.
  assert(elapsed > 1_000, `took ${Math.round(elapsed)} ms`);
});
