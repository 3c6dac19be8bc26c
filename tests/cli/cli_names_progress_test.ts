/**
 * File names, annotations, the file-digest check and part-level progress through the CLI,
 * against the real registry, with the CLI as a child process under narrowed permissions.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { rawManifest } from "../parted/_helpers.ts";
import { runCli } from "./_cli.ts";

const KiB = 1024;
const PART = 256 * KiB;
const PARTS = 8;
const SIZE = PARTS * PART - 3;

async function listDir(path: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(path)) names.push(entry.name);
  return names.sort();
}

registryTest(
  "cli: push --annotation and the file name; pull into a directory; plain progress of a resume",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/model.bin`;
    await writePatternFile(source, SIZE);
    const ref = `${registry.host}/cli/names:v1`;
    const push = await runCli([
      "push",
      "--plain-http",
      "--part-size",
      "256KiB",
      "--progress",
      "plain",
      "--annotation",
      "org.opencontainers.image.source=https://example.test/r=1",
      "--annotation",
      "team=ml",
      ref,
      source,
    ], { tmp: tmp.path });
    assertStrictEquals(push.code, 0, push.stderr);
    const uploaded = push.stderr.split("\n").filter((l) => /^part \d+\/8 uploaded\b/.test(l));
    assertStrictEquals(uploaded.length, PARTS, push.stderr);
    const { json } = await rawManifest(registry.url, "cli/names", "v1");
    const annotations = json.annotations as Record<string, string>;
    assertStrictEquals(annotations["org.opencontainers.image.title"], "model.bin");
    assertStrictEquals(annotations["org.opencontainers.image.source"], "https://example.test/r=1");
    assertStrictEquals(annotations["team"], "ml");

    // A re-push transfers nothing and says so.
    const again = await runCli(
      ["push", "--plain-http", "--part-size", "256KiB", "--progress", "plain", ref, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(again.code, 0, again.stderr);
    assert(again.stderr.includes("8 of 8 parts already present\n"), again.stderr);

    const out = `${tmp.path}/out`;
    await Deno.mkdir(out);
    const pull = await runCli(["pull", "--plain-http", "--progress", "plain", ref, out], {
      tmp: tmp.path,
    });
    assertStrictEquals(pull.code, 0, pull.stderr);
    deepEqualFiles(await Deno.readFile(source), await Deno.readFile(`${out}/model.bin`));
    assertStrictEquals(
      pull.stderr.split("\n").filter((l) => /^part \d+\/8 verified\b/.test(l)).length,
      8,
    );

    // Resume: a complete partial with one torn part; 7 of 8 are already present.
    await Deno.rename(`${out}/model.bin`, `${out}/model.bin.parted-partial`);
    using file = await Deno.open(`${out}/model.bin.parted-partial`, { write: true });
    await file.seek(3 * PART + 5, Deno.SeekMode.Start);
    await file.write(new Uint8Array(100));
    const resumed = await runCli(["pull", "--plain-http", "--progress", "plain", ref, out], {
      tmp: tmp.path,
    });
    assertStrictEquals(resumed.code, 0, resumed.stderr);
    const lines = resumed.stderr.split("\n");
    assertStrictEquals(
      lines.filter((l) => /^part \d+\/8 resumed\b/.test(l)).length,
      7,
      resumed.stderr,
    );
    assert(lines.includes("part 4/8 verified 256 KiB"), resumed.stderr);
    assert(lines.includes("7 of 8 parts already present"), resumed.stderr);
    deepEqualFiles(await Deno.readFile(source), await Deno.readFile(`${out}/model.bin`));
    assertStrictEquals((await listDir(out)).join(","), "model.bin");
  },
);

function deepEqualFiles(a: Uint8Array, b: Uint8Array): void {
  assertStrictEquals(a.byteLength, b.byteLength);
  assert(a.every((v, i) => v === b[i]), "same bytes");
}

Deno.test("cli: a reserved --annotation key is a usage error before any request", async () => {
  await using tmp = await tempDir();
  const source = `${tmp.path}/f.bin`;
  await Deno.writeFile(source, new Uint8Array(10));
  for (
    const flag of [
      "org.opencontainers.image.title=x",
      "dev.ocipart.parted.v1.part-size=1",
      "novalue",
      "=v",
    ]
  ) {
    // Port 9 (discard) is never contacted: the flag is refused while parsing.
    const result = await runCli(
      ["push", "--plain-http", "--annotation", flag, "127.0.0.1:9/a/b:v1", source],
      { tmp: tmp.path },
    );
    assertStrictEquals(result.code, 2, result.stderr);
    assert(result.stderr.startsWith("ocipart: --annotation: "), result.stderr);
  }
});

registryTest(
  "cli: --verify-file-digest exits 5 and leaves no destination when the file digest is wrong",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/w.bin`;
    await writePatternFile(source, SIZE);
    const ref = `${registry.host}/cli/digest:v1`;
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "256KiB", "--progress", "none", ref, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    const { json } = await rawManifest(registry.url, "cli/digest", "v1");
    const annotations = { ...(json.annotations as Record<string, string>) };
    annotations["dev.ocipart.parted.v1.file-digest"] = `sha256:${"1".repeat(64)}`;
    const put = await fetch(`${registry.url}/v2/cli/digest/manifests/wrong`, {
      method: "PUT",
      headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" },
      body: JSON.stringify({ ...json, annotations }),
    });
    await put.body?.cancel();
    assertStrictEquals(put.status, 201);
    const dest = `${tmp.path}/out.bin`;
    const bad = await runCli(
      ["pull", "--plain-http", "--verify-file-digest", `${registry.host}/cli/digest:wrong`, dest],
      { tmp: tmp.path },
    );
    assertStrictEquals(bad.code, 5, bad.stderr);
    assert(/DigestMismatchError/.test(bad.stderr), bad.stderr);
    assertStrictEquals(
      await Deno.stat(dest).then(() => true, () => false),
      false,
      "no destination",
    );
    const good = await runCli(["pull", "--plain-http", "--verify-file-digest", ref, dest], {
      tmp: tmp.path,
    });
    assertStrictEquals(good.code, 0, good.stderr);
  },
);

registryTest(
  "cli: push --progress json writes the done state once, with the exit code",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/j.bin`;
    await writePatternFile(source, SIZE);
    for (const args of [["push", "--part-size", "256KiB"], ["pull"]]) {
      const target = args[0] === "push" ? source : `${tmp.path}/j.out`;
      const result = await runCli(
        [...args, "--plain-http", "--progress", "json", `${registry.host}/cli/json:v1`, target],
        { tmp: tmp.path },
      );
      assertStrictEquals(result.code, 0, result.stderr);
      const records = result.stderr.trimEnd().split("\n").map((l) => JSON.parse(l));
      assertStrictEquals(records.filter((r) => r.phase === "done").length, 1, result.stderr);
      assertStrictEquals(records.at(-1).exitCode, 0);
      assertStrictEquals(records.at(-1).partsDone, PARTS);
      const events = records.flatMap((r) => r.events ?? []);
      assertStrictEquals(events.length, PARTS, "every part event is written once");
    }
  },
);

registryTest(
  "cli: verify --progress shows the hashing (json, plain, auto in a log) and the report follows",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const source = `${tmp.path}/v.bin`;
    await writePatternFile(source, SIZE);
    const ref = `${registry.host}/cli/verify:v1`;
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "256KiB", "--progress", "none", ref, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);

    const json = await runCli(["verify", "--plain-http", "--progress", "json", ref, source], {
      tmp: tmp.path,
    });
    assertStrictEquals(json.code, 0, json.stderr);
    assert(json.stdout.endsWith(`identical: ${PARTS} of ${PARTS} parts match\n`), json.stdout);
    const records = json.stderr.trimEnd().split("\n").map((l) => JSON.parse(l));
    assertStrictEquals(records[0].phase, "verifying", json.stderr);
    const last = records.at(-1);
    assertStrictEquals(last.phase, "done");
    assertStrictEquals(last.exitCode, 0);
    assertStrictEquals(last.completedBytes, SIZE);
    assertStrictEquals(last.partsDone, PARTS);
    assertStrictEquals(last.wireBytes, 0);

    // A differing file: the display ends, exit 5 is on the last progress line and the report
    // says which part differs.
    using file = await Deno.open(source, { write: true });
    await file.seek(2 * PART + 1, Deno.SeekMode.Start);
    await file.write(new Uint8Array([0xff, 0xfe]));
    const plain = await runCli(["verify", "--plain-http", "--progress", "plain", ref, source], {
      tmp: tmp.path,
    });
    assertStrictEquals(plain.code, 5, plain.stderr);
    const lines = plain.stderr.trimEnd().split("\n");
    assert(lines[0].startsWith("checking 0% "), plain.stderr);
    assert(
      new RegExp(`^done 100% 2\\.00/2\\.00 MiB ${PARTS}/${PARTS} parts .*in \\d+s$`).test(
        lines.at(-1)!,
      ),
      plain.stderr,
    );
    assert(/^\s+2\s+262144\s+DIFFERS\s/m.test(plain.stdout), plain.stdout);

    // Default (auto) without a terminal: a check shorter than 30 s adds nothing to a log.
    const auto = await runCli(["verify", "--plain-http", ref, source], { tmp: tmp.path });
    assertStrictEquals(auto.code, 5, auto.stderr);
    assertStrictEquals(auto.stderr, "");

    // A missing file: the error alone, no progress drawn.
    const missing = await runCli(
      ["verify", "--plain-http", "--progress", "bar", ref, `${tmp.path}/nope.bin`],
      { tmp: tmp.path },
    );
    assertStrictEquals(missing.code, 1, missing.stderr);
    assert(!missing.stderr.includes("\r") && !missing.stderr.includes("%"), missing.stderr);
    assert(missing.stderr.startsWith("ocipart verify: "), missing.stderr);
  },
);
