/**
 * Forward proxies through a real one (tinyproxy) in front of the real registry: pushes (whose
 * parts are file-range uploads) and pulls go through it, for plain HTTP and for TLS (a
 * `CONNECT` tunnel), with and without proxy credentials; the proxy's own log shows the
 * requests it carried.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { NoProxyList } from "../../src/transport/engine/no_proxy.ts";
import { isForbiddenPeerAddress } from "../../src/transport/peer_policy.ts";
import { PeerRefusedError } from "../../src/errors/kinds.ts";
import { NetworkError } from "../../src/errors/kinds.ts";
import { fileBody } from "../../src/transport/file_body.ts";

const MiB = 1024 * 1024;

async function roundTrip(
  transport: HttpTransport,
  reference: string,
  plainHttp: boolean,
): Promise<void> {
  await using dir = await tempDir();
  const src = `${dir.path}/weights.bin`;
  const digest = await writePatternFile(src, 3 * MiB + 17);
  using client = new PartedClient({ transport: transport.fetch, plainHttp });
  await client.push(reference, fromFile(src), { partSize: MiB });
  const out = `${dir.path}/out.bin`;
  await client.pull(reference, toFile(out));
  assertEquals(await sha256File(out), digest);
}

registryTest(
  "HTTP_PROXY for a plain-HTTP registry: every request of a push and a pull goes through the proxy",
  { needs: ["tinyproxy"] },
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startTinyproxy();
    const transport = new HttpTransport({ proxy: { http: proxy.url } });
    try {
      await roundTrip(transport, `${registry.host}/proxied/plain:v1`, true);
    } finally {
      transport.close();
    }
    const lines = await proxy.requests();
    const origin = `http://${registry.host}/v2/proxied/plain/`;
    const count = (method: string) =>
      lines.filter((l) => l.startsWith(`${method} ${origin}`)).length;
    assert(count("POST") >= 4, `uploads opened through the proxy: ${lines.join("\n")}`);
    assert(count("PUT") >= 5, "parts, config and manifest PUT through the proxy");
    assert(count("GET") >= 4, "manifest and parts fetched through the proxy");
  },
);

registryTest(
  "HTTPS_PROXY for a TLS registry: a CONNECT tunnel per connection, credentials of the proxy URL",
  { needs: ["tinyproxy"] },
  async () => {
    await using registry = await startRegistry({ tls: true });
    await using proxy = await startTinyproxy({ user: "proxyuser", password: "proxypass" });
    const authorized = new URL(proxy.url);
    authorized.username = "proxyuser";
    authorized.password = "proxypass";
    const transport = new HttpTransport({
      caCerts: [registry.caCert!],
      proxy: { https: authorized.href },
    });
    try {
      await roundTrip(transport, `${registry.host}/proxied/tls:v1`, false);
    } finally {
      transport.close();
    }
    const lines = await proxy.requests();
    assert(lines.length > 0, "the proxy carried the transfer");
    assert(
      lines.every((l) => l === `CONNECT ${registry.host} HTTP/1.1`),
      `only tunnels, nothing of the registry's requests: ${lines.join("\n")}`,
    );

    // Without the proxy's credentials the tunnel is refused: terminal, and says so safely.
    const anonymous = new HttpTransport({
      caCerts: [registry.caCert!],
      proxy: { https: proxy.url },
    });
    try {
      const err = await anonymous.fetch(new Request(`${registry.url}/v2/`))
        .then(() => undefined, (e) => e);
      assert(err instanceof NetworkError, String(err));
      assertEquals(err.message, "HTTP request: proxy refused the tunnel (status 407)");
      assertEquals(err.retryable, false);
    } finally {
      anonymous.close();
    }
  },
);

registryTest(
  "NO_PROXY bypasses the proxy for the hosts it names",
  { needs: ["tinyproxy"] },
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startTinyproxy();
    const transport = new HttpTransport({
      proxy: { http: proxy.url, noProxy: `example.invalid, ${registry.host}` },
    });
    try {
      await roundTrip(transport, `${registry.host}/proxied/bypass:v1`, true);
    } finally {
      transport.close();
    }
    assertEquals(await proxy.requests(), []);
  },
);

registryTest(
  "a guarded transport vets a proxied target before the proxy hears of it",
  { needs: ["tinyproxy"] },
  async () => {
    await using proxy = await startTinyproxy();
    const transport = new HttpTransport({
      peerGuard: (address) => !isForbiddenPeerAddress(address),
      proxy: { http: proxy.url, https: proxy.url },
    });
    try {
      for (const url of ["http://127.0.0.1:9/v2/", "https://localhost:9/v2/"]) {
        const err = await transport.fetch(new Request(url)).then(() => undefined, (e) => e);
        assert(err instanceof PeerRefusedError, String(err));
      }
    } finally {
      transport.close();
    }
    assertEquals(await proxy.requests(), [], "the proxy received nothing");
  },
);

/**
 * A proxy that reads each `CONNECT` head and sends `answer`, then waits for the client to hang
 * up; without an answer it closes the connection at once.
 */
