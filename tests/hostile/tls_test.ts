/**
 * TLS trust as a user meets it, against the real registry serving HTTPS:
 *
 * - `--insecure` under exactly the permissions of the README's install line (its narrow
 *   `--allow-env` list included), with `NODE_EXTRA_CA_CERTS` set as on many workstations: it
 *   needs no permission beyond those.
 * - `--ca-file` / `caCerts` with the registry's own self-signed certificate, made in the test
 *   the usual way (`openssl req -x509`, a CA:TRUE certificate): push and pull work, as they do
 *   with `curl --cacert`, through the CLI under its narrow permissions, through the library, and
 *   through a proxy's `CONNECT` tunnel. Another self-signed certificate with the same names is
 *   still refused, as self-signed, at once.
 * - Without `--ca-file`, a self-signed registry is told as such, and the hint names `--ca-file`
 *   with the registry's certificate before `--insecure`.
 * - A certificate that does not name the host typed (signed by a CA given with `--ca-file`, or
 *   self-signed and pinned) is told as a name mismatch.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { X509Certificate } from "node:crypto";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { assertCertificateRefused, makeSelfSigned, makeTestCa } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { cliEnv, PROJECT_ROOT, runCli } from "../cli/_cli.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";

const MiB = 1024 * 1024;
const SKIP = "--insecure skips the check, and then anyone on the path can read and change the " +
  "transfer";

/** The whole report of a failed CLI run, each line without the `ocipart <command>: ` prefix. */
function reportLines(stderr: string, command: string): string[] {
  const prefix = `ocipart ${command}: `;
  const lines = stderr.trimEnd().split("\n");
  for (const line of lines) assert(line.startsWith(prefix), stderr);
  return lines.map((line) => line.slice(prefix.length));
}

/**
 * The permission flags of the README's install line, exactly as written there (`--no-prompt`
 * and every `--allow-…`), so the test follows the documentation.
 */
async function documentedPermissionFlags(): Promise<string[]> {
  const readme = await Deno.readTextFile(`${PROJECT_ROOT}README.md`);
  const install = /^deno install (?:[^\n]*\\\n)*[^\n]*/m.exec(readme)?.[0];
  assert(install !== undefined, "the README has an install line");
  const words = install.replace(/\\\n/g, " ").split(/\s+/);
  const flags = words.filter((word) => word === "--no-prompt" || word.startsWith("--allow-"));
  assert(flags.some((flag) => flag.startsWith("--allow-env=")), `a narrow --allow-env: ${flags}`);
  return flags;
}

/** The CLI run with the permission set the README documents, in the environment `env`. */
async function runDocumentedCli(args: string[], tmp: string, env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...await documentedPermissionFlags(), `${PROJECT_ROOT}cli.ts`, ...args],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv({ tmp, env }),
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stderr: decoder.decode(out.stderr) };
}

registryTest("--insecure works under the documented permissions, NODE_EXTRA_CA_CERTS set", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  // An unrelated certificate: the environment names extra roots, as corporate machines do.
  const extra = await makeSelfSigned(tmp.path, "corporate-root");
  const env = { NODE_EXTRA_CA_CERTS: extra.certPath };
  const source = `${tmp.path}/weights.bin`;
  const digest = await writePatternFile(source, 2 * MiB + 3);
  const reference = `${registry.host}/insecure/documented:v1`;
  const quiet = ["--insecure", "--progress", "none"];

  const push = await runDocumentedCli(
    ["push", ...quiet, "--part-size", "1MiB", reference, source],
    tmp.path,
    env,
  );
  assertStrictEquals(push.code, 0, push.stderr);
  const out = `${tmp.path}/out.bin`;
  const pull = await runDocumentedCli(["pull", ...quiet, reference, out], tmp.path, env);
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(await sha256File(out), digest);
});

