/**
 * An incremental sha256 hasher on `node:crypto`.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";

/**
 * An incremental sha256 hasher whose intermediate digest can be read without ending the hash,
 * so a transfer can check a prefix and carry on, and that can be reset for a fresh attempt.
 *
 * @example Hashing in chunks
 * ```ts
 * import { Sha256 } from "./sha256.ts";
 * const hash = new Sha256();
 * hash.update(new TextEncoder().encode("ab")).update(new TextEncoder().encode("c"));
 * console.log(hash.digest());
 * // "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 * console.log(hash.bytes); // 3
 * ```
 */
export class Sha256 {
  #hash: Hash = createHash("sha256");
  #bytes = 0;

  /** How many bytes were hashed since construction or the last {@linkcode Sha256.reset}. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Adds `chunk` to the hash. The chunk is consumed synchronously and may be reused afterwards.
   *
   * @example Chaining updates
   * ```ts
   * import { Sha256 } from "./sha256.ts";
   * const hash = new Sha256().update(new Uint8Array([1])).update(new Uint8Array([2]));
   * console.log(hash.bytes); // 2
   * ```
   */
  update(chunk: Uint8Array): this {
    this.#hash.update(chunk);
    this.#bytes += chunk.byteLength;
    return this;
  }

  /**
   * Returns `sha256:<hex>` of everything hashed so far. Does not end the hash: more updates may
   * follow.
   *
   * @example Reading a prefix digest
   * ```ts
   * import { Sha256 } from "./sha256.ts";
   * const hash = new Sha256();
   * console.log(hash.digest());
   * // "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
   * ```
   */
  digest(): string {
    return `sha256:${this.#hash.copy().digest("hex")}`;
  }

  /**
   * Forgets everything hashed so far, as if newly constructed.
   *
   * @example Starting over
   * ```ts
   * import { Sha256 } from "./sha256.ts";
   * const hash = new Sha256().update(new Uint8Array([1]));
   * hash.reset();
   * console.log(hash.bytes); // 0
   * ```
   */
  reset(): void {
    this.#hash = createHash("sha256");
    this.#bytes = 0;
  }
}

/**
 * Returns the `sha256:<hex>` digest of `bytes` in one call.
 *
 * @example One-shot digest
 * ```ts
 * import { sha256Digest } from "@ocipart/ocipart";
 * console.log(sha256Digest(new TextEncoder().encode("{}")));
 * // "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
 * ```
 */
export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}
