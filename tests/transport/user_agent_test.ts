/**
 * Every request of both clients names the package (`ocipart/<version>`), as the registry sees
 * it through a recording proxy; a caller's own User-Agent is kept.
 */
import { assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import denoJson from "../../deno.json" with { type: "json" };
import { BlobClient, fromFile, PartedClient, sha256Digest, toFile } from "../../mod.ts";
import { USER_AGENT, VERSION } from "../../src/transport/layers/user_agent.ts";
import { layeredFetch } from "../../src/transport/layers/layered_fetch.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "../cli/_cli.ts";

Deno.test("the version constant is deno.json's version", () => {
  assertStrictEquals(VERSION, denoJson.version);
  assertStrictEquals(USER_AGENT, `ocipart/${denoJson.version}`);
});

Deno.test("a User-Agent the request already carries is kept", async () => {
  const seen: string[] = [];
  const fetch = layeredFetch((request) => {
    seen.push(request.headers.get("user-agent") ?? "");
    return Promise.resolve(new Response(null, { status: 204 }));
  }, {});
  await fetch(new Request("http://127.0.0.1/", { headers: { "user-agent": "mine/1" } }));
  await fetch(new Request("http://127.0.0.1/"));
  assertEquals(seen, ["mine/1", USER_AGENT]);
});

registryTest(
  "both clients and the CLI send User-Agent ocipart/<version> on every request",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const source = `${tmp.path}/w.bin`;
    await writePatternFile(source, 200 * 1024, 9);
    const ref = `${proxy.host}/agent/parted:v1`;

    using parted = new PartedClient({ plainHttp: true });
    await parted.push(ref, fromFile(source), { partSize: 64 * 1024 });
    await parted.pull(ref, toFile(`${tmp.path}/out.bin`));
    using blobs = new BlobClient({ plainHttp: true });
    const bytes = new TextEncoder().encode("agent");
    await blobs.push(`${proxy.host}/agent/blob`, sha256Digest(bytes), bytes.length, bytes);
    await new Response(await blobs.pull(`${proxy.host}/agent/blob`, sha256Digest(bytes))).text();
    const cli = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path });
    assertStrictEquals(cli.code, 0, cli.stderr);

    const agents = new Set(proxy.log.map((r) => r.headers["user-agent"]));
    assertEquals([...agents], [`ocipart/${denoJson.version}`]);
    // Uploads of file ranges, downloads and manifests all went through the proxy.
    for (const route of ["upload", "session", "blob", "manifest"] as const) {
      assertStrictEquals(proxy.log.some((r) => r.route === route), true, route);
    }
  },
);
