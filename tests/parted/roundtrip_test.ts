import { assert, assertEquals, assertNotEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  ANNOTATION_FILE_DIGEST,
  fromFile,
  PartedClient,
  type ProgressSnapshot,
  toFile,
} from "../../src/parted/mod.ts";
import { overwrite, rawManifest } from "./_helpers.ts";
import { exists } from "../fixtures/expect.ts";

const GiB = 1024 * 1024 * 1024;
const PART = 8 * 1024 * 1024;

registryTest(
  "round trip of a 1 GiB file in 8 MiB parts; re-push is HEAD-only; a changed tail re-uploads only its part",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const src = `${dir.path}/big.bin`;
    const fileDigest = await writePatternFile(src, GiB);
    const parts = GiB / PART;
    using client = new PartedClient({ plainHttp: true });
    const ref = `${proxy.host}/rt/big:v1`;

    const pushSnaps: ProgressSnapshot[] = [];
    const first = await client.push(ref, fromFile(src), {
      partSize: PART,
      onProgress: (s) => pushSnaps.push(s),
    });
    assertEquals(proxy.count({ method: "PUT", route: "session" }), parts + 1, "parts + config");
    const last = pushSnaps.at(-1)!;
    assertEquals(last.phase, "done");
    assertEquals(last.completedBytes, GiB);
    assertEquals(last.wireBytes, GiB, "no work redone");
    checkMonotonic(pushSnaps, PART);
    // 128 parts for 8 workers: the file digest rides along wherever every worker is busy.
    const pushed = await rawManifest(registry.url, "rt/big", "v1");
    assertEquals(fileDigestOf(pushed.json), fileDigest);

    const out = `${dir.path}/out.bin`;
    const pullSnaps: ProgressSnapshot[] = [];
    // Straight from the registry: the proxy only counts requests, and none of the pull's.
    await client.pull(`${registry.host}/rt/big:v1`, toFile(out), {
      onProgress: (s) => pullSnaps.push(s),
    });
    assertEquals(await sha256File(out), fileDigest);
    assert(!(await exists(`${out}.parted-partial`)), "no partial left");
    assertEquals(pullSnaps.at(-1)!.phase, "done");
    assertEquals(pullSnaps.at(-1)!.wireBytes, GiB);
    checkMonotonic(pullSnaps, PART);

    // Re-push of the unchanged file: only existence checks for parts, same manifest digest.
    proxy.log.length = 0;
    const again = await client.push(ref, fromFile(src), { partSize: PART });
    assertEquals(again.digest, first.digest);
    assertEquals(proxy.count({ method: "HEAD", route: "blob" }), parts + 1, "parts + config");
    assertEquals(proxy.count({ method: "POST" }), 0);
    assertEquals(proxy.count({ method: "PUT", route: "session" }), 0);
    assertEquals(proxy.count({ method: "GET", route: "blob" }), 0);

    // A changed tail: only the last part is uploaded again.
    await overwrite(src, GiB - 100, new Uint8Array(100).fill(7));
    proxy.log.length = 0;
    const changed = await client.push(`${proxy.host}/rt/big:v2`, fromFile(src), { partSize: PART });
    assertNotEquals(changed.digest, first.digest);
    assertEquals(proxy.count({ method: "PUT", route: "session" }), 1, "only the changed part");
    assertEquals(proxy.count({ method: "HEAD", route: "blob" }), parts + 1);
    const manifest = await rawManifest(registry.url, "rt/big", "v2");
    assertEquals(manifest.digest, changed.digest);
    assertEquals(fileDigestOf(manifest.json), await sha256File(src));
  },
);

/** The file digest a manifest's annotations name. */
function fileDigestOf(manifest: Record<string, unknown>): string | undefined {
  return (manifest.annotations as Record<string, string> | undefined)?.[ANNOTATION_FILE_DIGEST];
}

function checkMonotonic(snaps: ProgressSnapshot[], part: number): void {
  let completed = 0;
  let wire = 0;
  for (const s of snaps) {
    assert(s.completedBytes >= completed, "completedBytes only grows");
    assert(s.wireBytes >= wire, "wireBytes only grows");
    assertEquals((s.completedBytes - completed) % part, 0, "completedBytes steps in whole parts");
    completed = s.completedBytes;
    wire = s.wireBytes;
  }
}
