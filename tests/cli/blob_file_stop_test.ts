/**
 * A blob pull into a file stops when its signal aborts, wherever the writer is: here the stop
 * comes while the writer is busy writing, after which every reader stops and no more bytes
 * arrive, so a writer that waited for news without looking at the signal waited for ever.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import type { BlobClient } from "../../src/blob/mod.ts";
import { pullBlobFile } from "../../src/cli/session/blob_file.ts";

const KiB = 1024;
const CHUNK = 128 * KiB;
const PIECE = 32 * KiB;

/** The first range arrives whole in pieces; every other range sends a piece, then stalls. */
function stallingClient(): BlobClient {
  const client = {
    pullRange(
      _repository: string,
      _digest: string,
      offset: number,
      length: number,
      options: { signal: AbortSignal },
    ): Promise<ReadableStream<Uint8Array>> {
      let sent = 0;
      return Promise.resolve(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (offset === 0 ? sent >= length : sent > 0) {
              if (offset === 0) return controller.close();
              await new Promise((_, reject) => {
                const stop = () => reject(options.signal.reason);
                if (options.signal.aborted) stop();
                options.signal.addEventListener("abort", stop, { once: true });
              });
            }
            sent += PIECE;
            controller.enqueue(new Uint8Array(PIECE));
          },
        }, { highWaterMark: 0 }),
      );
    },
  };
  return client as unknown as BlobClient;
}

Deno.test("blob pull into a file: a stop while the writer writes ends the pull at once", async () => {
  await using tmp = await tempDir();
  for (let round = 0; round < 20; round++) {
    const stop = new AbortController();
    let stoppedAt = 0;
    const pulling = pullBlobFile({
      client: stallingClient(),
      repository: "127.0.0.1:5000/team/x",
      digest: `sha256:${"0".repeat(64)}`,
      size: 8 * CHUNK,
      path: `${tmp.path}/out${round}.bin`,
      workers: 3,
      chunkSize: CHUNK,
      signal: stop.signal,
      onProgress: (snapshot) => {
        // The first report inside a write: the writer has more runs of the first range to write.
        if (snapshot.completedBytes > 0 && !stop.signal.aborted) {
          stoppedAt = performance.now();
          stop.abort(new DOMException("stopped", "AbortError"));
        }
      },
    }).then(() => "finished", (err: unknown) => err);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      pulling,
      new Promise((resolve) => timer = setTimeout(() => resolve("still running"), 5_000)),
    ]);
    clearTimeout(timer);
    assert(stoppedAt > 0, "the pull never wrote");
    assert(outcome instanceof DOMException, `round ${round}: ${String(outcome)}`);
    assertStrictEquals(outcome.name, "AbortError");
    assert(performance.now() - stoppedAt < 1_000, "stopped within 1 s");
  }
});