function startScriptedProxy(
  answer?: string,
): { url: string; heads: string[]; close(): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const heads: string[] = [];
  const served: Promise<void>[] = [];
  const serve = async (conn: Deno.Conn) => {
    const buffer = new Uint8Array(16 * 1024);
    try {
      const n = await conn.read(buffer);
      heads.push(new TextDecoder().decode(buffer.subarray(0, n ?? 0)).split("\r\n")[0]);
      if (answer !== undefined) {
        await conn.write(new TextEncoder().encode(answer));
        while (await conn.read(buffer) !== null) { /* until the client hangs up */ }
      }
    } catch { /* the client went away */ }
    conn.close();
  };
  (async () => {
    for await (const conn of listener) served.push(serve(conn));
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${listener.addr.port}`,
    heads,
    close: async () => {
      listener.close();
      await Promise.all(served);
    },
  };
}

/** A download (the node:http tunnel) and a file-range upload (the upload client) via `proxy`. */
function tunnelledRequests(path: string): (() => Request)[] {
  return [
    () => new Request("https://registry.example:5000/v2/", { signal: AbortSignal.timeout(20_000) }),
    () =>
      new Request("https://registry.example:5000/v2/x/blobs/uploads/1", {
        method: "PUT",
        headers: { "content-length": "4096" },
        body: fileBody(path, 0, 4096),
        signal: AbortSignal.timeout(20_000),
        duplex: "half",
      } as RequestInit),
  ];
}

Deno.test("a proxy that hangs up instead of answering CONNECT fails the request", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/part.bin`;
  await writePatternFile(path, 4096);
  const proxy = startScriptedProxy();
  const transport = new HttpTransport({ proxy: { https: proxy.url } });
  try {
    for (const request of tunnelledRequests(path)) {
      const err = await transport.fetch(request()).then(() => undefined, (e) => e);
      assert(err instanceof NetworkError, String(err));
      assertEquals(err.message, "HTTP request: proxy refused the tunnel (malformed answer)");
      assertEquals(err.retryable, true);
    }
    assertEquals(proxy.heads, [
      "CONNECT registry.example:5000 HTTP/1.1",
      "CONNECT registry.example:5000 HTTP/1.1",
    ]);
  } finally {
    transport.close();
    await proxy.close();
  }
});

Deno.test("a CONNECT answer with bytes after its 200, or an endless head: no tunnel", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/part.bin`;
  await writePatternFile(path, 4096);
  const cases = [
    // The origin would be speaking before TLS started.
    ["HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", "status 200"],
    // A head past 16 KiB is not waited for.
    [`HTTP/1.1 200 Connection established\r\nx-pad: ${"a".repeat(20_000)}`, "malformed answer"],
  ];
  for (const [answer, reason] of cases) {
    const proxy = startScriptedProxy(answer);
    const transport = new HttpTransport({ proxy: { https: proxy.url } });
    try {
      for (const request of tunnelledRequests(path)) {
        const err = await transport.fetch(request()).then(() => undefined, (e) => e);
        assert(err instanceof NetworkError, String(err));
        assertEquals(err.message, `HTTP request: proxy refused the tunnel (${reason})`);
      }
    } finally {
      transport.close();
      await proxy.close();
    }
  }
});

Deno.test("NO_PROXY forms: one table of what goes direct", () => {
  const list = new NoProxyList(
    " registry.internal , .corp.example, 10.0.0.5:5000, 192.168.0.0/16, fd00::/8, [::1], " +
      "0:0:0:0:0:0:7f00:2, [fe80::1]:8443, *.svc.example, bad/99, :80",
  );
  const table: Array<[string, boolean]> = [
    ["http://registry.internal/v2/", true],
    ["https://a.registry.internal/v2/", true],
    ["https://registry.internal.evil/v2/", false],
    ["https://corp.example/v2/", true],
    ["https://x.y.corp.example/v2/", true],
    ["https://notcorp.example/v2/", false],
    ["http://10.0.0.5:5000/v2/", true],
    ["http://10.0.0.5/v2/", false],
    ["http://192.168.44.1/v2/", true],
    ["http://192.169.0.1/v2/", false],
    ["http://[fd12::1]:5000/v2/", true],
    ["http://[fe12::1]/v2/", false],
    ["http://[::1]:5000/v2/", true],
    ["http://[::7f00:2]/v2/", true],
    ["https://[fe80::1]:8443/v2/", true],
    ["https://[fe80::1]/v2/", false],
    ["https://a.svc.example/v2/", true],
    ["http://8.8.8.8/v2/", false],
  ];
  for (const [url, direct] of table) assertEquals(list.bypasses(new URL(url)), direct, url);
  assertEquals(new NoProxyList("*").bypasses(new URL("http://[2606:4700::1]/")), true);
  assertEquals(new NoProxyList(undefined).bypasses(new URL("http://a/")), false);
});

Deno.test("NO_PROXY suffix entries match host names only, never an address literal", () => {
  const table: Array<[string, string, boolean]> = [
    [".0.0.1", "http://127.0.0.1:5000/v2/", false],
    ["*.0.0.1", "http://127.0.0.1:5000/v2/", false],
    ["0.0.1", "http://127.0.0.1/v2/", false],
    [".0.1:5000", "http://127.0.0.1:5000/v2/", false],
    [".168.0.1", "http://192.168.0.1/v2/", false],
    // Names keep matching their suffix entries.
    [".example", "http://registry.example/v2/", true],
    ["*.example", "http://a.registry.example:5000/v2/", true],
    [".1.example", "http://10.0.0.1.example/v2/", true],
    // The address forms keep matching addresses.
    ["127.0.0.1", "http://127.0.0.1:5000/v2/", true],
    ["127.0.0.0/8", "http://127.0.0.1:5000/v2/", true],
  ];
  for (const [entry, url, direct] of table) {
    assertEquals(new NoProxyList(entry).bypasses(new URL(url)), direct, `${entry} → ${url}`);
  }
});
