/**
 * A library user in a process of its own, so that the proxy environment it is started with is
 * the one every client of the runtime sees: pushes a file as a parted artifact (file-range
 * uploads, manifest PUTs) and pulls it back (HEAD and GET downloads), then checks the bytes.
 *
 * Usage: `deno run -A _proxy_client.ts <env|none> <reference> <work dir> [ca file]`. `env`
 * uses the library's default transport (proxy from the environment); `none` a transport made
 * with `proxy: false`. Exit 0 when the round trip succeeded, else 1 with the error on stderr.
 *
 * @module
 */
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { causeCodes } from "../../src/transport/failure.ts";
import { randomBytes } from "../fixtures/random.ts";

const [mode, reference, dir, caFile] = Deno.args;
const MiB = 1024 * 1024;
const source = `${dir}/source.bin`;
// Fresh content every run: blobs a registry already has would not be uploaded again.
const bytes = randomBytes(2 * MiB + 5);
await Deno.writeFile(source, bytes);
const caCerts = caFile === undefined ? undefined : [await Deno.readTextFile(caFile)];
const transport = mode === "none"
  ? new HttpTransport({ proxy: false, ...(caCerts ? { caCerts } : {}) })
  : undefined;
const client = new PartedClient({
  plainHttp: !reference.startsWith("tls:"),
  ...(transport ? { transport: transport.fetch } : {}),
  ...(caCerts ? { caCerts } : {}),
});
try {
  const target = reference.replace(/^tls:/, "");
  await client.push(target, fromFile(source), { partSize: MiB });
  await client.pull(target, toFile(`${dir}/out.bin`));
  const out = await Deno.readFile(`${dir}/out.bin`);
  if (out.length !== bytes.length || out.some((b, i) => b !== bytes[i])) {
    throw new Error("pulled bytes differ");
  }
  await Deno.remove(`${dir}/out.bin`);
} catch (err) {
  console.error(`${err instanceof Error ? err.message : err} [${causeCodes(err).join(", ")}]`);
  Deno.exitCode = 1;
} finally {
  client.close();
  transport?.close();
}
