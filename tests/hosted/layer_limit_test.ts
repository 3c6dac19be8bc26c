/**
 * A limit on the layers of a manifest, as ECR sets one (about 500 layers per image: observed,
 * undocumented; it answers 405 `UNSUPPORTED`), scaled down: the fault proxy in front of the real
 * Distribution refuses manifests of more than 4 layers, either as Distribution would
 * (400 `MANIFEST_INVALID`) or as ECR does. The push fails with the count and the part size that
 * halves it; following the suggestions reaches a manifest the registry takes.
 */
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError } from "../../src/errors/kinds.ts";
import { TooLargeError } from "../../src/errors/sentinels.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { PartSizeError } from "../../src/parted/part_size_error.ts";
import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, hintLines, runCli } from "../cli/_cli.ts";
import {
  KiB,
  MANIFEST_PUT,
  PART_PUT,
  partSizeError,
  refuseLayersOver,
  rerunWords,
} from "./_hosted.ts";

for (const [status, code] of [[400, "MANIFEST_INVALID"], [405, "UNSUPPORTED"]] as const) {
  registryTest(
    `layer limit (${status} ${code}): the count and the part size that halves it, until the manifest is taken`,
    async () => {
      await using registry = await startRegistry();
      await using edge = await startFaultProxy({ target: registry.url });
      edge.fault({
        ...MANIFEST_PUT,
        inspectBody: refuseLayersOver(4, status, code),
        times: Infinity,
      });
      await using dir = await tempDir();
      const src = `${dir.path}/weights.bin`;
      const digest = await writePatternFile(src, 10 * 64 * KiB - 3, 21);
      using client = new PartedClient({ plainHttp: true });
      const ref = `${edge.host}/hosted/layers:v1`;

      const counts: number[] = [];
      let partSize = 64 * KiB;
      for (;;) {
        const err = await client.push(ref, fromFile(src), { partSize }).then(
          () => undefined,
          (e) => e,
        );
        if (err === undefined) break;
        const limit = partSizeError(err);
        assertEquals(limit.limit, "layer-count");
        assertEquals(findError(err, HttpStatusError)?.status, status);
        assertEquals(limit.suggestedPartSize, 2 * partSize);
        counts.push(limit.facts.partCount ?? 0);
        if (counts.length === 1) {
          assertEquals(
            (err as Error).message,
            `PUT manifest: status ${status}: the registry refused a manifest of 10 parts; if it ` +
              "limits the layers of a manifest, parts of 128 KiB halve the count (a new part " +
              "size is a new artifact: every part is uploaded again)",
          );
        }
        partSize = limit.suggestedPartSize ?? 0;
        assert(counts.length < 4, `no convergence: ${counts}`);
      }
      assertEquals(counts, [10, 5], "then 3 parts of 256 KiB");
      assertEquals(partSize, 256 * KiB);
      assertEquals(edge.count(MANIFEST_PUT), 3);
      await client.pull(`${registry.host}/hosted/layers:v1`, toFile(`${dir.path}/out.bin`));
      assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
    },
  );
}

registryTest(
  "a manifest refused for another reason (a missing blob, one part) is not a layer limit",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    await writePatternFile(src, 4 * 64 * KiB, 22);
    using client = new PartedClient({ plainHttp: true });
    const unknownBlob = JSON.stringify({ errors: [{ code: "MANIFEST_BLOB_UNKNOWN" }] });
    edge.fault({ ...MANIFEST_PUT, respond: { status: 400, body: unknownBlob } });
    const missing = await assertRejects(() =>
      client.push(`${edge.host}/hosted/other:v1`, fromFile(src), { partSize: 64 * KiB })
    );
    assertEquals(findError(missing, PartSizeError), undefined);
    assertEquals(findError(missing, HttpStatusError)?.status, 400);

    edge.fault({ ...MANIFEST_PUT, inspectBody: refuseLayersOver(0, 400, "MANIFEST_INVALID") });
    const single = await assertRejects(() =>
      client.push(`${edge.host}/hosted/single:v1`, fromFile(src), { partSize: 1024 * KiB })
    );
    assertEquals(findError(single, PartSizeError), undefined, "one part cannot be halved");
  },
);

Deno.test("a manifest refused with 413 is a size limit too: TooLargeError, and twice the part size", async () => {
  await using fake = await startFakeRegistry();
  fake.fault({ ...MANIFEST_PUT, respond: { status: 413 } });
  await using dir = await tempDir();
  const src = `${dir.path}/weights.bin`;
  await writePatternFile(src, 3 * 64 * KiB, 24);
  using client = new PartedClient({ plainHttp: true });
  const err = await assertRejects(() =>
    client.push(`${fake.host}/hosted/manifest-size:v1`, fromFile(src), { partSize: 64 * KiB })
  );
  assertInstanceOf(findError(err, TooLargeError), TooLargeError);
  const limit = partSizeError(err);
  assertEquals([limit.limit, limit.facts.partCount, limit.suggestedPartSize], [
    "layer-count",
    3,
    128 * KiB,
  ]);
});

registryTest(
  "cli: a layer limit prints the command to run with twice the part size, and it pushes",
  async () => {
    await using registry = await startRegistry();
    await using edge = await startFaultProxy({ target: registry.url });
    edge.fault({
      ...MANIFEST_PUT,
      inspectBody: refuseLayersOver(4, 405, "UNSUPPORTED"),
      times: Infinity,
    });
    await using tmp = await tempDir();
    const src = `${tmp.path}/weights.bin`;
    await writePatternFile(src, 6 * 64 * KiB, 23);
    const ref = `${edge.host}/hosted/cli-layers:v1`;
    const failed = await runCli(
      ["push", "--plain-http", "--part-size", "64KiB", "--timeout", "5m", ref, src],
      { tmp: tmp.path },
    );
    assertEquals(failed.code, 1, failed.stderr);
    const [error, why] = failureLines(failed.stderr);
    assertEquals(
      error,
      "ocipart push: PUT manifest: status 405: the registry refused a manifest of 6 parts; if " +
        "it limits the layers of a manifest, parts of 128 KiB halve the count (a new part size " +
        "is a new artifact: every part is uploaded again)",
    );
    assertEquals(why, "ocipart push: no sentinel matched (exit 1)");
    assertEquals(
      failed.stderr.split("\n")[0],
      `ocipart push: ${edge.host} refused a manifest of 6 parts (405 Method Not Allowed, ` +
        "UNSUPPORTED): it may limit the layers of a manifest",
    );
    assertEquals(hintLines(failed.stderr), [
      "ocipart push: hint: push again with --part-size 128KiB (half as many parts); no part " +
      "already uploaded at 64KiB is reused (a new part size makes a new artifact). Run:",
      `  ocipart push --part-size 128KiB --plain-http --timeout 5m ${ref} ${src}`,
    ]);
    edge.log.length = 0;
    const rerun = await runCli(rerunWords(failed.stderr).slice(1), { tmp: tmp.path });
    assertEquals(rerun.code, 0, rerun.stderr);
    const parts = edge.log.filter((r) => r.method === "PUT" && PART_PUT.path.test(r.path));
    assertEquals(parts.length, 3, "every part of the new size uploaded; none of the old reused");
  },
);
