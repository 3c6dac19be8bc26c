import { assertEquals, assertRejects } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { InvalidReferenceError } from "../../src/errors/mod.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";

Deno.test("references: a digest-only push writes the manifest by its digest; pull verifies it", async () => {
  await using fake = await startFakeRegistry();
  await using dir = await tempDir();
  const src = `${dir.path}/src.bin`;
  const digest = await writePatternFile(src, 200_000, 2);
  using client = new PartedClient({ plainHttp: true });
  const tagged = await client.push(`${fake.host}/refs/a:v1`, fromFile(src), { partSize: 65536 });

  fake.log.length = 0;
  const untagged = await client.push(`${fake.host}/refs/b@${tagged.digest}`, fromFile(src), {
    partSize: 65536,
  });
  assertEquals(untagged.digest, tagged.digest);
  const puts = fake.log.filter((r) => r.method === "PUT" && r.route === "manifest");
  assertEquals(puts.map((r) => r.path), [`/v2/refs/b/manifests/${tagged.digest}`]);
  assertEquals(fake.store.tags("refs/b"), []);
  await client.pull(`${fake.host}/refs/b@${tagged.digest}`, toFile(`${dir.path}/out.bin`));
  assertEquals(await sha256File(`${dir.path}/out.bin`), digest);

  // A digest that is not the pushed manifest's is refused before the manifest is written.
  fake.log.length = 0;
  const other = `sha256:${"0".repeat(64)}`;
  await assertRejects(
    () => client.push(`${fake.host}/refs/c@${other}`, fromFile(src), { partSize: 65536 }),
    InvalidReferenceError,
  );
  assertEquals(fake.count({ method: "PUT", route: "manifest" }), 0);
  fake.expectNoUnexpected();
});
