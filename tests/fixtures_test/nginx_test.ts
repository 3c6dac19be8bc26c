import { startNginx } from "../fixtures/nginx.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { seedBlob } from "../fixtures/seed.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { pidGone, portClosed } from "./helpers.ts";

registryTest("nginx: proxies the registry, keeps Locations on nginx, answers 413 over the cap", {
  needs: ["nginx"],
}, async () => {
  await using registry = await startRegistry();
  const nginx = await startNginx({ upstream: registry.url, clientMaxBodySize: "64k" });
  try {
    const base = await fetch(`${nginx.url}/v2/`);
    await base.body?.cancel();
    assertEquals(base.status, 200);

    const small = patternBytes(10_000, 1);
    const digest = await seedBlob(nginx.url, "nginx/a", small);
    assertEquals(digest, sha256Bytes(small));

    const started = await fetch(`${nginx.url}/v2/nginx/a/blobs/uploads/`, { method: "POST" });
    await started.body?.cancel();
    const location = new URL(started.headers.get("location")!);
    assertEquals(location.host, nginx.host);
    const big = patternBytes(200_000, 2);
    location.searchParams.set("digest", sha256Bytes(big));
    const put = await fetch(location, {
      method: "PUT",
      body: big,
      headers: { "content-type": "application/octet-stream" },
    });
    await put.body?.cancel();
    assertEquals(put.status, 413);
    const head = await fetch(`${registry.url}/v2/nginx/a/blobs/${sha256Bytes(big)}`, {
      method: "HEAD",
    });
    assertEquals(head.status, 404);
  } finally {
    await nginx.stop();
  }
  assert(await pidGone(nginx.pid), "nginx still running after stop");
  assert(await portClosed(nginx.port), "nginx port still open after stop");
});
