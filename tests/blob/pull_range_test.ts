import { assert, assertEquals } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { BlobClient } from "../../src/blob/mod.ts";
import { findError } from "../../src/errors/find_error.ts";
import { ProtocolError } from "../../src/errors/kinds.ts";
import { NotFoundError } from "../../src/errors/sentinels.ts";
import { assertSafeError, blob, collect, instantClock, rejection } from "./_helpers.ts";
import { startStorageServer } from "./_storage_server.ts";

const GET = { method: "GET", path: /\/blobs\/sha256:/ };

Deno.test("pullRange: start, middle and last byte", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  const { bytes, digest } = blob(100_000, 1);
  registry.store.putBlob("r/x", bytes);
  const repo = `${registry.host}/r/x`;
  for (const [offset, length] of [[0, 1], [0, 4096], [40_000, 12_345], [99_999, 1], [0, 100_000]]) {
    const seen: number[] = [];
    const got = await collect(
      await client.pullRange(repo, digest, offset!, length!, {
        onProgress: (done, total) => {
          assertEquals(total, length);
          seen.push(done);
        },
      }),
    );
    assertEquals(got, bytes.subarray(offset!, offset! + length!));
    assertEquals(seen.at(-1), length);
  }
  const ranges = registry.log.filter((r) => r.method === "GET").map((r) => r.headers.range);
  assertEquals(ranges[0], "bytes=0-0");
  assertEquals(ranges[3], "bytes=99999-99999");
  assertEquals(await collect(await client.pullRange(repo, digest, 5, 0)), new Uint8Array());
  assert(
    findError(
      await rejection(client.pullRange(`${registry.host}/r/none`, digest, 0, 1)),
      NotFoundError,
    ),
  );
});

Deno.test("pullRange: never verifies the digest", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true });
  const { bytes, digest } = blob(1000, 2);
  registry.store.putBlob("r/x", bytes);
  const tampered = bytes.slice();
  tampered[10] ^= 0xff;
  registry.store.tamperBlob(digest, tampered);
  assertEquals(
    await collect(await client.pullRange(`${registry.host}/r/x`, digest, 0, 20)),
    tampered.subarray(0, 20),
  );
});

Deno.test("pullRange: every Content-Range is validated before bytes are exposed", async () => {
  const bad = [
    "bytes 1-10/1000", // starts elsewhere
    "bytes 0-20/1000", // beyond the request
    "bytes 0-9/5", // inconsistent total
    "bytes */1000",
    "items 0-9/1000",
  ];
  for (const contentRange of bad) {
    await using registry = await startFakeRegistry();
    using client = new BlobClient({ plainHttp: true, clock: instantClock() });
    const { bytes, digest } = blob(1000, 3);
    registry.store.putBlob("r/x", bytes);
    registry.fault({ ...GET, contentRange });
    const err = await rejection(client.pullRange(`${registry.host}/r/x`, digest, 0, 10));
    assert(findError(err, ProtocolError), `${contentRange}: ${err}`);
    assertEquals(registry.count(GET), 1);
  }
  // A server that ignores the range answers 200: not a validated range.
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { bytes, digest } = blob(1000, 3);
  registry.store.putBlob("r/x", bytes);
  registry.fault({ ...GET, ignoreRange: true });
  assert(
    findError(
      await rejection(client.pullRange(`${registry.host}/r/x`, digest, 0, 10)),
      ProtocolError,
    ),
  );
});

Deno.test("pullRange: a broken portion is continued from its last byte", async () => {
  await using registry = await startFakeRegistry();
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const { bytes, digest } = blob(200_000, 4);
  registry.store.putBlob("r/x", bytes);
  registry.fault({ ...GET, cutAfter: 3000 });
  const got = await collect(await client.pullRange(`${registry.host}/r/x`, digest, 1000, 150_000));
  assertEquals(got, bytes.subarray(1000, 151_000));
  const ranges = registry.log.filter((r) => r.method === "GET").map((r) => r.headers.range);
  assertEquals(ranges, ["bytes=1000-150999", "bytes=4000-150999"]);
});

Deno.test("pullRange: at most 16 shorter valid portions; the 17th is an error", async () => {
  const { bytes, digest } = blob(64_000, 5);
  const path = `/v2/r/x/blobs/${digest}`;
  await using server = await startStorageServer({
    blobs: new Map([[path, bytes]]),
    maxPortion: 1000,
  });
  using client = new BlobClient({ plainHttp: true, clock: instantClock() });
  const repo = `${new URL(server.url).host}/r/x`;
  const got = await collect(await client.pullRange(repo, digest, 500, 16_000));
  assertEquals(got, bytes.subarray(500, 16_500));
  assertEquals(server.log.length, 16);
  assertEquals(server.log[1]!.headers.range, "bytes=1500-16499");

  const before = server.log.length;
  const stream = await client.pullRange(repo, digest, 0, 16_001);
  let read = 0;
  let error: unknown;
  try {
    for await (const chunk of stream) read += chunk.byteLength;
  } catch (err) {
    error = assertSafeError(err);
  }
  assert(findError(error, ProtocolError), String(error));
  assertEquals(read, 16_000);
  assertEquals(server.log.length - before, 16);
});
