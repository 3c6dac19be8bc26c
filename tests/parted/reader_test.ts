/**
 * Random access: `PartedClient.open` → `readAt`, and `PartedClient.read` as a stream. Only the
 * parts a range touches are fetched; the part cache keeps nearby reads from fetching again.
 */
import { patternBytes } from "../fixtures/files.ts";
import { assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { fromStream, PartedClient } from "../../mod.ts";
import { startMemoryRegistry } from "../../src/testing/mod.ts";

const part = 4096;

async function artifact() {
  const registry = await startMemoryRegistry();
  const client = new PartedClient({ plainHttp: true });
  const bytes = patternBytes(5 * part + 33);
  const ref = `${registry.host}/r/a:v1`;
  await client.push(ref, fromStream(new Blob([bytes]).stream()), { partSize: part });
  return { registry, client, bytes, ref };
}

Deno.test("readAt fetches only the parts it touches, and the cache serves nearby reads", async () => {
  const { registry, client, bytes, ref } = await artifact();
  try {
    await using reader = await client.open(ref);
    assertEquals(await reader.readAt(part - 3, 6), bytes.slice(part - 3, part + 3));
    assertStrictEquals(reader.bytesFetched, 2 * part);
    assertEquals(await reader.readAt(part + 100, 10), bytes.slice(part + 100, part + 110));
    assertStrictEquals(reader.bytesFetched, 2 * part);
    assertEquals(await reader.readAt(bytes.length - 33, 33), bytes.slice(-33));
    assertStrictEquals(reader.bytesFetched, 2 * part + 33);
    assertEquals(await reader.readAt(bytes.length, 0), new Uint8Array(0));
    await assertRejects(reader.readAt(bytes.length - 1, 2), RangeError);
  } finally {
    client.close();
    await registry.close();
  }
});

Deno.test("read streams a range; past the end errors the stream with a RangeError", async () => {
  const { registry, client, bytes, ref } = await artifact();
  try {
    const got = new Uint8Array(
      await new Response(client.read(ref, { offset: 10, length: 3 * part })).arrayBuffer(),
    );
    assertEquals(got, bytes.slice(10, 10 + 3 * part));
    const whole = new Uint8Array(await new Response(client.read(ref)).arrayBuffer());
    assertEquals(whole, bytes);
    await assertRejects(
      new Response(client.read(ref, { offset: bytes.length + 1 })).arrayBuffer(),
      RangeError,
    );
  } finally {
    client.close();
    await registry.close();
  }
});
