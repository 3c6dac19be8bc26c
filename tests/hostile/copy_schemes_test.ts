/**
 * Copies between registries reached differently: a plain-HTTP Distribution and a TLS one under
 * a private CA, both ways, through the library (`registries`) and the CLI (`--src-…`,
 * `--dest-…`); the bytes are checked by pulling the copy back. The newcomer's mistake (one
 * `--plain-http` for both sides) is told which side and which flag.
 */
import { assert, assertEquals, assertThrows } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { causeLine, failureLines, runCli } from "../cli/_cli.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { UsageError } from "../../src/cli/arguments/usage_error.ts";

const KiB = 1024;
const PLAIN = "127.0.0.1:5000/plain/data:v1";
const TLS = "registry.example/tls/data:v1";

registryTest("library: copy plain HTTP → TLS and TLS → plain HTTP with per-registry settings", {
  needs: ["openssl"],
}, async () => {
  await using plain = await startRegistry();
  await using tls = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  // Client-wide plain HTTP, overridden for the TLS registry, which also gets its own CA.
  using client = new PartedClient({
    plainHttp: true,
    registries: { [tls.host]: { plainHttp: false, caCerts: [tls.caCert!] } },
  });
  const there = `${tmp.path}/there.bin`;
  const thereDigest = await writePatternFile(there, 300 * KiB + 5, 31);
  const pushed = await client.push(`${plain.host}/src/a:v1`, fromFile(there), {
    partSize: 128 * KiB,
  });
  const copied = await client.copy(`${plain.host}/src/a:v1`, `${tls.host}/dst/a:v1`);
  assertEquals(copied.descriptor.digest, pushed.digest);
  assertEquals([copied.copied, copied.mounted, copied.skipped], [3, 0, 0]);
  await client.pull(`${tls.host}/dst/a:v1`, toFile(`${tmp.path}/there.out`));
  assertEquals(await sha256File(`${tmp.path}/there.out`), thereDigest);

  // And back: HTTPS source, plain-HTTP destination, a client that defaults to HTTPS.
  using back = new PartedClient({
    caCerts: [tls.caCert!],
    registries: { [plain.host]: { plainHttp: true } },
  });
  const again = `${tmp.path}/again.bin`;
  const againDigest = await writePatternFile(again, 200 * KiB, 32);
  await back.push(`${tls.host}/src/b:v1`, fromFile(again), { partSize: 64 * KiB });
  await back.copy(`${tls.host}/src/b:v1`, `${plain.host}/dst/b:v1`);
  await back.pull(`${plain.host}/dst/b:v1`, toFile(`${tmp.path}/again.out`));
  assertEquals(await sha256File(`${tmp.path}/again.out`), againDigest);
});

registryTest(
  "cli: copy --src-plain-http --dest-ca-file and back with --src-ca-file --dest-plain-http",
  {
    needs: ["openssl"],
  },
  async () => {
    await using plain = await startRegistry();
    await using tls = await startRegistry({ tls: true });
    await using tmp = await tempDir();
    const ca = `${tmp.path}/ca.pem`;
    await Deno.writeTextFile(ca, tls.caCert!);
    const options = { tmp: tmp.path };
    const source = `${tmp.path}/data.bin`;
    const digest = await writePatternFile(source, 300 * KiB + 7, 33);
    const run = async (args: string[]) => {
      const result = await runCli(args, options);
      assertEquals(result.code, 0, `${args.join(" ")}:\n${result.stderr}`);
      return result;
    };
    const push = await run([
      "push",
      "--plain-http",
      "--part-size",
      "128KiB",
      `${plain.host}/a/d:v1`,
      source,
    ]);
    const copy = await run([
      "copy",
      "--src-plain-http",
      "--dest-ca-file",
      ca,
      `${plain.host}/a/d:v1`,
      `${tls.host}/b/d:v1`,
    ]);
    assertEquals(copy.stdout, push.stdout, "the manifest digest is kept");
    await run(["pull", "--ca-file", ca, `${tls.host}/b/d:v1`, `${tmp.path}/1.bin`]);
    assertEquals(await sha256File(`${tmp.path}/1.bin`), digest);

    // Back, with the shared flag on the plain side and the TLS side deciding for itself.
    await run([
      "copy",
      "--plain-http",
      "--src-ca-file",
      ca,
      `${tls.host}/b/d:v1`,
      `${plain.host}/c/d:v1`,
    ]);
    await run(["pull", "--plain-http", `${plain.host}/c/d:v1`, `${tmp.path}/2.bin`]);
    assertEquals(await sha256File(`${tmp.path}/2.bin`), digest);

    const warned = await run([
      "copy",
      "--src-plain-http",
      "--dest-insecure",
      "--json",
      `${plain.host}/a/d:v1`,
      `${tls.host}/b/d:v2`,
    ]);
    assertEquals(JSON.parse(warned.stdout).skipped, 3);
    assertEquals(
      warned.stderr,
      "ocipart copy: warning: --dest-insecure: the destination registry's certificate is not verified\n",
    );
  },
);

