import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { retry, retryDelay, type RetryPolicy } from "../../src/remote/retry.ts";
import { BLOB_SPEC_POLICY, DEFAULT_POLICY } from "../../src/remote/policy.ts";

const BLOB_RETRY_POLICY = BLOB_SPEC_POLICY.retry;
const PARTED_RETRY_POLICY = DEFAULT_POLICY.retry;
import { parseRetryAfter } from "../../src/registry/retry_after.ts";
import { type Clock, systemClock } from "../../src/transport/clock.ts";
import {
  HttpStatusError,
  NetworkError,
  ProtocolError,
  RetriesExhaustedError,
} from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";

/** A clock that never waits: it records each requested sleep and plays back `randoms`. */
class FakeClock implements Clock {
  sleeps: number[] = [];
  #randoms: number[];
  #time = 0;
  /** When true, sleeps only end by abort, like a long real wait. */
  hold = false;
  sleeping: Promise<void>;
  #wake!: () => void;
  constructor(randoms: number[] = [0.5]) {
    this.#randoms = randoms;
    this.sleeping = new Promise((resolve) => this.#wake = resolve);
  }
  now(): number {
    return this.#time;
  }
  random(): number {
    const value = this.#randoms.shift() ?? 0.5;
    this.#randoms.push(value);
    return value;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    this.#wake();
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!this.hold) {
      this.#time += ms;
      return Promise.resolve();
    }
    return new Promise((_resolve, reject) => {
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  }
}

const transient = (retryAfterMs?: number) =>
  new HttpStatusError("GET blob", { status: 503, retryable: true, retryAfterMs });

/** Runs `retry` with a function failing `failures` times (with `makeError`) before succeeding. */
async function run(
  policy: RetryPolicy,
  clock: FakeClock,
  failures: number,
  makeError: (attempt: number) => unknown = () => transient(),
): Promise<{ result: unknown; attempts: number }> {
  let attempts = 0;
  const result = await retry("GET blob", (attempt) => {
    attempts = attempt;
    if (attempt <= failures) return Promise.reject(makeError(attempt));
    return Promise.resolve("done");
  }, { policy, clock }).catch((err) => err);
  return { result, attempts };
}

Deno.test("backoff: full jitter within [0, min(cap, base * 2^n)) for every retry", async () => {
  const policy = { maxAttempts: 9, baseDelayMs: 1000, maxDelayMs: 30_000 };
  const ceilings = [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000];
  for (const random of [0, 0.25, 0.999999]) {
    const clock = new FakeClock([random]);
    const { result, attempts } = await run(policy, clock, 8);
    assertStrictEquals(result, "done");
    assertStrictEquals(attempts, 9);
    assertStrictEquals(clock.sleeps.length, 8);
    clock.sleeps.forEach((ms, n) => {
      assert(ms >= 0 && ms < ceilings[n], `retry ${n}: ${ms} outside [0, ${ceilings[n]})`);
      assertStrictEquals(ms, random * ceilings[n]);
    });
  }
  // The blob library's policy starts at 250 ms.
  assert(retryDelay(0, BLOB_RETRY_POLICY, 0.999999) < 250);
  assert(retryDelay(2, BLOB_RETRY_POLICY, 0.999999) < 1000);
  assert(retryDelay(2, BLOB_RETRY_POLICY, 0.999999) > 999);
});

Deno.test("Retry-After is a floor: it raises a short jitter but never lowers a long one", async () => {
  const clock = new FakeClock([0.1]);
  await run(PARTED_RETRY_POLICY, clock, 1, () => transient(5000));
  assertEquals(clock.sleeps, [5000]); // jitter alone would be 100 ms
  const jittered = new FakeClock([0.9]);
  await run(PARTED_RETRY_POLICY, jittered, 3, () => transient(100));
  assertEquals(jittered.sleeps, [900, 1800, 3600]);
});

Deno.test("Retry-After above the cap waits 30 s, not longer", async () => {
  const clock = new FakeClock([0.5]);
  await run(PARTED_RETRY_POLICY, clock, 2, () => transient(120_000));
  assertEquals(clock.sleeps, [30_000, 30_000]);
});

Deno.test("Retry-After in HTTP-date form becomes a floor from now", async () => {
  const now = Date.UTC(2024, 0, 1, 12, 0, 0);
  const in7s = new Date(now + 7000).toUTCString();
  assertStrictEquals(parseRetryAfter(in7s, now), 7000);
  assertStrictEquals(parseRetryAfter("Mon, 01 Jan 2024 11:00:00 GMT", now), 0); // in the past
  assertStrictEquals(parseRetryAfter("12", now), 12_000);
  assertStrictEquals(parseRetryAfter("soon", now), undefined);
  assertStrictEquals(parseRetryAfter(null, now), undefined);
  const clock = new FakeClock([0]);
  await run(PARTED_RETRY_POLICY, clock, 1, () => transient(parseRetryAfter(in7s, now)));
  assertEquals(clock.sleeps, [7000]);
});

Deno.test("a terminal error is rethrown unchanged after one attempt, without waiting", async () => {
  const terminal = new ProtocolError("GET blob: unexpected status 204");
  const clock = new FakeClock();
  const { result, attempts } = await run(PARTED_RETRY_POLICY, clock, 4, () => terminal);
  assertStrictEquals(result, terminal);
  assertStrictEquals(attempts, 1);
  assertEquals(clock.sleeps, []);
  // An error no layer classified is terminal too.
  const plain = new Error("bug");
  const other = await run(PARTED_RETRY_POLICY, new FakeClock(), 4, () => plain);
  assertStrictEquals(other.result, plain);
  assertStrictEquals(other.attempts, 1);
});

Deno.test("exhaustion wraps the last failure; its classification and floor stay reachable", async () => {
  const clock = new FakeClock([0]);
  const last = transient(2500);
  const { result, attempts } = await run(
    PARTED_RETRY_POLICY,
    clock,
    4,
    (n) => n === 4 ? last : new NetworkError("GET blob: connection failed"),
  );
  assertStrictEquals(attempts, 4);
  assert(result instanceof RetriesExhaustedError);
  assertStrictEquals(result.attempts, 4);
  assertStrictEquals(result.message, "GET blob: failed after 4 attempts");
  assertStrictEquals(result.cause, last);
  assertEquals(retryable(result), { retryable: true, retryAfterMs: 2500 });
  assertStrictEquals(clock.sleeps.length, 3); // no wait after the last attempt
});

Deno.test("maxAttempts 1 makes exactly one attempt", async () => {
  const clock = new FakeClock();
  const policy = { maxAttempts: 1, baseDelayMs: 1000, maxDelayMs: 30_000 };
  const { result, attempts } = await run(policy, clock, 5);
  assertStrictEquals(attempts, 1);
  assert(result instanceof RetriesExhaustedError);
  assertStrictEquals(result.message, "GET blob: failed after 1 attempt");
  assertEquals(clock.sleeps, []);
});

Deno.test("an invalid policy is refused before any attempt instead of looping", async () => {
  for (
    const policy of [
      { maxAttempts: 0, baseDelayMs: 1, maxDelayMs: 1 },
      { maxAttempts: NaN, baseDelayMs: 1, maxDelayMs: 1 },
      {} as RetryPolicy,
      { maxAttempts: 2, baseDelayMs: -1, maxDelayMs: 1 },
    ]
  ) {
    let calls = 0;
    await assertRejects(
      retry("GET blob", () => {
        calls++;
        return Promise.reject(transient());
      }, { policy, clock: new FakeClock() }),
      RangeError,
    );
    assertStrictEquals(calls, 0);
  }
});

Deno.test("an abort during a wait rejects promptly with the signal's reason", async () => {
  const clock = new FakeClock([0.5]);
  clock.hold = true;
  const controller = new AbortController();
  let attempts = 0;
  const pending = retry("GET blob", () => {
    attempts++;
    return Promise.reject(transient());
  }, { policy: PARTED_RETRY_POLICY, clock, signal: controller.signal });
  await clock.sleeping;
  const reason = new DOMException("user stop", "AbortError");
  controller.abort(reason);
  await assertRejects(pending, (err) => err === reason);
  assertStrictEquals(attempts, 1);
  assertStrictEquals(retryable(reason).retryable, false);
});

Deno.test("an abort raised by the attempt itself is not retried", async () => {
  const controller = new AbortController();
  const clock = new FakeClock();
  let attempts = 0;
  const reason = new Error("cancelled by caller");
  const err = await retry("GET blob", () => {
    attempts++;
    controller.abort(reason);
    return Promise.reject(new NetworkError("GET blob: connection failed"));
  }, { policy: PARTED_RETRY_POLICY, clock, signal: controller.signal }).catch((e) => e);
  assertStrictEquals(err, reason);
  assertStrictEquals(attempts, 1);
  assertEquals(clock.sleeps, []);
});

Deno.test("the system clock's sleep ends at once on abort", async () => {
  const controller = new AbortController();
  const pending = systemClock.sleep(3_600_000, controller.signal);
  const reason = new Error("stop");
  controller.abort(reason);
  await assertRejects(pending, (err) => err === reason);
  await assertRejects(systemClock.sleep(1, AbortSignal.abort(reason)), (err) => err === reason);
});
