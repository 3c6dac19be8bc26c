/**
 * Benchmark client: uploads a whole file with one PUT through `HttpTransport` and `fileBody`.
 *
 * Usage: `deno run -A bench/_upload_client.ts <url> <file>`; prints the status, exits 0 on 201.
 *
 * @module
 */
import { HttpTransport } from "../src/transport/engine/http_transport.ts";
import { fileBody } from "../src/transport/file_body.ts";

const [url, path] = Deno.args;
const size = (await Deno.stat(path)).size;
const transport = new HttpTransport();
try {
  const response = await transport.fetch(
    new Request(url, {
      method: "PUT",
      body: fileBody(path, 0, size),
      headers: { "content-length": String(size), "content-type": "application/octet-stream" },
      duplex: "half",
    } as RequestInit),
  );
  await response.body?.cancel();
  console.log(response.status);
  if (response.status !== 201) Deno.exitCode = 1;
} finally {
  transport.close();
}
