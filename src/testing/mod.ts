/**
 * An embedded OCI registry for testing code that pushes and pulls: like
 * go-containerregistry's `pkg/registry`, it keeps content in memory and speaks the distribution
 * API over HTTP on a loopback port ({@linkcode startMemoryRegistry}), or without any socket as a
 * fetch-shaped function ({@linkcode RegistryHandler}). {@linkcode MemoryStore} seeds and
 * inspects content.
 *
 * @example Testing a push against an embedded registry
 * ```ts
 * import { BlobClient, sha256Digest } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 *
 * await using registry = await startMemoryRegistry();
 * using client = new BlobClient({ plainHttp: true });
 * const bytes = new TextEncoder().encode("model weights");
 * const digest = sha256Digest(bytes);
 * await client.push(`${registry.host}/demo/model`, digest, bytes.length, bytes);
 * console.log(registry.store.hasBlob("demo/model", digest)); // true
 * ```
 *
 * @module
 */
export {
  type MemoryRegistry,
  type MemoryRegistryOptions,
  startMemoryRegistry,
} from "./memory_registry.ts";
export { RegistryHandler, type RegistryHandlerOptions } from "./registry_handler.ts";
export { MemoryStore, type StoredManifest, type UploadSession } from "./memory_store.ts";
