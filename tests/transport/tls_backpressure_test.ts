/**
 * A TLS download that its reader stops reading stops on the wire too, on every path that reaches
 * a registry over `node:tls` (an unverified certificate, a pinned self-signed one, a `CONNECT`
 * tunnel through a proxy), and a bandwidth cap holds on the wire rather than on what was already
 * read into memory. A counting TCP relay in front of the registry sees what the client really
 * took from its socket.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { BlobClient } from "../../src/blob/client.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { makeSelfSigned } from "../fixtures/tls.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTinyproxy } from "../fixtures/tinyproxy.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { startCountingRelay } from "./_counting_relay.ts";

const MiB = 1 << 20;
const BLOB_SIZE = 192 * MiB;
// What may pass while the reader holds still: socket buffers on both sides and the stream's
// own queue. Before the fix, every byte the registry could send in the pause passed.
const PAUSED_SLACK = 24 * MiB;

type Mode = "insecure" | "pinned" | "pinned through a proxy";
const MODES: Mode[] = ["insecure", "pinned", "pinned through a proxy"];

async function withTlsRegistry(
  fn: (
    ctx: { host: string; cert: string; relay: ReturnType<typeof startCountingRelay> },
  ) => Promise<void>,
): Promise<void> {
  const dir = await makeTempDir("ocipart-tls-bp-");
  try {
    const selfSigned = await makeSelfSigned(dir);
    await using registry = await startRegistry({ tls: selfSigned });
    using relay = startCountingRelay(registry.port);
    await fn({ host: `127.0.0.1:${relay.port}`, cert: selfSigned.cert, relay });
  } finally {
    await removeDir(dir);
  }
}

// A client for `mode`; through a proxy, its transport is told the proxy (the environment is
// the test process's, shared with other tests).
function clientFor(mode: Mode, cert: string, extra: { proxy?: string; bytesPerSecond?: number }) {
  const tls = mode === "insecure" ? { insecureTls: true } : { caCerts: [cert] };
  const transport = new HttpTransport({
    ...tls,
    proxy: extra.proxy ? { https: extra.proxy } : false,
  });
  const client = new BlobClient({
    transport: transport.fetch,
    ...(extra.bytesPerSecond ? { rateLimit: { bytesPerSecond: extra.bytesPerSecond } } : {}),
  });
  return {
    client,
    [Symbol.dispose]() {
      client.close();
      transport.close();
    },
  };
}

async function pushBlob(client: BlobClient, repository: string): Promise<string> {
  const bytes = patternBytes(BLOB_SIZE, 7);
  const digest = sha256Bytes(bytes);
  await client.push(repository, digest, bytes.length, bytes);
  return digest;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const mode of MODES) {
  registryTest(
    `TLS backpressure (${mode}): a reader that holds still stops the registry's bytes on the wire`,
    { needs: mode === "pinned through a proxy" ? ["openssl", "tinyproxy"] : ["openssl"] },
    async () => {
      await withTlsRegistry(async ({ host, cert, relay }) => {
        await using proxy = mode === "pinned through a proxy" ? await startTinyproxy() : undefined;
        {
          using made = clientFor(mode, cert, proxy ? { proxy: proxy.url } : {});
          const client = made.client;
          const repository = `${host}/bp/blob`;
          const digest = await pushBlob(client, repository);
          const stream = await client.pull(repository, digest);
          const reader = stream.getReader();
          const first = await reader.read();
          assert(!first.done);
          const before = relay.fromServer();
          await sleep(1500);
          const during = relay.fromServer() - before;
          assert(
            during < PAUSED_SLACK,
            `${(during / MiB).toFixed(1)} MiB crossed the wire while nothing was read`,
          );
          // Reading on gets the whole blob, verified.
          let total = first.value.byteLength;
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            total += value.byteLength;
          }
          assertEquals(total, BLOB_SIZE);
          if (proxy) assert((await proxy.requests()).some((line) => line.startsWith("CONNECT")));
        }
      });
    },
  );
}

registryTest(
  "TLS rate cap (insecure): the cap holds on the wire, not only on what leaves memory",
  { needs: ["openssl"] },
  async () => {
    await withTlsRegistry(async ({ host, cert, relay }) => {
      const repository = `${host}/bp/capped`;
      let digest: string;
      {
        using uncapped = clientFor("insecure", cert, {});
        digest = await pushBlob(uncapped.client, repository);
      }
      const cap = 16 * MiB;
      using capped = clientFor("insecure", cert, { bytesPerSecond: cap });
      const stream = await capped.client.pull(repository, digest);
      const reader = stream.getReader();
      await reader.read();
      const before = relay.fromServer();
      const started = performance.now();
      await sleep(2000);
      const seconds = (performance.now() - started) / 1000;
      const rate = (relay.fromServer() - before) / seconds;
      await reader.cancel();
      // Generous: the cap plus what socket buffers absorb in two seconds. Before the fix the
      // registry sent at its full speed (hundreds of MiB/s) into memory.
      assert(
        rate < cap + PAUSED_SLACK / seconds,
        `${(rate / MiB).toFixed(1)} MiB/s on the wire under a 16 MiB/s cap`,
      );
    });
  },
);
