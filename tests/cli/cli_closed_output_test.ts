/**
 * A reader that goes away (`ocipart inspect … | head -1`, `push --json | true`, a closed
 * standard error) ends the command quietly: no "Broken pipe" text, and the exit code is the
 * command's own (0 when its work succeeded). Output that is lost for another reason (a full
 * disk behind `> file`) still fails the command.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { encodeManifest } from "../../src/parted/manifest.ts";
import { OCI_MANIFEST_MEDIA_TYPE } from "../../src/registry/media_types.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { cliArgv, cliEnv, PROJECT_ROOT, runCli, spawnCli } from "./_cli.ts";

const decoder = new TextDecoder();

/** Runs the CLI with the reader of `closed` gone before the CLI writes a byte. */
async function withClosed(args: string[], closed: "stdout" | "stderr", tmp: string) {
  const child = spawnCli(args, { tmp });
  await child[closed].cancel();
  await child.stdin.close();
  const open = closed === "stdout" ? child.stderr : child.stdout;
  const text = decoder.decode(await new Response(open).arrayBuffer());
  return { code: (await child.status).code, text };
}

/** A parted artifact of `parts` one-byte parts: its table is far larger than a pipe holds. */
function bigArtifact(fake: Awaited<ReturnType<typeof startFakeRegistry>>, parts: number): string {
  const digest = sha256Digest(new Uint8Array(1));
  const bytes = encodeManifest({
    partSize: 1,
    fileSize: parts,
    fileDigest: digest,
    partDigests: Array(parts).fill(digest),
  });
  fake.store.putManifest("team/big", "v1", bytes, OCI_MANIFEST_MEDIA_TYPE);
  return `${fake.host}/team/big:v1`;
}

Deno.test("inspect | head -1: the first line, then a quiet exit 0", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const ref = bigArtifact(fake, 3000);
  const argv = cliArgv(["inspect", "--plain-http", ref], { tmp: tmp.path });
  const quoted = argv.map((arg) => `'${arg}'`).join(" ");
  const out = await new Deno.Command("bash", {
    args: ["-o", "pipefail", "-c", `${quoted} | head -1`],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv({ tmp: tmp.path }),
  }).output();
  const stderr = decoder.decode(out.stderr);
  assertStrictEquals(decoder.decode(out.stdout), "name:         (no title annotation)\n");
  assertStrictEquals(stderr, "", "no Broken pipe text");
  assertStrictEquals(out.code, 0, stderr);
});

Deno.test("a closed standard output: inspect and push --json exit 0 without a word", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const ref = bigArtifact(fake, 3000);
  const inspect = await withClosed(["inspect", "--plain-http", ref], "stdout", tmp.path);
  assertStrictEquals(inspect.text, "");
  assertStrictEquals(inspect.code, 0);

  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 5000);
  const pushed = `${fake.host}/team/pushed:v1`;
  const push = await withClosed(
    ["push", "--plain-http", "--json", "--progress", "plain", pushed, file],
    "stdout",
    tmp.path,
  );
  assertStrictEquals(push.code, 0, push.text);
  assert(!/broken pipe|internal error/i.test(push.text), push.text);
  // The push itself happened.
  const check = await runCli(["inspect", "--plain-http", pushed], { tmp: tmp.path });
  assertStrictEquals(check.code, 0, check.stderr);
});

Deno.test("a closed standard error: the exit code is still the command's own", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const missing = await withClosed(
    ["pull", "--plain-http", `${fake.host}/team/none:v1`, `${tmp.path}/o`],
    "stderr",
    tmp.path,
  );
  assertStrictEquals(missing.code, 3);
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 5000);
  const push = await withClosed(
    ["push", "--plain-http", "--progress", "plain", `${fake.host}/team/w:v1`, file],
    "stderr",
    tmp.path,
  );
  assertStrictEquals(push.code, 0);
  assert(/^sha256:[0-9a-f]{64}\n$/.test(push.text), push.text);
});

Deno.test("output lost to a full disk fails the command and says so", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const ref = bigArtifact(fake, 10);
  const argv = cliArgv(["inspect", "--plain-http", ref], { tmp: tmp.path });
  const quoted = argv.map((arg) => `'${arg}'`).join(" ");
  const out = await new Deno.Command("sh", {
    args: ["-c", `${quoted} > /dev/full`],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv({ tmp: tmp.path }),
  }).output();
  const stderr = decoder.decode(out.stderr);
  assertStrictEquals(out.code, 1, stderr);
  assert(stderr.startsWith(`ocipart inspect: could not write to standard output`), stderr);
  assert(stderr.includes("ENOSPC"), stderr);
});
