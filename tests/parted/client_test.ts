/**
 * A client's default transports serve all its transfers: keep-alive connections opened by one
 * pull are reused by the next, `close()` ends them, and a closed client refuses new work.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";

/** A TCP relay in front of `port` that counts the client connections it accepts. */
function startRelay(port: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  let open = 0;
  const done: Promise<void>[] = [];
  const conns = new Set<Deno.Conn>();
  const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
    try {
      await from.readable.pipeTo(to.writable, { preventClose: true });
    } catch { /* either side went away */ }
    for (const c of [from, to]) {
      try {
        c.close();
      } catch { /* already closed */ }
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      accepted++;
      open++;
      conns.add(conn);
      done.push((async () => {
        try {
          const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
          conns.add(upstream);
          await Promise.all([pipe(conn, upstream), pipe(upstream, conn)]);
        } catch { /* upstream refused */ }
        open--;
      })());
    }
  })().catch(() => {});
  return {
    host: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    get accepted() {
      return accepted;
    },
    get open() {
      return open;
    },
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* already closed */ }
      }
      await accepting;
      await Promise.all(done);
    },
  };
}

Deno.test("a client reuses its connections across pulls; close() ends them and the client", async () => {
  await using fake = await startFakeRegistry();
  await using dir = await tempDir();
  const relay = startRelay(fake.port);
  try {
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, 300_000);
    const ref = `${relay.host}/client/reuse:v1`;
    {
      using pusher = new PartedClient({ plainHttp: true });
      await pusher.push(ref, fromFile(src), { partSize: 65536, workers: 1 });
    }
    const client = new PartedClient({ plainHttp: true });
    await client.pull(ref, toFile(`${dir.path}/a.bin`), { workers: 1 });
    const afterFirst = relay.accepted;
    assert(afterFirst > 0);
    await client.pull(`${relay.host}/client/reuse:v1`, toFile(`${dir.path}/b.bin`), {
      workers: 1,
    });
    assertEquals(relay.accepted, afterFirst, "the second pull opened no new connection");
    assert(relay.open > 0, "idle connections stay pooled while the client is open");

    client.close();
    for (let i = 0; i < 200 && relay.open > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assertEquals(relay.open, 0, "close() ended every pooled connection");
    const err = await client.pull(ref, toFile(`${dir.path}/c.bin`)).then(() => undefined, (e) => e);
    assert(err instanceof TypeError, String(err));
    assertEquals(relay.accepted, afterFirst);
  } finally {
    await relay.close();
  }
});
