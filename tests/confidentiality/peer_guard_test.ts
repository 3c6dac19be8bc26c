/**
 * The peer guard of cross-host requests: token realms and upload locations on loopback,
 * private, link-local or unspecified addresses are refused before anything is dialed, a name
 * that resolves to loopback is refused too, and the registry's own hostname on another port is
 * exempt.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { join } from "node:path";
import { findError } from "../../src/errors/find_error.ts";
import { PeerRefusedError } from "../../src/errors/kinds.ts";
import { NotFoundError } from "../../src/errors/sentinels.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { crossHostFetch } from "../../src/transport/layers/cross_host_fetch.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { crossHostPeerGuard, guardedExternalTransport } from "../../src/transport/peer_guard.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import {
  ErrorLedger,
  FAST_POLICY,
  SECRET,
  startCountingServer,
  writeRandomFile,
} from "./_helpers.ts";

/** IP literals a realm or upload location must never reach (host part of a URL). */
const FORBIDDEN_LITERALS = [
  "127.0.0.1",
  "127.1.2.3",
  "10.0.0.1",
  "10.255.255.254",
  "172.16.0.1",
  "172.31.255.254",
  "192.168.0.1",
  "192.168.255.254",
  "169.254.169.254",
  "0.0.0.0",
  "[::1]",
  "[::]",
  "[fe80::1]",
  "[febf::1]",
  "[fc00::1]",
  "[fdff::1]",
  "[::ffff:127.0.0.1]",
  "[::ffff:10.0.0.1]",
  "[::ffff:169.254.169.254]",
];

Deno.test("peer guard: the unit table of forbidden and allowed peers", () => {
  for (const literal of FORBIDDEN_LITERALS) {
    const address = literal.replace(/^\[|\]$/g, "");
    assertStrictEquals(crossHostPeerGuard(address, address.includes(":") ? 6 : 4), false, literal);
  }
  for (
    const address of ["93.184.215.14", "8.8.8.8", "172.32.0.1", "2606:4700::1", "::ffff:8.8.8.8"]
  ) {
    assertStrictEquals(crossHostPeerGuard(address, address.includes(":") ? 6 : 4), true, address);
  }
  assertStrictEquals(crossHostPeerGuard("not-an-address", 4), false, "fails closed on junk");
});

Deno.test("peer guard: the guarded transport refuses forbidden literals before dialing", async () => {
  const ledger = new ErrorLedger();
  const counter = startCountingServer("::");
  const base = new HttpTransport();
  const external = guardedExternalTransport(base);
  ledger.forbid(counter.port);
  try {
    for (const literal of FORBIDDEN_LITERALS) {
      const url = `http://${literal}:${counter.port}/token?secret=${SECRET}`;
      const err = await ledger.rejection(external.fetch(new Request(url)));
      assert(err instanceof PeerRefusedError, literal);
    }
    // A name resolving to loopback is refused at resolution.
    const err = await ledger.rejection(
      external.fetch(new Request(`http://localhost:${counter.port}/`)),
    );
    assert(err instanceof PeerRefusedError);
    // An upload body never leaves either.
    const upload = await ledger.rejection(external.fetch(
      new Request(`http://10.0.0.1:${counter.port}/upload?X-Amz-Signature=${SECRET}`, {
        method: "PUT",
        headers: { "content-length": "3" },
        body: new Uint8Array([1, 2, 3]),
      }),
    ));
    assert(upload instanceof PeerRefusedError);
    assertStrictEquals(counter.connections, 0, "nothing was dialed");
    assertStrictEquals(counter.bytes, 0);
  } finally {
    external.close();
    base.close();
    await counter.close();
  }
});

Deno.test("peer guard: without a cross-host transport, other hosts fail closed", async () => {
  const seen: string[] = [];
  const caller = (request: Request) => {
    seen.push(new URL(request.url).host);
    return Promise.resolve(new Response("ok"));
  };
  const route = crossHostFetch({ registry: new URL("http://127.0.0.1:5000"), sameHost: caller });
  assertStrictEquals((await route(new Request("http://127.0.0.1:6000/storage"))).status, 200);
  const err = await route(new Request("http://localhost:5000/")).catch((e) => e);
  assert(err instanceof PeerRefusedError);
  assertEquals(seen, ["127.0.0.1:6000"], "the registry's hostname on another port is exempt");
  // An upload body is released unread, never handed to the caller's transport.
  let cancelled = false;
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      controller.enqueue(new Uint8Array(8));
    },
    cancel() {
      cancelled = true;
    },
  }, { highWaterMark: 0 });
  const upload = await route(
    new Request("http://storage.example/upload", {
      method: "PUT",
      body,
      headers: { "content-length": "8" },
      duplex: "half",
    } as RequestInit),
  ).catch((e) => e);
  assert(upload instanceof PeerRefusedError);
  assertStrictEquals(cancelled, true);
  assertStrictEquals(pulled, 0);
  assertStrictEquals(seen.length, 1);
});

