/**
 * Which hosts the runtime's own TLS may verify: a self-signed server certificate (with a host's
 * names) is pinned and needs `node:tls`; an authority does not, even one with other alternative
 * names, as roots of a system bundle have (`SSL_CERT_FILE` pointing at it sent every request of
 * the CLI down the slower path).
 */
import { assertEquals } from "../fixtures/assert.ts";
import { TlsTrust } from "../../src/transport/engine/tls_trust.ts";
import { makeSelfSigned, makeTestCa } from "../fixtures/tls.ts";
import { toolTest } from "../fixtures/registry.ts";
import { withTempDir } from "../fixtures/tmp.ts";

async function openssl(args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, stdout: "null", stderr: "null" }).output();
  if (!out.success) throw new Error(`openssl ${args[0]} failed`);
}

toolTest(
  "TLS trust: a root whose alternative names are an e-mail address is an authority, not a pinned server",
  { needs: ["openssl"] },
  () =>
    withTempDir(async (dir) => {
      await openssl([
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        `${dir}/root.key`,
        "-out",
        `${dir}/root.crt`,
        "-days",
        "2",
        "-subj",
        "/CN=Example Root",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "subjectAltName=email:pki@example.org",
      ]);
      const root = await Deno.readTextFile(`${dir}/root.crt`);
      assertEquals(new TlsTrust([root], false).runtimeVerifies("127.0.0.1"), true);
      const ca = await makeTestCa(dir);
      assertEquals(new TlsTrust([ca.caCert, root], false).runtimeVerifies("127.0.0.1"), true);
      const pinned = await makeSelfSigned(dir);
      assertEquals(new TlsTrust([root, pinned.cert], false).runtimeVerifies("127.0.0.1"), false);
      assertEquals(new TlsTrust([root], true).runtimeVerifies("127.0.0.1"), false);
    }),
);
