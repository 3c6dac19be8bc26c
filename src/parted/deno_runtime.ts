/**
 * Whether the program runs on Deno itself. The CLI built for Node puts a stand-in of its own in
 * place of the `Deno` global, with the few calls the CLI makes and nothing else the library may
 * need, so the library asks for the runtime, not for the name.
 *
 * @module
 */

/**
 * The `Deno` namespace when the runtime is Deno, else undefined.
 *
 * @example
 * ```ts
 * import { denoRuntime } from "./deno_runtime.ts";
 * console.log(denoRuntime() === Deno); // true under Deno
 * ```
 */
export function denoRuntime(): typeof Deno | undefined {
  if (typeof Deno === "undefined") return undefined;
  return typeof Deno.version?.deno === "string" ? Deno : undefined;
}
