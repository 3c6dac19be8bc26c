import { startFileServer } from "../fixtures/file_server.ts";
import { assertEquals } from "../fixtures/assert.ts";
import { withTempDir } from "../fixtures/tmp.ts";
import { portClosed } from "./helpers.ts";

Deno.test("file server: serves files with ranges, sets the cookie, records headers", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.writeTextFile(`${dir}/sub/data`, "0123456789");
    const server = await startFileServer({ root: dir, setCookie: "session=abc" });
    try {
      const full = await fetch(`${server.url}/sub/data`, { headers: { cookie: "x=1" } });
      assertEquals([full.status, await full.text()], [200, "0123456789"]);
      assertEquals(full.headers.get("set-cookie"), "session=abc");
      const part = await fetch(`${server.url}/sub/data`, { headers: { range: "bytes=7-" } });
      assertEquals([part.status, part.headers.get("content-range"), await part.text()], [
        206,
        "bytes 7-9/10",
        "789",
      ]);
      const head = await fetch(`${server.url}/sub/data`, { method: "HEAD" });
      assertEquals(head.headers.get("content-length"), "10");
      for (
        const [path, method, status] of [
          ["/sub/missing", "GET", 404],
          ["/sub/..%2fsub%2fdata", "GET", 400],
          ["/sub/data", "PUT", 405],
        ] as const
      ) {
        const r = await fetch(`${server.url}${path}`, { method });
        await r.body?.cancel();
        assertEquals(r.status, status, `${method} ${path}`);
      }
      server.fault({ method: "GET", respond: { status: 503 } });
      const faulted = await fetch(`${server.url}/sub/data`);
      await faulted.body?.cancel();
      assertEquals(faulted.status, 503);
      assertEquals(server.log[0]!.headers.cookie, "x=1");
      assertEquals(server.count({ method: "GET" }), 5);
    } finally {
      await server.close();
    }
    assertEquals(await portClosed(server.port), true);
  });
});
