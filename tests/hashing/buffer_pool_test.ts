/**
 * The buffer pool's leases: what one user gives back serves the next (no new buffers, so no
 * garbage per user), and what a closed lease still held is written off so the pool never runs
 * dry.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { BufferPool } from "../../src/hashing/buffer_pool.ts";

Deno.test("buffer pool: leases one after another reuse the same buffers", async () => {
  const pool = new BufferPool(2, 1024);
  const seen = new Set<ArrayBuffer>();
  for (let user = 0; user < 10; user++) {
    const lease = pool.lease();
    const a = await lease.acquire();
    const b = await lease.acquire();
    seen.add(a).add(b);
    lease.release(a);
    lease.release(b);
    lease.close();
  }
  assertEquals(seen.size, 2, "ten users, two buffers");
});

Deno.test("buffer pool: leases share one limit, and a waiter gets what another lease gives back", async () => {
  const pool = new BufferPool(2, 1024);
  const first = pool.lease();
  const second = pool.lease();
  const a = await first.acquire();
  await second.acquire();
  let waited: ArrayBuffer | undefined;
  const waiting = second.acquire().then((buffer) => waited = buffer);
  await Promise.resolve();
  assertEquals(waited, undefined, "the pool's two buffers are out");
  first.release(a);
  await waiting;
  assert(waited === a);
});

Deno.test("buffer pool: a closed lease writes off what it held, so the pool makes new ones for a waiter", async () => {
  const pool = new BufferPool(1, 1024);
  const failed = pool.lease();
  const lost = await failed.acquire();
  const next = pool.lease();
  const waiting = next.acquire();
  failed.close();
  const fresh = await waiting;
  assert(fresh !== lost, "a new buffer replaces the lost one");
  // The lost buffer coming back late is dropped, not added beyond the limit.
  failed.release(lost);
  next.release(fresh);
  const again = pool.lease();
  assert(await again.acquire() === fresh);
  let extra: ArrayBuffer | undefined;
  again.acquire().then((buffer) => extra = buffer);
  await Promise.resolve();
  assertEquals(extra, undefined, "still one buffer in all");
});
