/**
 * A tiny program around the library for kill-anywhere runs: a child process that a scenario
 * can SIGKILL at any instant.
 *
 * Usage: `deno run --allow-all driver.ts push <ref> <file> <partSize>` or
 * `deno run --allow-all driver.ts pull <ref> <dest>`. Exit 0 on success; on failure the
 * library's error goes to standard error (scanned for leaks by the caller) and the exit code
 * is 1.
 *
 * @module
 */
// With OCIPART_LEAK_SCAN_DIR set (inherited from the test or stress run), every error the
// library builds in this child is collected for the whole-run leak scan.
import "../fixtures/error_observer.ts";
import { PartedClient } from "../../src/parted/client.ts";
import { fromFile } from "../../src/parted/fs_source.ts";
import { toFile } from "../../src/parted/fs_partial.ts";

const [command, ref, path, partSize] = Deno.args;
const client = new PartedClient({
  plainHttp: true,
  retryPolicy: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 200 },
  stallTimeoutMs: 10_000,
});
try {
  if (command === "push") {
    const descriptor = await client.push(ref, fromFile(path), {
      partSize: Number(partSize),
      workers: 4,
    });
    console.log(descriptor.digest);
  } else {
    await client.pull(ref, toFile(path), { workers: 4 });
  }
} catch (err) {
  console.error(String(err));
  Deno.exit(1);
}
