/**
 * A limit on the size of one request body, as Cloudflare's free plan sets in front of a
 * registry (413 over 100 MB), Quay (one PUT over 20 GB refused) and the per-layer caps of GHCR,
 * ECR and Harbor, scaled down: nginx's `client_max_body_size 1m` in front of the real
 * Distribution answers 413 before reading a larger body. The push fails with `PartTooLargeError`
 * (exit 7) carrying a smaller size to try; following the suggestions reaches a size that passes.
 */
import { findError } from "../../src/errors/find_error.ts";
import { HttpStatusError } from "../../src/errors/kinds.ts";
import { PartTooLargeError } from "../../src/errors/sentinels.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { MAX_PARTS } from "../../src/parted/format.ts";
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertMatch,
  assertRejects,
} from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startNginx } from "../fixtures/nginx.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, hintLines, runCli } from "../cli/_cli.ts";
import { KiB, MiB, partSizeError, rerunWords } from "./_hosted.ts";

registryTest(
  "body-size limit: a 413 on a part names a smaller size; following the suggestions reaches one that passes",
  { needs: ["nginx"] },
  async () => {
    await using registry = await startRegistry();
    await using edge = await startNginx({ upstream: registry.url, clientMaxBodySize: "1m" });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    const digest = await writePatternFile(src, 6 * MiB + 5, 11);
    using client = new PartedClient({ plainHttp: true });
    const ref = `${edge.host}/hosted/body:v1`;

    const tried: number[] = [];
    let partSize = 4 * MiB;
    for (;;) {
      tried.push(partSize);
      const err = await client.push(ref, fromFile(src), { partSize }).then(
        () => undefined,
        (e) => e,
      );
      if (err === undefined) break;
      assertInstanceOf(findError(err, PartTooLargeError), PartTooLargeError, `${err}`);
      const limit = partSizeError(err);
      assertEquals(limit.limit, "body-size");
      assertEquals(limit.partSize, partSize);
      assertEquals(findError(err, HttpStatusError)?.status, 413);
      partSize = limit.suggestedPartSize ?? 0;
      assert(tried.length < 5, `no convergence: ${tried}`);
    }
    // The refused body is a whole 4 MiB part or the last one (2 MiB + 5): the advice is at most
    // half of it, so either way it reaches the largest size nginx takes.
    assertEquals(tried[0], 4 * MiB);
    assertEquals(tried.at(-1), MiB, `${tried}`);
    for (let i = 1; i < tried.length; i++) assert(tried[i] * 2 <= tried[i - 1], `${tried}`);
    await client.pull(`${registry.host}/hosted/body:v1`, toFile(`${dir.path}/out.bin`));
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
  },
);

registryTest(
  "body-size limit: the message names the refused size and the one to try; an odd size drops to a power-of-two MiB at most half",
  { needs: ["nginx"] },
  async () => {
    await using registry = await startRegistry();
    await using edge = await startNginx({ upstream: registry.url, clientMaxBodySize: "1m" });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    await writePatternFile(src, 7_000_000, 12);
    using client = new PartedClient({ plainHttp: true });
    const err = await assertRejects(() =>
      client.push(`${edge.host}/hosted/odd:v1`, fromFile(src), {
        partSize: 3_000_000,
        workers: 1,
      })
    );
    assertEquals(
      (err as Error).message,
      "part too large: part 0: PUT blob upload: status 413: the registry refuses a request " +
        "body of 3000000 bytes and states no limit; try parts of 1 MiB, a guess at half that " +
        "or less (a new part size is a new artifact: every part is uploaded again)",
    );
    assertEquals(partSizeError(err).suggestedPartSize, MiB);
    assertEquals(partSizeError(err).facts.refusedBytes, 3_000_000);
  },
);

