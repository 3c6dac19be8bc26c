/**
 * Trust without `--ca-file`, as the container tools find it: a registry served over TLS by a
 * private CA is trusted through the CA file in its `certs.d` directory (the roots named by
 * `OCIPART_CERTS_DIRS`, in place of `/etc/containers/certs.d` and the others), or through
 * `SSL_CERT_FILE`; `--debug` names the file. Without them the same command is refused.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "./_cli.ts";

registryTest("a private CA in certs.d/<host:port>/ trusts that registry, without --ca-file", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 5000, 3);
  const ref = `${registry.host}/trusted/w:v1`;
  const roots = `${tmp.path}/containers-certs.d:${tmp.path}/docker-certs.d`;
  // The CA in the second root's directory of this registry; another registry's directory of the
  // first root holds a file that is not a certificate, which is never read for this one.
  const dir = `${tmp.path}/docker-certs.d/${registry.host}`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/private-ca.crt`, registry.caCert!);
  await Deno.mkdir(`${tmp.path}/containers-certs.d/other.example:5000`, { recursive: true });
  await Deno.writeTextFile(`${tmp.path}/containers-certs.d/other.example:5000/ca.crt`, "junk");
  const push = ["push", "--part-size", "1KiB", "--progress", "none", ref, source];

  const refused = await runCli(push, { tmp: tmp.path });
  assertStrictEquals(refused.code, 1, refused.stderr);
  assert(refused.stderr.includes("cause: TLS_UNKNOWN_AUTHORITY\n"), refused.stderr);

  const env = { OCIPART_CERTS_DIRS: roots };
  const pushed = await runCli([push[0], "--debug", ...push.slice(1)], { tmp: tmp.path, env });
  assertStrictEquals(pushed.code, 0, pushed.stderr);
  assert(
    pushed.stderr.includes(`debug: TLS roots for ${registry.host} from ${dir}/private-ca.crt\n`),
    pushed.stderr,
  );
  const pulled = await runCli(["pull", "--progress", "none", ref, `${tmp.path}/out.bin`], {
    tmp: tmp.path,
    env,
  });
  assertStrictEquals(pulled.code, 0, pulled.stderr);
  assertStrictEquals((await Deno.stat(`${tmp.path}/out.bin`)).size, 5000);
});

registryTest("SSL_CERT_FILE adds its certificates for every registry", {
  needs: ["openssl"],
}, async () => {
  await using registry = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 2000, 8);
  await Deno.writeTextFile(`${tmp.path}/bundle.pem`, registry.caCert!);
  const ref = `${registry.host}/env/w:v1`;
  const env = { SSL_CERT_FILE: `${tmp.path}/bundle.pem`, OCIPART_CERTS_DIRS: `${tmp.path}/none` };
  const pushed = await runCli(["push", "--debug", "--progress", "none", ref, source], {
    tmp: tmp.path,
    env,
  });
  assertStrictEquals(pushed.code, 0, pushed.stderr);
  assert(
    pushed.stderr.includes(`debug: TLS roots for every registry from ${tmp.path}/bundle.pem\n`),
    pushed.stderr,
  );
});
