/**
 * A storage redirect target that refuses (an expired or revoked presigned link answers 401, 403
 * or 404): the report names the storage, never the registry's login, and offers no login command.
 */
import { assert, assertEquals, assertStringIncludes } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { startFileServer } from "../fixtures/file_server.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { fromFile, PartedClient } from "../../src/parted/mod.ts";
import { hintLines, runCli } from "../cli/_cli.ts";

for (const status of [401, 403, 404]) {
  Deno.test(`hostile storage: a ${status} from a storage link is worded as storage, with no login command`, async () => {
    await using tmp = await tempDir();
    await using registry = await startFakeRegistry();
    await using files = await startFileServer({ root: tmp.path });
    const source = `${tmp.path}/w.bin`;
    await writePatternFile(source, 200_000);
    using pusher = new PartedClient({ plainHttp: true });
    await pusher.push(`${registry.host}/org/w:v1`, fromFile(source), { partSize: 100_000 });
    registry.fault({
      method: "GET",
      path: /\/blobs\/sha256:/,
      times: Infinity,
      respond: { status: 307, headers: { location: `${files.url}/bucket/part?X-Amz-Expires=1` } },
    });
    files.fault({ method: "GET", times: Infinity, respond: { status } });
    const result = await runCli(
      [
        "pull",
        "--plain-http",
        "--progress",
        "none",
        `${registry.host}/org/w:v1`,
        `${tmp.path}/out`,
      ],
      { tmp: tmp.path },
    );
    assertEquals(result.code, 1);
    const report = result.stderr;
    const [sentence] = report.split("\n");
    assertStringIncludes(sentence, `the storage behind ${registry.host}`);
    assert(!/log in|login|password|push it again|denied access/i.test(report), report);
    assertEquals(hintLines(report).filter((line) => line.startsWith("  ")), [], "no command");
    assert(!report.includes(files.url) && !report.includes("X-Amz"), "no link in the report");
  });
}
