/**
 * Attacks on the pipes of the CLI: `--hash-threads` values a careless user types (and that they
 * reach the blob commands), `pull <ref> -` of striped parts with a wrong first stripe under each
 * hashing mode, and `push <ref> -` of standard input ending exactly at a part boundary.
 */
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { UsageError } from "../../src/cli/arguments/usage_error.ts";
import { runCli, spawnCli } from "./_cli.ts";

const KiB = 1024;
const REF = "localhost:5000/org/model:v1";
const DIGEST_REF = `localhost:5000/org/model@sha256:${"a".repeat(64)}`;

/** Runs the CLI with `stdin` bytes and returns stdout as bytes. */
async function runBytes(args: string[], tmp: string, stdin?: Uint8Array) {
  const child = spawnCli(args, { tmp });
  const writer = child.stdin.getWriter();
  if (stdin !== undefined) await writer.write(stdin).catch(() => {});
  await writer.close().catch(() => {});
  const out = await child.output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

const COMMANDS: [string, string[]][] = [
  ["pull", [REF, "-"]],
  ["push", [REF, "-"]],
  ["blob pull", [DIGEST_REF, "out.bin"]],
  ["blob push", ["localhost:5000/org/model", "in.bin"]],
];

Deno.test("hostile: --hash-threads refuses 1e2, 0x2, -0, 3.0, +1, empty and 257 on every transfer command", () => {
  for (const [command, operands] of COMMANDS) {
    for (const value of ["1e2", "0x2", "-0", "3.0", "+1", "", " ", "257", "Infinity", "1_0"]) {
      const args = [...command.split(" "), "--hash-threads", value, ...operands];
      assertThrows(() => {
        try {
          parseCommandLine(args);
        } catch (err) {
          if (err instanceof UsageError) throw err;
          throw new Error(`${JSON.stringify(args)}: ${err}`);
        }
        throw new Error(`${JSON.stringify(args)} was accepted`);
      }, UsageError);
    }
  }
});

Deno.test("hostile: --hash-threads reaches the blob commands; spaces around and leading zeros are read as --workers reads them", () => {
  for (const [command, operands] of COMMANDS) {
    for (const [value, expected] of [[" 3", 3], ["007", 7], ["0", 0], ["256", 256]] as const) {
      const parsed = parseCommandLine([
        ...command.split(" "),
        "--hash-threads",
        value,
        ...operands,
      ]);
      assertStrictEquals(
        "hashThreads" in parsed ? parsed.hashThreads : "missing",
        expected,
        `${command} --hash-threads ${JSON.stringify(value)}`,
      );
    }
  }
});

for (const threads of ["0", "2"]) {
  registryTest(
    `hostile: pull - --hash-threads ${threads}: a wrong byte in the FIRST stripe of part 1 gives exit 5 and exactly part 0`,
    async () => {
      await using registry = await startRegistry();
      await using tmp = await tempDir();
      const part = 40 * 1024 * KiB;
      const bytes = patternBytes(2 * part + 99, 17);
      await Deno.writeFile(`${tmp.path}/data.bin`, bytes);
      const ref = `${registry.host}/pipes/first-stripe:v1`;
      const push = await runCli(
        ["push", "--plain-http", "--part-size", "40MiB", ref, `${tmp.path}/data.bin`],
        { tmp: tmp.path },
      );
      assertStrictEquals(push.code, 0, push.stderr);
      const tampered = bytes.slice(part, 2 * part);
      tampered[3] ^= 0x01;
      await Deno.writeFile(
        registry.blobPath(sha256Bytes(bytes.subarray(part, 2 * part))),
        tampered,
      );
      const bad = await runBytes(
        ["pull", "--plain-http", "--workers", "4", "--hash-threads", threads, ref, "-"],
        tmp.path,
      );
      assertStrictEquals(bad.code, 5, bad.stderr);
      assertStrictEquals(bad.stdout.byteLength, part);
      assertStrictEquals(sha256Bytes(bad.stdout), sha256Bytes(bytes.subarray(0, part)));
    },
  );
}

registryTest(
  "hostile: push - of stdin ending exactly at a part boundary equals the file's push",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const bytes = patternBytes(3 * 1536 * KiB, 9);
    await Deno.mkdir(`${tmp.path}/in`);
    await Deno.writeFile(`${tmp.path}/in/data.bin`, bytes);
    const fileRef = `${registry.host}/pipes/exact:file`;
    const file = await runCli(
      [
        "push",
        "--plain-http",
        "--part-size",
        "1536KiB",
        "--progress",
        "none",
        fileRef,
        `${tmp.path}/in/data.bin`,
      ],
      { tmp: tmp.path },
    );
    assertStrictEquals(file.code, 0, file.stderr);
    const streamRef = `${registry.host}/pipes/exact:stream`;
    const stream = await runBytes(
      [
        "push",
        "--plain-http",
        "--part-size",
        "1536KiB",
        "--progress",
        "none",
        "--hash-threads",
        "0",
        "--name",
        "data.bin",
        "--temp-dir",
        tmp.path,
        streamRef,
        "-",
      ],
      tmp.path,
      bytes,
    );
    assertStrictEquals(stream.code, 0, stream.stderr);
    const pull = await runBytes(
      ["pull", "--plain-http", "--hash-threads", "1", streamRef, "-"],
      tmp.path,
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(sha256Bytes(pull.stdout), sha256Bytes(bytes));
    const layers = async (ref: string) => {
      const out = await runCli(["inspect", "--plain-http", "--json", ref], { tmp: tmp.path });
      assertStrictEquals(out.code, 0, out.stderr);
      const parsed = JSON.parse(out.stdout);
      return JSON.stringify(parsed.parts?.map((p: { digest: string }) => p.digest));
    };
    const streamParts = await layers(streamRef);
    assertStrictEquals(JSON.parse(streamParts ?? "[]").length, 3, `parts: ${streamParts}`);
    assertStrictEquals(streamParts, await layers(fileRef));
  },
);
