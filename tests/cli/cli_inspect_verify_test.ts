/**
 * `inspect` and `verify` through the CLI against the real registry (CNCF Distribution), with
 * the CLI running as a child process under narrowed permissions; exit codes asserted.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { encodeManifest } from "../../src/parted/manifest.ts";
import { OCI_MANIFEST_MEDIA_TYPE } from "../../src/registry/media_types.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "./_cli.ts";
import { pushByHand, tinyImage } from "./_images.ts";
import { expectFailure } from "../fixtures/expect.ts";

const KiB = 1024;

/** Pushes a 300 KiB file in 128 KiB parts (3 parts: 128, 128, 44 KiB) and returns its path. */
async function pushThreeParts(tmp: string, ref: string): Promise<string> {
  const source = `${tmp}/weights.bin`;
  await writePatternFile(source, 300 * KiB, 7);
  const push = await runCli(["push", "--plain-http", "--part-size", "128KiB", ref, source], {
    tmp,
  });
  assertStrictEquals(push.code, 0, push.stderr);
  return source;
}

registryTest("inspect: the parts as a table and as JSON, nothing downloaded", async () => {
  await using registry = await startRegistry();
  await using proxy = await startFaultProxy({ target: registry.url });
  await using tmp = await tempDir();
  const ref = `${proxy.host}/models/llm:v1`;
  const source = await pushThreeParts(tmp.path, ref);
  const afterPush = proxy.log.length;

  const json = await runCli(["inspect", "--plain-http", "--json", ref], { tmp: tmp.path });
  assertStrictEquals(json.code, 0, json.stderr);
  const description = JSON.parse(json.stdout);
  assertStrictEquals(description.fileSize, 300 * KiB);
  assertStrictEquals(description.fileDigest, await sha256File(source));
  assertStrictEquals(description.partSize, 128 * KiB);
  assertEquals(
    description.parts.map((p: { index: number; size: number }) => [p.index, p.size]),
    [[0, 128 * KiB], [1, 128 * KiB], [2, 44 * KiB]],
  );
  for (const part of description.parts) assert(/^sha256:[0-9a-f]{64}$/.test(part.digest));
  assert(/^sha256:[0-9a-f]{64}$/.test(description.manifestDigest));

  const table = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path });
  assertStrictEquals(table.code, 0, table.stderr);
  assert(table.stdout.includes(`size:         ${300 * KiB} bytes`), table.stdout);
  assert(table.stdout.includes("parts:        3"), table.stdout);
  for (const part of description.parts) {
    assert(
      new RegExp(`^\\s+${part.index}\\s+${part.size}\\s+${part.digest}$`, "m").test(table.stdout),
      `row of part ${part.index}:\n${table.stdout}`,
    );
  }
  assertStrictEquals(table.stderr, "");
  const inspecting = proxy.log.slice(afterPush);
  assert(inspecting.some((r) => r.route === "manifest"), "the manifest was read");
  assertEquals(inspecting.filter((r) => r.route === "blob"), [], "no blob was read");
});

registryTest("inspect exit codes: 3 not found, 4 not parted", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const missing = await runCli(["inspect", "--plain-http", `${registry.host}/models/llm:none`], {
    tmp: tmp.path,
  });
  expectFailure(missing, { command: "inspect", code: 3, explanation: /matched NotFoundError/ });
  await pushByHand(registry.url, "other/kind", "v1", tinyImage("application/vnd.example.other"));
  const other = await runCli(["inspect", "--plain-http", `${registry.host}/other/kind:v1`], {
    tmp: tmp.path,
  });
  expectFailure(other, {
    command: "inspect",
    code: 4,
    explanation: /matched NotPartedArtifactError/,
  });
});

registryTest("inspect exit code 6 on a registry that refuses anonymous reads", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const result = await runCli(["inspect", "--plain-http", `${registry.host}/private/llm:v1`], {
    tmp: tmp.path,
  });
  expectFailure(result, { command: "inspect", code: 6, explanation: /matched UnauthorizedError/ });
});