registryTest("--ca-file with the registry's self-signed certificate: CLI, narrow permissions", {
  needs: ["openssl"],
}, async () => {
  await using tmp = await tempDir();
  const own = await makeSelfSigned(tmp.path, "registry");
  assertStrictEquals(
    new X509Certificate(own.cert).ca,
    true,
    "made the usual way: a CA certificate",
  );
  await using registry = await startRegistry({ tls: own });
  const source = `${tmp.path}/weights.bin`;
  const digest = await writePatternFile(source, 2 * MiB + 3);
  const reference = `${registry.host}/pinned/cli:v1`;
  const flags = ["--ca-file", own.certPath, "--progress", "none"];

  const push = await runCli(["push", ...flags, "--part-size", "1MiB", reference, source], {
    tmp: tmp.path,
  });
  assertStrictEquals(push.code, 0, push.stderr);
  const out = `${tmp.path}/out.bin`;
  const pull = await runCli(["pull", ...flags, reference, out], { tmp: tmp.path });
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(await sha256File(out), digest);
  const inspect = await runCli(["inspect", "--ca-file", own.certPath, reference], {
    tmp: tmp.path,
  });
  assertStrictEquals(inspect.code, 0, inspect.stderr);

  // Another self-signed certificate with the same names is not the registry's.
  const impostor = await makeSelfSigned(tmp.path, "impostor");
  const started = performance.now();
  const refused = await runCli(
    ["pull", "--ca-file", impostor.certPath, "--progress", "none", reference, `${tmp.path}/x`],
    { tmp: tmp.path },
  );
  assertStrictEquals(refused.code, 1, refused.stderr);
  assertEquals(reportLines(refused.stderr, "pull"), [
    `${registry.host} presents a self-signed certificate that ${impostor.certPath} does not hold`,
    "hint: give --ca-file the certificate the registry serves now (a renewed one, if it was " +
    `renewed); ${SKIP}`,
    "HTTP request: server certificate not trusted (self-signed)",
    "cause: TLS_SELF_SIGNED",
    "no sentinel matched (exit 1)",
  ]);
  assert(performance.now() - started < 10_000, "a certificate refusal is not retried");
});

registryTest("caCerts with the registry's self-signed certificate: library, direct and tunnelled", {
  needs: ["openssl", "tinyproxy"],
}, async () => {
  await using tmp = await tempDir();
  const own = await makeSelfSigned(tmp.path, "registry");
  const impostor = await makeSelfSigned(tmp.path, "impostor");
  await using registry = await startRegistry({ tls: own });
  await using proxy = await startTinyproxy();
  const source = `${tmp.path}/weights.bin`;
  const digest = await writePatternFile(source, 3 * MiB + 1);

  const direct = new HttpTransport({ caCerts: [own.cert], proxy: false });
  const tunnelled = new HttpTransport({ caCerts: [own.cert], proxy: { https: proxy.url } });
  try {
    for (const [name, transport] of [["direct", direct], ["tunnel", tunnelled]] as const) {
      using client = new PartedClient({ transport: transport.fetch });
      const reference = `${registry.host}/pinned/${name}:v1`;
      await client.push(reference, fromFile(source), { partSize: MiB });
      const out = `${tmp.path}/${name}.bin`;
      await client.pull(reference, toFile(out));
      assertStrictEquals(await sha256File(out), digest, name);
    }
  } finally {
    direct.close();
    tunnelled.close();
  }
  const lines = await proxy.requests();
  assert(
    lines.length > 0 && lines.every((l) => l === `CONNECT ${registry.host} HTTP/1.1`),
    `${lines}`,
  );

  // The client options themselves, and the impostor on every kind of request.
  using client = new PartedClient({ caCerts: [own.cert] });
  assertStrictEquals((await client.inspect(`${registry.host}/pinned/direct:v1`)).parts.length, 4);
  using fooled = new PartedClient({ caCerts: [impostor.cert], retryPolicy: {} });
  await assertCertificateRefused(fooled.inspect(`${registry.host}/pinned/direct:v1`));
  await assertCertificateRefused(
    fooled.push(`${registry.host}/pinned/impostor:v1`, fromFile(source), { partSize: MiB }),
  );
  const transport = new HttpTransport({ caCerts: [impostor.cert] });
  try {
    for (const method of ["GET", "HEAD"]) {
      await assertCertificateRefused(
        transport.fetch(new Request(`${registry.url}/v2/`, { method })),
      );
    }
  } finally {
    transport.close();
  }
});

