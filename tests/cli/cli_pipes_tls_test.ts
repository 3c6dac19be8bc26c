/**
 * The pipes on every way but plain HTTP to the registry: TLS with a CA-signed certificate, a
 * pinned self-signed certificate and `--insecure` (these two on `node:tls`, not Deno's client),
 * and through a proxy. Each mode: the push from standard input and the pull to standard output
 * give the file back; a reader that goes away ends `pull -`, `cat` and `blob pull -` with exit 0
 * within 1 s; Ctrl-C or SIGTERM while the reader has stopped reading ends them within 1 s.
 * Against the real registry (CNCF Distribution).
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { makeSelfSigned } from "../fixtures/tls.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { tempDir } from "../fixtures/tmp.ts";
import type { CliOptions } from "./_cli.ts";
import { spawnCli } from "./_cli.ts";
import { stopWhileStalled, untilReaderLeaves } from "./_pipes.ts";

const MiB = 1024 * 1024;
// The bound a user relies on.
const STOP_BOUND_MS = 1_000;

/** Runs the CLI with `stdin` bytes: its exit status, standard output and standard error. */
async function runBytes(args: string[], options: CliOptions, stdin?: Uint8Array) {
  const child = spawnCli(args, options);
  const writer = child.stdin.getWriter();
  if (stdin !== undefined) await writer.write(stdin).catch(() => {});
  await writer.close().catch(() => {});
  const out = await child.output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

registryTest(
  "pipes over a CA-signed, a pinned and an unverified certificate, direct and through a proxy: the bytes, | head, and a stop within 1 s while the reader stalls",
  { needs: ["openssl", "tinyproxy"] },
  async (t) => {
    await using tmp = await tempDir();
    const selfSigned = await makeSelfSigned(tmp.path);
    await using signed = await startRegistry({ tls: true });
    await using pinned = await startRegistry({ tls: selfSigned });
    await using proxy = await startTinyproxy();
    const caFile = `${tmp.path}/ca.pem`;
    await Deno.writeTextFile(caFile, signed.caCert!);
    const viaProxy = { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url };
    const modes = [
      { name: "CA-signed", host: signed.host, flags: ["--ca-file", caFile], env: {} },
      {
        name: "pinned",
        host: pinned.host,
        flags: ["--ca-file", selfSigned.certPath],
        env: {},
      },
      { name: "insecure", host: pinned.host, flags: ["--insecure"], env: {} },
      {
        name: "pinned through a proxy",
        host: pinned.host,
        flags: ["--ca-file", selfSigned.certPath],
        env: viaProxy,
      },
      { name: "insecure through a proxy", host: pinned.host, flags: ["--insecure"], env: viaProxy },
    ];
    const bytes = patternBytes(8 * MiB + 123, 31);
    const file = `${tmp.path}/data.bin`;
    await Deno.writeFile(file, bytes);
    for (const [n, mode] of modes.entries()) {
      const options: CliOptions = { tmp: tmp.path, env: mode.env, read: [caFile] };
      const ref = `${mode.host}/pipes/tls${n}:v1`;
      let commands: string[][] = [];
      await t.step(`${mode.name}: push - and pull - give the file back`, async () => {
        const push = await runBytes(
          ["push", ...mode.flags, "--part-size", "1MiB", "--temp-dir", tmp.path, ref, "-"],
          options,
          bytes,
        );
        assertStrictEquals(push.code, 0, push.stderr);
        const pull = await runBytes(["pull", ...mode.flags, ref, "-"], options);
        assertStrictEquals(pull.code, 0, pull.stderr);
        assertStrictEquals(sha256Bytes(pull.stdout), sha256Bytes(bytes));
        const blob = await runBytes(
          ["blob", "push", ...mode.flags, `${mode.host}/pipes/blob${n}`, file],
          options,
        );
        assertStrictEquals(blob.code, 0, blob.stderr);
        const digest = new TextDecoder().decode(blob.stdout).trim();
        // The commands that write to standard output.
        commands = [
          ["pull", ...mode.flags, "--progress", "none", ref, "-"],
          ["cat", ...mode.flags, "--range", "1000-7000000", ref],
          ["blob", "pull", ...mode.flags, `${mode.host}/pipes/blob${n}@${digest}`, "-"],
        ];
      });
      await t.step(`${mode.name}: a reader that goes away ends the command, exit 0`, async () => {
        for (const args of commands) {
          const what = args.slice(0, 2).join(" ");
          const left = await untilReaderLeaves(args, options);
          assertStrictEquals(left.code, 0, `${what}: ${left.stderr}`);
          assert(
            left.elapsed < STOP_BOUND_MS,
            `${what}: exited ${left.elapsed.toFixed(0)} ms after`,
          );
        }
      });
      await t.step(`${mode.name}: a stop while the reader stalls ends the command`, async () => {
        for (const args of commands) {
          for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
            const what = `${args.slice(0, 2).join(" ")} ${signal}`;
            const stopped = await stopWhileStalled(args, options, signal, () => delay(300));
            assertStrictEquals(stopped.code, code, `${what}: ${stopped.stderr}`);
            assert(
              stopped.elapsed < STOP_BOUND_MS,
              `${what}: exited ${stopped.elapsed.toFixed(0)} ms after the signal`,
            );
          }
        }
      });
    }
  },
);

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
