import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";

registryTest(
  "redirects: blob reads follow the registry's storage redirect without the credential",
  {
    needs: ["htpasswd"],
  },
  async () => {
    await using storage = await tempDir();
    await using files = await startFileServer({ root: storage.path, setCookie: "session=leak" });
    await using registry = await startRegistry({
      storageDir: storage.path,
      htpasswd: { bob: "pw-bob-123" },
      redirect: { baseUrl: files.url },
    });
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, 700_000, 8);
    using client = new PartedClient({
      plainHttp: true,
      credential: { username: "bob", password: "pw-bob-123" },
    });
    const ref = `${registry.host}/redir/f:v1`;
    await client.push(ref, fromFile(src), { partSize: 256 * 1024 });
    await client.push(ref, fromFile(src), { partSize: 256 * 1024 });
    await client.pull(ref, toFile(`${dir.path}/out.bin`));
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
    const blobReads = files.log.filter((r) => r.path.includes("/blobs/sha256/"));
    assert(blobReads.some((r) => r.method === "GET"), "parts were read from the storage origin");
    assert(blobReads.some((r) => r.method === "HEAD"), "existence checks followed the redirect");
    for (const r of files.log) {
      assertEquals(r.headers.authorization, undefined, "no credential on the storage origin");
      assertEquals(r.headers.cookie, undefined);
      assertEquals(r.headers["accept-encoding"], "identity");
    }
  },
);