Deno.test("body-size limit: when smaller parts would pass the format's part cap, no size is suggested", async () => {
  await using fake = await startFakeRegistry();
  fake.fault({ method: "PUT", path: /\/blobs\/uploads\//, respond: { status: 413 } });
  await using dir = await tempDir();
  const src = `${dir.path}/weights.bin`;
  await writePatternFile(src, MAX_PARTS * KiB, 13);
  using client = new PartedClient({ plainHttp: true });
  const err = await assertRejects(() =>
    client.push(`${fake.host}/hosted/floor:v1`, fromFile(src), { partSize: KiB, workers: 1 })
  );
  assertInstanceOf(findError(err, PartTooLargeError), PartTooLargeError);
  const limit = partSizeError(err);
  assertEquals(limit.suggestedPartSize, undefined);
  assertMatch(
    (err as Error).message,
    /the registry refuses a request body of 1 KiB; smaller parts would need more than 4096 parts$/,
  );
});

registryTest(
  "cli: a 413 exits 7 with the command to run at half the size; running the suggestions pushes",
  { needs: ["nginx"] },
  async () => {
    await using registry = await startRegistry();
    await using edge = await startNginx({ upstream: registry.url, clientMaxBodySize: "1m" });
    await using tmp = await tempDir();
    const src = `${tmp.path}/my weights.bin`;
    await writePatternFile(src, 3 * MiB, 14);
    const ref = `${edge.host}/hosted/cli-body:v1`;
    let args = [
      "push",
      "--plain-http",
      "--part-size=2MiB",
      "--annotation",
      "note=it's big",
      ref,
      src,
    ];

    const first = await runCli(args, { tmp: tmp.path });
    assertEquals(first.code, 7, first.stderr);
    const [error, why] = failureLines(first.stderr);
    assertEquals(
      error,
      "ocipart push: part too large: part 0: PUT blob upload: status 413: the registry refuses " +
        "a request body of 2 MiB and states no limit; try parts of 1 MiB, a guess at half that " +
        "or less (a new part size is a new artifact: every part is uploaded again)",
    );
    assertEquals(why, "ocipart push: matched PartTooLargeError (ERR_PART_TOO_LARGE) (exit 7)");
    assertEquals(hintLines(first.stderr), [
      "ocipart push: hint: push again with --part-size 1MiB (a guess: the registry did not state " +
      "its limit, so this is at most half the size it refused; if it is refused too, the next " +
      "report names a smaller one); no part already uploaded at 2MiB is reused (a new part " +
      "size makes a new artifact). Run:",
      `  ocipart push --part-size 1MiB --plain-http --annotation 'note=it'\\''s big' ${ref} ` +
      `'${src}'`,
    ]);
    // The report reads in order: what happened, what to do, the command, then the contract.
    assertEquals(first.stderr.trimEnd().split("\n"), [
      `ocipart push: ${edge.host} refused a part of 2MiB as too large (413 Content Too Large)`,
      ...hintLines(first.stderr),
      error,
      why,
    ]);
    args = rerunWords(first.stderr).slice(1);
    assertEquals(args, [
      "push",
      "--part-size",
      "1MiB",
      "--plain-http",
      "--annotation",
      "note=it's big",
      ref,
      src,
    ]);
    const second = await runCli(args, { tmp: tmp.path });
    assertEquals(second.code, 0, second.stderr);
    assertEquals(hintLines(second.stderr), []);
  },
);

registryTest(
  "cli: a 413 names its size as a guess at most half the refused one, in whole MiB",
  { needs: ["nginx"] },
  async () => {
    await using registry = await startRegistry();
    await using edge = await startNginx({ upstream: registry.url, clientMaxBodySize: "1m" });
    await using tmp = await tempDir();
    const src = `${tmp.path}/w.bin`;
    await writePatternFile(src, 7_000_000, 15);
    const ref = `${edge.host}/hosted/cli-guess:v1`;
    const args = ["push", "--plain-http", "--workers", "1", "--part-size", "3000000", ref, src];
    const run = await runCli(args, { tmp: tmp.path });
    assertEquals(run.code, 7, run.stderr);
    assertEquals(
      run.stderr.split("\n")[0],
      `ocipart push: ${edge.host} refused a part of 3000000 bytes as too large (413 Content Too ` +
        "Large)",
    );
    // 3000000 bytes refused: half is about 1.4 MiB, so 1 MiB (not 2 MiB, which is over half and
    // not known to pass either), and the words say it is a guess.
    assertEquals(hintLines(run.stderr), [
      "ocipart push: hint: push again with --part-size 1MiB (a guess: the registry did not " +
      "state its limit, so this is at most half the size it refused; if it is refused too, the " +
      "next report names a smaller one); no part already uploaded at 3000000 bytes is reused " +
      "(a new part size makes a new artifact). Run:",
      `  ocipart push --part-size 1MiB --plain-http --workers 1 ${ref} ${src}`,
    ]);
    const second = await runCli(rerunWords(run.stderr).slice(1), { tmp: tmp.path });
    assertEquals(second.code, 0, second.stderr);
  },
);
