/**
 * TLS trust as a user meets it, against the real registry serving HTTPS:
 *
 * - `--insecure` under the permissions the README documents, with `NODE_EXTRA_CA_CERTS` set as
 *   on many workstations: it needs no permission beyond those.
 * - `--ca-file` / `caCerts` with the registry's own self-signed certificate, made in the test
 *   the usual way (`openssl req -x509`, a CA:TRUE certificate): push and pull work, as they do
 *   with `curl --cacert`, through the CLI under its narrow permissions, through the library, and
 *   through a proxy's `CONNECT` tunnel. Another self-signed certificate with the same names is
 *   still refused, with a certificate cause, at once.
 */
import { ok, strictEqual } from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { assertCertificateRefused, makeSelfSigned } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { causeLine, cliEnv, failureLines, PROJECT_ROOT, runCli } from "../cli/_cli.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { HttpTransport } from "../../src/transport/http_transport.ts";

const MiB = 1024 * 1024;
const CERTIFICATE_CAUSES = ["TLS_UNKNOWN_AUTHORITY", "TLS_CERTIFICATE"];

/** The CLI run with the permission set the README documents, in the environment `env`. */
async function runDocumentedCli(args: string[], tmp: string, env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-net",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-sys=statfs",
      `${PROJECT_ROOT}cli.ts`,
      ...args,
    ],
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
  strictEqual(push.code, 0, push.stderr);
  const out = `${tmp.path}/out.bin`;
  const pull = await runDocumentedCli(["pull", ...quiet, reference, out], tmp.path, env);
  strictEqual(pull.code, 0, pull.stderr);
  strictEqual(await sha256File(out), digest);
});

registryTest("--ca-file with the registry's self-signed certificate: CLI, narrow permissions", {
  needs: ["openssl"],
}, async () => {
  await using tmp = await tempDir();
  const own = await makeSelfSigned(tmp.path, "registry");
  strictEqual(new X509Certificate(own.cert).ca, true, "made the usual way: a CA certificate");
  await using registry = await startRegistry({ tls: own });
  const source = `${tmp.path}/weights.bin`;
  const digest = await writePatternFile(source, 2 * MiB + 3);
  const reference = `${registry.host}/pinned/cli:v1`;
  const flags = ["--ca-file", own.certPath, "--progress", "none"];

  const push = await runCli(["push", ...flags, "--part-size", "1MiB", reference, source], {
    tmp: tmp.path,
  });
  strictEqual(push.code, 0, push.stderr);
  const out = `${tmp.path}/out.bin`;
  const pull = await runCli(["pull", ...flags, reference, out], { tmp: tmp.path });
  strictEqual(pull.code, 0, pull.stderr);
  strictEqual(await sha256File(out), digest);
  const inspect = await runCli(["inspect", "--ca-file", own.certPath, reference], {
    tmp: tmp.path,
  });
  strictEqual(inspect.code, 0, inspect.stderr);

  // Another self-signed certificate with the same names is not the registry's.
  const impostor = await makeSelfSigned(tmp.path, "impostor");
  const started = performance.now();
  const refused = await runCli(
    ["pull", "--ca-file", impostor.certPath, "--progress", "none", reference, `${tmp.path}/x`],
    { tmp: tmp.path },
  );
  strictEqual(refused.code, 1, refused.stderr);
  const [error] = failureLines(refused.stderr);
  ok(/: HTTP request: server certificate not trusted/.test(error), refused.stderr);
  ok(!/attempts/.test(refused.stderr), `not retried: ${refused.stderr}`);
  ok(causeLine(refused.stderr).some((c) => CERTIFICATE_CAUSES.includes(c)), refused.stderr);
  ok(performance.now() - started < 10_000, "a certificate refusal is not retried");
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
      using client = new PartedClient({ fetch: transport.fetch });
      const reference = `${registry.host}/pinned/${name}:v1`;
      await client.push(reference, fromFile(source), { partSize: MiB });
      const out = `${tmp.path}/${name}.bin`;
      await client.pull(reference, toFile(out));
      strictEqual(await sha256File(out), digest, name);
    }
  } finally {
    direct.close();
    tunnelled.close();
  }
  const lines = await proxy.requests();
  ok(lines.length > 0 && lines.every((l) => l === `CONNECT ${registry.host} HTTP/1.1`), `${lines}`);

  // The client options themselves, and the impostor on every kind of request.
  using client = new PartedClient({ caCerts: [own.cert] });
  strictEqual((await client.inspect(`${registry.host}/pinned/direct:v1`)).parts.length, 4);
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
