import {
  DEFAULT_TOKEN_LIFETIME_MS,
  reuseMarginMs,
  TokenCache,
  tokenLifetimeMs,
} from "../../src/auth/token_cache.ts";
import type { Clock } from "../../src/transport/clock.ts";
import { assert, assertEquals, assertThrows } from "../fixtures/assert.ts";

/** A monotonic clock that only moves when told. */
function fakeClock(): Clock & { advance(ms: number): void } {
  let now = 1_000_000;
  return {
    now: () => now,
    random: () => 0.5,
    sleep: () => Promise.resolve(),
    advance(ms: number) {
      now += ms;
    },
  };
}

Deno.test("token cache: no expires_in means 60 s, reused for 30 s", () => {
  const clock = fakeClock();
  const cache = new TokenCache({ clock });
  cache.set("r", "pull", "t1");
  assertEquals(cache.peek("r", "pull")?.lifetimeMs, DEFAULT_TOKEN_LIFETIME_MS);
  clock.advance(29_999);
  assertEquals(cache.get("r", "pull")?.token, "t1");
  clock.advance(1);
  assertEquals(cache.get("r", "pull"), undefined, "at lifetime − margin the token is not reused");
  assertEquals(cache.peek("r", "pull")?.token, "t1", "peek still sees it");
});

Deno.test("token cache: a long token keeps the 30 s margin", () => {
  const clock = fakeClock();
  const cache = new TokenCache({ clock });
  cache.set("r", "push", "t1", 300);
  clock.advance(269_999);
  assertEquals(cache.get("r", "push")?.token, "t1");
  clock.advance(1);
  assertEquals(cache.get("r", "push"), undefined);
});

Deno.test("token cache: a token shorter than 60 s gets half its lifetime as margin", () => {
  const clock = fakeClock();
  const cache = new TokenCache({ clock });
  cache.set("r", "pull", "t1", 20);
  clock.advance(9_999);
  assertEquals(cache.get("r", "pull")?.token, "t1");
  clock.advance(1);
  assertEquals(cache.get("r", "pull"), undefined);
  assertEquals(reuseMarginMs(20_000), 10_000);
  assertEquals(reuseMarginMs(60_000), 30_000);
  assertEquals(reuseMarginMs(600_000), 30_000);
});

Deno.test("token cache: expires_in that is not a positive number means the default", () => {
  for (const value of [0, -5, "300", null, Number.NaN, Infinity]) {
    assertEquals(tokenLifetimeMs(value), DEFAULT_TOKEN_LIFETIME_MS, String(value));
  }
  assertEquals(tokenLifetimeMs(1.5), 1500);
});

Deno.test("token cache: at most two entries per repository, filed by method entry", () => {
  const clock = fakeClock();
  const cache = new TokenCache({ clock });
  cache.set("r", "pull", "p1", 300);
  cache.set("r", "push", "w1", 300);
  cache.set("r", "pull", "p2", 300); // replaces, never adds a third
  cache.set("r", "push", "w2", 300);
  assertEquals(cache.entryCount("r"), 2);
  assertEquals(cache.get("r", "pull")?.token, "p2");
  assertEquals(cache.get("r", "push")?.token, "w2");
  assertEquals(cache.get("other", "pull"), undefined);
  cache.delete("r", "pull", "not-the-token");
  assertEquals(cache.entryCount("r"), 2, "delete with another token keeps the entry");
  cache.delete("r", "pull", "p2");
  assertEquals(cache.entryCount("r"), 1);
});

Deno.test("token cache: remaining time follows the stated lifetime, monotonic clock only", () => {
  const clock = fakeClock();
  const cache = new TokenCache({ clock });
  const entry = cache.set("r", "pull", "t", 120);
  clock.advance(100_000);
  assertEquals(cache.remainingMs(entry), 20_000);
  assert(!entry.proven, "a new token has not carried a success yet");
});

Deno.test("token cache: the least recently used repository is dropped past the bound", () => {
  const cache = new TokenCache({ clock: fakeClock(), maxRepositories: 2 });
  cache.set("a", "pull", "ta", 300);
  cache.set("b", "pull", "tb", 300);
  cache.get("a", "pull"); // a is now more recent than b
  cache.set("c", "pull", "tc", 300);
  assertEquals(cache.repositoryCount, 2);
  assertEquals(cache.get("b", "pull"), undefined);
  assertEquals(cache.get("a", "pull")?.token, "ta");
  assertThrows(() => new TokenCache({ maxRepositories: 0 }), RangeError);
});
