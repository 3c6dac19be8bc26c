/**
 * An embedded OCI registry for testing code that pushes and pulls: like
 * go-containerregistry's `pkg/registry`, it keeps content in memory and speaks the distribution
 * API over HTTP on a loopback port ({@linkcode startMemoryRegistry}), or without any socket as a
 * fetch-shaped function ({@linkcode RegistryHandler}). {@linkcode MemoryStore} seeds and
 * inspects content.
 *
 * @example Testing a push against an embedded registry
 * ```ts ignore
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * // push to `${registry.host}/demo/model:v1` with plain HTTP, then inspect:
 * console.log(registry.store.tags("demo/model"));
 * ```
 *
 * @module
 */
export * from "./memory_registry.ts";
export * from "./registry_handler.ts";
export * from "./memory_store.ts";
export * from "./routes.ts";