registryTest("verify: 0 identical; 5 naming the changed part; 5 on another size", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const ref = `${registry.host}/models/llm:v1`;
  const source = await pushThreeParts(tmp.path, ref);

  const same = await runCli(["verify", "--plain-http", ref, source], { tmp: tmp.path });
  assertStrictEquals(same.code, 0, same.stderr);
  assert(same.stdout.includes("identical: 3 of 3 parts match"), same.stdout);

  // One byte changed in the middle part.
  const changed = `${tmp.path}/changed.bin`;
  const bytes = await Deno.readFile(source);
  bytes[128 * KiB + 5] ^= 0xff;
  await Deno.writeFile(changed, bytes);
  const differs = await runCli(["verify", "--plain-http", "--json", ref, changed], {
    tmp: tmp.path,
  });
  assertStrictEquals(differs.code, 5, differs.stderr);
  const report = JSON.parse(differs.stdout);
  assertStrictEquals(report.identical, false);
  assertEquals(report.differing, [1]);
  assertEquals(report.parts.map((p: { matches: boolean }) => p.matches), [true, false, true]);
  const table = await runCli(["verify", "--plain-http", ref, changed], { tmp: tmp.path });
  assertStrictEquals(table.code, 5);
  assert(/^\s+1\s+131072\s+DIFFERS\s+sha256:/m.test(table.stdout), table.stdout);
  assert(table.stdout.includes("different: 2 of 3 parts match"), table.stdout);

  // Same parts, one byte longer: the size alone makes it different.
  const longer = `${tmp.path}/longer.bin`;
  await Deno.writeFile(longer, new Uint8Array([...await Deno.readFile(source), 0]));
  const sized = await runCli(["verify", "--plain-http", "--json", ref, longer], { tmp: tmp.path });
  assertStrictEquals(sized.code, 5, sized.stderr);
  const sizedReport = JSON.parse(sized.stdout);
  assertEquals([sizedReport.localSize, sizedReport.differing], [300 * KiB + 1, []]);

  // Truncated: the parts past the end count as differing.
  const shorter = `${tmp.path}/shorter.bin`;
  await Deno.writeFile(shorter, (await Deno.readFile(source)).subarray(0, 200 * KiB));
  const short = await runCli(["verify", "--plain-http", "--json", ref, shorter], {
    tmp: tmp.path,
  });
  assertStrictEquals(short.code, 5, short.stderr);
  assertEquals(JSON.parse(short.stdout).differing, [1, 2]);
});

registryTest("verify: a missing file is exit 1 naming the path; a missing tag is 3", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const ref = `${registry.host}/models/llm:v1`;
  const source = await pushThreeParts(tmp.path, ref);
  const absent = `${tmp.path}/absent.bin`;
  const missing = await runCli(["verify", "--plain-http", ref, absent], { tmp: tmp.path });
  expectFailure(missing, { command: "verify", code: 1, explanation: /no sentinel matched/ });
  assert(missing.stderr.includes(`(${absent})`), missing.stderr);
  const noTag = await runCli(
    ["verify", "--plain-http", `${registry.host}/models/llm:v9`, source],
    { tmp: tmp.path },
  );
  expectFailure(noTag, { command: "verify", code: 3, explanation: /matched NotFoundError/ });
});

Deno.test("inspect: a title with escape sequences is shown escaped, as JSON escapes it", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const digest = sha256Digest(new Uint8Array(1));
  const title = "w\u001b]0;PWNED\u0007\u001b[2J.bin";
  const bytes = encodeManifest({
    partSize: 1,
    fileSize: 1,
    fileDigest: digest,
    partDigests: [digest],
    title,
  });
  fake.store.putManifest("team/titled", "v1", bytes, OCI_MANIFEST_MEDIA_TYPE);
  const ref = `${fake.host}/team/titled:v1`;
  const table = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path });
  assertStrictEquals(table.code, 0, table.stderr);
  assert(
    // deno-lint-ignore no-control-regex
    !/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(table.stdout),
    JSON.stringify(table.stdout),
  );
  assertStrictEquals(
    table.stdout.split("\n")[0],
    "name:         w\\x1b]0;PWNED\\x07\\x1b[2J.bin " +
      "(not a plain file name: a pull into a directory refuses it)",
  );
  const json = await runCli(["inspect", "--plain-http", "--json", ref], { tmp: tmp.path });
  assertStrictEquals(JSON.parse(json.stdout).title, title);
});