registryTest(
  "a self-signed registry without --ca-file: push, pull and inspect name --ca-file first",
  {
    needs: ["openssl"],
  },
  async () => {
    await using tmp = await tempDir();
    const own = await makeSelfSigned(tmp.path, "registry");
    await using registry = await startRegistry({ tls: own });
    const source = `${tmp.path}/weights.bin`;
    await writePatternFile(source, 1000);
    const reference = `${registry.host}/self/signed:v1`;
    const runs = [
      ["push", "--progress", "none", reference, source],
      ["pull", "--progress", "none", reference, `${tmp.path}/out.bin`],
      ["inspect", reference],
    ];
    for (const args of runs) {
      const started = performance.now();
      const run = await runCli(args, { tmp: tmp.path });
      assertStrictEquals(run.code, 1, run.stderr);
      assertEquals(reportLines(run.stderr, args[0]), [
        `${registry.host} presents a self-signed certificate, which this machine does not trust`,
        `hint: give --ca-file <the registry's certificate> to trust exactly that one; ${SKIP}`,
        "HTTP request: server certificate not trusted (self-signed)",
        "cause: TLS_SELF_SIGNED",
        "no sentinel matched (exit 1)",
      ]);
      assert(
        performance.now() - started < 15_000,
        `${args[0]}: a certificate refusal is not retried`,
      );
    }
    // Following the hint works.
    const pinned = await runCli(["inspect", "--ca-file", own.certPath, reference], {
      tmp: tmp.path,
    });
    assertStrictEquals(pinned.code, 3, pinned.stderr);
    assert(!pinned.stderr.includes("certificate"), pinned.stderr);
  },
);

registryTest("a certificate without the name typed: CA-signed, and self-signed pinned", {
  needs: ["openssl"],
}, async () => {
  await using tmp = await tempDir();
  const elsewhere = "DNS:registry.example";
  const signed = await makeTestCa(tmp.path, elsewhere);
  const pinned = await makeSelfSigned(tmp.path, "pinned", elsewhere);
  const source = `${tmp.path}/weights.bin`;
  await writePatternFile(source, 1000);
  const servers = [
    { tls: { certPath: signed.certPath, keyPath: signed.keyPath, cert: signed.caCert } },
    { tls: pinned },
  ];
  const caFiles = [signed.caCertPath, pinned.certPath];
  for (const [i, options] of servers.entries()) {
    await using registry = await startRegistry(options);
    const reference = `${registry.host}/named/elsewhere:v1`;
    const ca = ["--ca-file", caFiles[i]];
    const runs = [
      ["push", ...ca, "--progress", "none", reference, source],
      ["pull", ...ca, "--progress", "none", reference, `${tmp.path}/out.bin`],
      ["inspect", ...ca, reference],
    ];
    for (const args of runs) {
      const run = await runCli(args, { tmp: tmp.path });
      assertStrictEquals(run.code, 1, run.stderr);
      assertEquals(reportLines(run.stderr, args[0]), [
        `the certificate of ${registry.host} is made out to another host name`,
        "hint: the registry's name in the reference must be one the certificate names; " +
        "--insecure skips the check",
        "HTTP request: server certificate not trusted (name mismatch)",
        "cause: TLS_NAME_MISMATCH",
        "no sentinel matched (exit 1)",
      ], `${args.join(" ")}`);
    }
  }
});
