import { copyFile, truncate } from "node:fs/promises";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { fromFile, PartedClient, type ProgressSnapshot, toFile } from "../../src/parted/mod.ts";
import { overwrite } from "./_helpers.ts";
import { exists } from "../fixtures/expect.ts";

const P = 1024 * 1024;
const SIZE = 5 * P + 3; // 6 parts

// 6 parts of 1 MiB hash inline; 6 parts of 4 MiB make a file large enough to hash on threads.
const RESUME_CASES = [
  { P: 1024 * 1024, label: "hashed inline" },
  { P: 4 * 1024 * 1024, label: "hashed on threads" },
];

for (const { P, label } of RESUME_CASES) {
  const SIZE = 5 * P + 3; // 6 parts
  registryTest(
    `resume: every interruption point of resume rule 2 fetches only what fails its check (${label})`,
    async () => {
      await using registry = await startRegistry();
      await using proxy = await startFaultProxy({ target: registry.url });
      await using dir = await tempDir();
      const src = `${dir.path}/src.bin`;
      const fileDigest = await writePatternFile(src, SIZE);
      using client = new PartedClient({ plainHttp: true });
      const ref = `${proxy.host}/resume/f:v1`;
      await client.push(ref, fromFile(src), { partSize: P });
      const dest = `${dir.path}/dest.bin`;
      const partial = `${dest}.parted-partial`;

      const pull = async (label: string, expectedGets: number) => {
        proxy.log.length = 0;
        const snaps: ProgressSnapshot[] = [];
        await client.pull(ref, toFile(dest), { workers: 3, onProgress: (s) => snaps.push(s) });
        assertEquals(proxy.count({ method: "GET", route: "blob" }), expectedGets, `${label}: GETs`);
        assertEquals(await sha256File(dest), fileDigest, `${label}: content`);
        assert(!(await exists(partial)), `${label}: partial renamed`);
        assertEquals(snaps.at(-1)?.completedBytes, SIZE);
        if (expectedGets === 6) assertEquals(snaps.at(-1)?.wireBytes, SIZE, `${label}: wire`);
        return snaps;
      };

      // Interrupted before the resize: the partial is empty; everything is fetched.
      await Deno.writeFile(partial, new Uint8Array());
      await pull("empty partial", 6);

      // Between resize and first write: all zeros of the full length; everything is fetched.
      await Deno.remove(dest);
      await Deno.writeFile(partial, new Uint8Array());
      await truncate(partial, SIZE);
      await pull("all-zero partial", 6);

      // Mid-write: a torn range in part 2 and a torn tail of part 5 fail their check.
      await copyFile(dest, partial);
      await Deno.remove(dest);
      await overwrite(partial, 2 * P + 4096, new Uint8Array(100_000));
      await overwrite(partial, SIZE - 2, new Uint8Array([0, 0]));
      const torn = await pull("torn ranges", 2);
      // Part 2's zeroed range has written bytes after it: the part is fetched whole. Part 5
      // holds its first byte and then zeros: it continues from there.
      assertEquals(torn.at(-1)?.wireBytes, P + 2, "only the two failing parts crossed the wire");
      assert(torn.some((s) => s.phase === "verifying"), "a verifying phase was reported");

      // After the last write, before the rename: commit with no blob request at all.
      await copyFile(dest, partial);
      await Deno.remove(dest);
      const complete = await pull("complete partial", 0);
      assertEquals(complete.at(-1)?.wireBytes, 0);

      // After the rename: the destination is complete and a rerun starts over.
      await pull("after rename", 6);

      // A partial of another length (longer) is cut and everything is fetched.
      await Deno.writeFile(partial, new Uint8Array(SIZE + 5000).fill(1));
      await pull("longer partial", 6);
    },
  );
}

registryTest(
  "resume: a cancelled pull keeps its partial, leaves no destination, and a later pull completes it",
  async () => {
    await using registry = await startRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const fileDigest = await writePatternFile(src, SIZE, 9);
    using client = new PartedClient({ plainHttp: true });
    const ref = `${registry.host}/resume/g:v1`;
    await client.push(ref, fromFile(src), { partSize: P });
    const dest = `${dir.path}/dest.bin`;
    // Cancel the first pull as soon as one part is in place.
    const controller = new AbortController();
    const err = await client.pull(ref, toFile(dest), {
      workers: 1,
      signal: controller.signal,
      onProgress: (s) => {
        if (s.completedBytes > 0) controller.abort(new DOMException("stop", "AbortError"));
      },
    }).then(() => undefined, (e) => e);
    assert(err instanceof DOMException && err.name === "AbortError", `aborted: ${err}`);
    assert(!(await exists(dest)), "destination absent after cancel");
    assert(await exists(`${dest}.parted-partial`), "partial kept after cancel");
    await client.pull(ref, toFile(dest));
    assertEquals(await sha256File(dest), fileDigest);
  },
);
