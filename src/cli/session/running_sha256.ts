/**
 * A running sha256 for the CLI's own file work (a blob pushed from a file, a blob pull's
 * partial): `node:crypto` on this thread, the same shape as the library's stream hash.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** A sha256 fed in pieces; `digest()` is `sha256:<hex>`. */
export interface RunningSha256 {
  update(bytes: Uint8Array): Promise<void>;
  digest(): Promise<string>;
  close(): void;
}

/**
 * A new running sha256.
 *
 * @example The digest of "abc"
 * ```ts
 * import { openRunningSha256 } from "./running_sha256.ts";
 * const hash = openRunningSha256();
 * await hash.update(new TextEncoder().encode("abc"));
 * console.log((await hash.digest()).slice(0, 15)); // sha256:ba7816bf
 * ```
 */
export function openRunningSha256(): RunningSha256 {
  const hash = createHash("sha256");
  return {
    update(bytes) {
      hash.update(bytes);
      return Promise.resolve();
    },
    digest: () => Promise.resolve(`sha256:${hash.digest("hex")}`),
    close() {},
  };
}