registryTest("peer guard: a realm on localhost while the registry is 127.0.0.1", async () => {
  const ledger = new ErrorLedger();
  const work = await makeTempDir("ocipart-conf-");
  const counter = startCountingServer("::");
  try {
    // Only the signing certificate is needed from the token server: the realm points elsewhere.
    await using signer = await startTokenServer({});
    const realm = `http://localhost:${counter.port}/token?secret=${SECRET}`;
    await using registry = await startRegistry({
      token: {
        realm,
        service: signer.service,
        issuer: signer.issuer,
        rootCertBundle: signer.rootCertBundle,
      },
    });
    ledger.forbid(counter.port, registry.port);
    using client = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "s3cret-pass" },
      retryPolicy: FAST_POLICY,
    });
    const source = join(work, "source.bin");
    await writeRandomFile(source, 4096);
    const pushErr = await ledger.rejection(
      client.push(`${registry.host}/conf/realm:v1`, fromFile(source)),
    );
    assert(findError(pushErr, PeerRefusedError), "push fails closed");
    const pullErr = await ledger.rejection(
      client.pull(`${registry.host}/conf/realm:v1`, toFile(join(work, "out.bin"))),
    );
    assert(findError(pullErr, PeerRefusedError), "pull fails closed");
    assertStrictEquals(counter.connections, 0, "the token server saw no connection");
    assertStrictEquals(counter.bytes, 0, "the token server saw zero bytes");
    assertStrictEquals(signer.requests.length, 0);
  } finally {
    await counter.close();
    await removeDir(work);
  }
});

/**
 * A minimal registry addressed as `localhost:<port>`, so that 127.x literals are other hosts:
 * with `realm`, every request without the expected token is challenged with that realm; with
 * `uploadLocation`, blobs are absent and an upload session lives at that location.
 */
async function startMiniRegistry(
  options: { realm?: () => string; uploadLocation?: () => string },
): Promise<{ port: number; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    if (options.realm !== undefined && req.headers.authorization !== "Bearer mini-token") {
      res.writeHead(401, {
        "www-authenticate": `Bearer realm="${options.realm()}",service="mini"`,
        "content-length": "0",
      });
      res.end();
      return;
    }
    if (options.uploadLocation !== undefined && req.method === "POST") {
      res.writeHead(202, { location: options.uploadLocation(), "content-length": "0" });
      res.end();
      return;
    }
    res.writeHead(404, { "content-length": "0" });
    res.end();
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

Deno.test("peer guard: forbidden realm and upload-location literals are never dialed", async () => {
  const ledger = new ErrorLedger();
  const work = await makeTempDir("ocipart-conf-");
  const counter = startCountingServer("::");
  let current = "";
  const realms = await startMiniRegistry({ realm: () => current });
  const uploads = await startMiniRegistry({ uploadLocation: () => current });
  ledger.forbid(counter.port, realms.port, uploads.port);
  using client = new PartedClient({ plainHttp: true, retryPolicy: FAST_POLICY });
  const source = join(work, "source.bin");
  await writeRandomFile(source, 2048);
  try {
    for (const literal of FORBIDDEN_LITERALS) {
      current = `http://${literal}:${counter.port}/token?secret=${SECRET}`;
      const pullErr = await ledger.rejection(
        client.pull(`localhost:${realms.port}/conf/table:v1`, toFile(join(work, "out.bin"))),
      );
      assert(findError(pullErr, PeerRefusedError), `realm ${literal}`);

      current = `http://${literal}:${counter.port}/upload/1?X-Amz-Signature=${SECRET}`;
      const pushErr = await ledger.rejection(
        client.push(`localhost:${uploads.port}/conf/table:v1`, fromFile(source)),
      );
      assert(findError(pushErr, PeerRefusedError), `upload location ${literal}`);
    }
    assertStrictEquals(counter.connections, 0, "no forbidden literal was dialed");
    assertStrictEquals(counter.bytes, 0);
    // The sessions were opened, so the refusals happened at the PUT, not before.
    assert(
      uploads.requests.filter((r) => r.startsWith("POST")).length >= FORBIDDEN_LITERALS.length,
    );
  } finally {
    await realms.close();
    await uploads.close();
    await counter.close();
    await removeDir(work);
  }
});

Deno.test("peer guard: a realm on the registry's own hostname and another port is exempt", async () => {
  const ledger = new ErrorLedger();
  const work = await makeTempDir("ocipart-conf-");
  const tokenRequests: string[] = [];
  const tokens = createServer((req, res) => {
    tokenRequests.push(req.url ?? "");
    const body = JSON.stringify({ token: "mini-token", expires_in: 300 });
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => tokens.listen(0, "127.0.0.1", resolve));
  const tokenPort = (tokens.address() as AddressInfo).port;
  // The registry is addressed as localhost; the realm is localhost on another port.
  const mini = await startMiniRegistry({ realm: () => `http://localhost:${tokenPort}/token` });
  ledger.forbid(tokenPort, mini.port);
  try {
    using client = new PartedClient({ plainHttp: true, retryPolicy: FAST_POLICY });
    const err = await ledger.rejection(
      client.pull(`localhost:${mini.port}/conf/exempt:v1`, toFile(join(work, "out.bin"))),
    );
    assertStrictEquals(findError(err, PeerRefusedError), undefined, "not refused");
    assert(findError(err, NotFoundError), "the token worked; the manifest is absent");
    assertStrictEquals(tokenRequests.length, 1);
  } finally {
    await mini.close();
    await new Promise<void>((resolve) => tokens.close(() => resolve()));
    await removeDir(work);
  }
});