registryTest("cli: one --plain-http for a TLS destination says which side and which flag", {
  needs: ["openssl"],
}, async () => {
  await using plain = await startRegistry();
  await using tls = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  const ca = `${tmp.path}/ca.pem`;
  await Deno.writeTextFile(ca, tls.caCert!);
  const options = { tmp: tmp.path };
  const source = `${tmp.path}/data.bin`;
  await writePatternFile(source, 10 * KiB, 34);
  const push = await runCli(["push", "--plain-http", `${plain.host}/a/d:v1`, source], options);
  assertEquals(push.code, 0, push.stderr);
  const from = `${plain.host}/a/d:v1`;
  const to = `${tls.host}/b/d:v1`;
  const toTls = `the destination registry ${tls.host} speaks HTTPS, not plain HTTP`;
  const cases: [string[], string, string, [string, string]][] = [
    [
      ["--plain-http", "--ca-file", ca],
      "the destination registry speaks TLS, not plain HTTP: use --src-plain-http instead of --plain-http",
      "TLS_SERVER",
      [toTls, "use --src-plain-http instead of --plain-http"],
    ],
    [
      ["--src-plain-http", "--dest-plain-http"],
      "the destination registry speaks TLS, not plain HTTP: drop --dest-plain-http",
      "TLS_SERVER",
      [
        toTls,
        "drop --dest-plain-http (and add --dest-ca-file PEM if its certificate comes from your " +
        "own CA)",
      ],
    ],
    [
      ["--dest-ca-file", ca],
      "the source registry speaks plain HTTP, not TLS: use --src-plain-http",
      "PLAIN_HTTP_SERVER",
      [
        `the source registry ${plain.host} speaks plain HTTP, not HTTPS`,
        "use --src-plain-http (nothing is encrypted then: only for a registry on a network you " +
        "trust)",
      ],
    ],
  ];
  // The first request of a push to the destination is a HEAD, whose 400 has no body to tell.
  const pushed = await runCli(["push", "--plain-http", to, source], options);
  assertEquals(
    failureLines(pushed.stderr)[0],
    "ocipart push: HTTP request: connection failed (the server speaks TLS, not plain HTTP: drop --plain-http)",
  );
  assertEquals(causeLine(pushed.stderr), ["TLS_SERVER"]);
  for (const [flags, line, cause, [sentence, hint]] of cases) {
    const result = await runCli(["copy", ...flags, from, to], options);
    assertEquals(result.code, 1, result.stderr);
    assertEquals(result.stdout, "");
    // First the side and its host as typed, then the side's flag.
    assertEquals(result.stderr.split("\n").slice(0, 2), [
      `ocipart copy: ${sentence}`,
      `ocipart copy: hint: ${hint}`,
    ]);
    assertEquals(failureLines(result.stderr), [
      `ocipart copy: ${line}`,
      "ocipart copy: no sentinel matched (exit 1)",
    ]);
    assertEquals(causeLine(result.stderr), [cause]);
  }
});

Deno.test("cli: side flags that contradict each other are usage errors", () => {
  const usage = (args: string[], message: RegExp) => {
    const err = assertThrows(() => parseCommandLine(["copy", ...args]), UsageError);
    assert(message.test(err.message), err.message);
    assertEquals((err as UsageError).command, "copy");
  };
  usage(
    ["--src-plain-http", "--src-insecure", PLAIN, TLS],
    /--src-insecure is for HTTPS; it cannot go with --src-plain-http/,
  );
  usage(
    ["--dest-plain-http", "--dest-ca-file", "ca.pem", PLAIN, TLS],
    /--dest-ca-file is for HTTPS/,
  );
  usage(["--src-plain-http", PLAIN, "127.0.0.1:5000/other/data:v1"], /on one registry/);
  usage(["--dest-ca-file", "", PLAIN, TLS], /--dest-ca-file: must not be empty/);
  const sides = parseCommandLine(["copy", "--insecure", "--src-plain-http", PLAIN, TLS]);
  if (sides.kind !== "copy") throw new Error(sides.kind);
  assertEquals([sides.sides.source.plainHttp, sides.sides.target.plainHttp], [true, false]);
  assertEquals(
    sides.sides.target.insecure,
    true,
    "the shared --insecure still serves the destination",
  );
});

Deno.test("library: registries is checked when the client is made, naming what it refuses without echoing a URL", () => {
  const refused = (registries: unknown, cls: typeof TypeError, text: string) => {
    const err = assertThrows(
      () => new PartedClient({ registries: registries as Record<string, never> }),
      cls,
    );
    assert(err.message.includes(text), err.message);
  };
  refused(["a"], TypeError, "registries must be an object");
  refused(
    { "https://ghcr.io": {} },
    RangeError,
    'not a registry host[:port] (no scheme, path or user); write "ghcr.io"',
  );
  refused({ "ghcr.io/org": {} }, RangeError, "a registries key is not a registry host");
  const secret = assertThrows(() =>
    new PartedClient({ registries: { "https://me:s3cret@ghcr.io/v2/": {} } })
  );
  assert(!/s3cret|https:|\/v2/.test(secret.message), "a key that is not a host is never echoed");
  assert(secret.message.includes('write "ghcr.io"'), secret.message);
  refused({ "ghcr.io": { plainHTTP: true } }, TypeError, 'unknown setting "plainHTTP"');
  refused({ "ghcr.io": { plainHttp: "yes" } }, TypeError, 'must be a boolean, not "yes"');
  refused({ "ghcr.io": { caCerts: "pem" } }, TypeError, "caCerts: must be an array");
  refused({ "ghcr.io": { plainHttp: true, caCerts: [] } }, RangeError, "plainHttp cannot go with");
  refused({ "GHCR.io": {}, "ghcr.io": {} }, RangeError, "names a registry already listed");
  refused({ "ghcr.io": null }, TypeError, "must be an object of settings");
  new PartedClient({ registries: { "[::1]:5000": { plainHttp: true }, "ghcr.io": {} } }).close();
});
