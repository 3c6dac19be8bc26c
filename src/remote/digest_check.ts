/**
 * The verdict every download ends with, in one place: the bytes hashed as they passed, then
 * compared with the digest they were asked for. A mismatch is `DigestMismatchError`, the
 * registry's verdict on bytes it sent; so is a body longer or shorter than the blob's size.
 *
 * @module
 */
import { ProtocolError } from "../errors/kinds.ts";
import { DigestMismatchError } from "../errors/sentinels.ts";

/** A running hash: a copying one (`StreamHash`, `Sha256`) or one fed elsewhere (parts). */
export interface DigestSource {
  /** `sha256:<hex>` of everything hashed so far. */
  digest(): string | Promise<string>;
}

/** A hash that takes the bytes as they pass. */
export interface PassingHash extends DigestSource {
  /** Adds `bytes`; once it settles the bytes may be reused. */
  update(bytes: Uint8Array): unknown;
}

/**
 * Checks that what passed hashes to `expected`; `label` names the download in the error.
 *
 * @example A blob's bytes checked against its digest
 * ```ts
 * import { DigestCheck } from "./digest_check.ts";
 * import { Sha256, sha256Digest } from "../hashing/sha256.ts";
 * const bytes = new TextEncoder().encode("hello");
 * const check = new DigestCheck(sha256Digest(bytes), "GET blob");
 * const hash = new Sha256();
 * hash.update(bytes);
 * await check.verify(hash);
 * console.log("verified"); // "verified"
 * ```
 */
export class DigestCheck {
  /** The digest the bytes must hash to. */
  readonly expected: string;
  /** What the error names, e.g. `GET blob` or `part 3`. */
  readonly label: string;

  /** A check of bytes that must hash to `expected`. */
  constructor(expected: string, label: string) {
    this.expected = expected;
    this.label = label;
  }

  /** Resolves when `hash` holds the expected digest; rejects with `DigestMismatchError`. */
  async verify(hash: DigestSource): Promise<void> {
    if ((await hash.digest()) !== this.expected) throw new DigestMismatchError(this.label);
  }

  /** The error of bytes that are not the blob's: the body ran past or stopped short of `size`. */
  wrongLength(reason: "longer" | "shorter"): DigestMismatchError {
    const said = reason === "longer"
      ? "body longer than the blob size"
      : "body shorter than the blob";
    return new DigestMismatchError(this.label, { cause: new ProtocolError(`GET blob: ${said}`) });
  }

  /**
   * A pass-through that hashes the bytes of a blob of `size` bytes with `hash` and holds back
   * the last chunk until the digest is known, so a body that is not the blob never completes
   * what reads it (an upload). `onBytes` is told of every chunk; `failed` records the verdict.
   */
  transform(
    hash: PassingHash,
    size: number,
    onBytes: (bytes: number) => void,
    failed: (err: DigestMismatchError) => void,
  ): TransformStream<Uint8Array, Uint8Array> {
    let held: Uint8Array | undefined;
    let seen = 0;
    const refuse = (err: DigestMismatchError) => {
      failed(err);
      return err;
    };
    return new TransformStream({
      transform: async (chunk, controller) => {
        seen += chunk.byteLength;
        if (seen > size) throw refuse(this.wrongLength("longer"));
        await hash.update(chunk);
        onBytes(chunk.byteLength);
        if (held !== undefined) controller.enqueue(held);
        held = chunk;
      },
      flush: async (controller) => {
        if (seen !== size) throw refuse(this.wrongLength("shorter"));
        await this.verify(hash).catch((err) => {
          throw refuse(err);
        });
        if (held !== undefined) controller.enqueue(held);
        held = undefined;
      },
    });
  }
}
