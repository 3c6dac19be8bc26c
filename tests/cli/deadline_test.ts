import { assertStrictEquals } from "../fixtures/assert.ts";
import { startDeadline } from "../../src/cli/session/deadline.ts";

Deno.test("a deadline past setTimeout's 2^31 ms limit does not fire early, and fires when due", async () => {
  const deadline = startDeadline(600 * 3_600_000);
  try {
    // The first link of the chain waits 2^31-1 ms; it must not have fired at once.
    await new Promise((r) => setTimeout(r, 50));
    assertStrictEquals(deadline.signal.aborted, false);
  } finally {
    deadline[Symbol.dispose]();
  }
  const short = startDeadline(30);
  await new Promise((r) => setTimeout(r, 200));
  assertStrictEquals(short.signal.aborted, true);
  assertStrictEquals((short.signal.reason as DOMException).name, "TimeoutError");
  short[Symbol.dispose]();
});
