/**
 * An embedded OCI registry on a loopback port for tests.
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { MemoryStore } from "./memory_store.ts";
import { RegistryHandler } from "./registry_handler.ts";
import { toWebRequest, writeWebResponse } from "./node_adapter.ts";

/**
 * Options of {@linkcode startMemoryRegistry}.
 *
 * @example Two registries sharing one store
 * ```ts
 * import { MemoryStore, startMemoryRegistry } from "@ocipart/ocipart/testing";
 * const store = new MemoryStore();
 * await using first = await startMemoryRegistry({ store });
 * await using second = await startMemoryRegistry({ store });
 * console.log(first.store === second.store); // true
 * ```
 */
export interface MemoryRegistryOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Interface to bind; `127.0.0.1` by default. */
  hostname?: string;
  /** When set, upload sessions advertise `OCI-Chunk-Min-Length`. */
  ociChunkMinLength?: number;
  /** Serve this store (to share content between registries or seed it up front). */
  store?: MemoryStore;
}

/**
 * A running embedded registry.
 *
 * @example A reference on the embedded registry
 * ```ts
 * import { type MemoryRegistry, startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry: MemoryRegistry = await startMemoryRegistry();
 * const reference = `${registry.host}/demo/model:v1`; // use with plainHttp: true
 * console.log(reference.endsWith("/demo/model:v1")); // true
 * ```
 */
export interface MemoryRegistry {
  /** `http://<host>`. */
  readonly url: string;
  /** `<hostname>:<port>`, the registry part of a reference. */
  readonly host: string;
  /** The bound port. */
  readonly port: number;
  /** The served content, for seeding and inspection. */
  readonly store: MemoryStore;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
  /** Same as `close()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts an in-process OCI registry (HTTP, no auth) on a loopback port, backed by memory.
 * Runtime-neutral: it uses `node:http`, so it runs on Deno, Node and Bun.
 *
 * @example Pointing a client at an embedded registry
 * ```ts
 * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * using client = new BlobClient({ plainHttp: true });
 * const digest = sha256Digest(new Uint8Array());
 * console.log(await client.exists(`${registry.host}/demo/model`, digest)); // false
 * ```
 */
export async function startMemoryRegistry(
  options: MemoryRegistryOptions = {},
): Promise<MemoryRegistry> {
  const handler = new RegistryHandler({
    ...(options.store === undefined ? {} : { store: options.store }),
    ...(options.ociChunkMinLength === undefined
      ? {}
      : { ociChunkMinLength: options.ociChunkMinLength }),
  });
  const hostname = options.hostname ?? "127.0.0.1";
  let host = "";
  const server = createServer((req, res) => {
    const request = toWebRequest(req, host);
    handler.handle(request)
      .then((response) => writeWebResponse(res, response))
      .catch(() => res.destroy())
      .finally(() => req.resume());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  host = `${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closing;
  };
  return {
    url: `http://${host}`,
    host,
    port,
    store: handler.store,
    close,
    [Symbol.asyncDispose]: close,
  };
}
