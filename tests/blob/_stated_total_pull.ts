/**
 * A parallel `BlobClient` pull in a process of its own, so that a plan sized by a registry's
 * stated total ends this process (out of memory), not the test runner. Arguments: the registry's
 * host, the repository, the digest, the chunk size. Prints the error's name and message as JSON,
 * or `{"bytes": n}` when the pull succeeded.
 *
 * @module
 */
import { BlobClient } from "../../src/blob/mod.ts";

const [host, repository, digest, chunkSize] = Deno.args;
using client = new BlobClient({
  plainHttp: true,
  parallelPull: { workers: 4, chunkSize: Number(chunkSize) },
});
try {
  let bytes = 0;
  for await (const chunk of await client.pull(`${host}/${repository}`, digest!)) {
    bytes += chunk.byteLength;
  }
  console.log(JSON.stringify({ bytes }));
} catch (err) {
  const error = err as Error;
  console.log(JSON.stringify({ name: error.name, message: error.message }));
}
