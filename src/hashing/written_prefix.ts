/**
 * Where the written bytes of a pre-sized file range end, found in the same pass that hashes the
 * range. A range written in order from its start, into a file whose unwritten bytes read as
 * zeros, holds its written bytes up to the first all-zero block and zeros after them; the scan
 * keeps the running hash of exactly that prefix, so a download can continue it from there.
 *
 * @module
 */

/**
 * The block of the written-prefix rule, counted from the range's start: the prefix ends before
 * the first block of this many bytes that is all zeros. Larger blocks stop less often at zeros
 * that are data (which only makes a continuation start earlier); the trailing zeros of the
 * block before are trimmed, so a block written partly still counts up to its last nonzero byte.
 */
export const PREFIX_BLOCK_BYTES: number = 1 << 20;

/** The part of a hash the scan uses (`node:crypto`'s `Hash` has it). */
export interface ForkableHash<H> {
  /** Feeds `bytes`. */
  update(bytes: Uint8Array): unknown;
  /** An independent hash with the same state. */
  copy(): H;
}

/** A scan of one range, fed the range's bytes in order. */
export interface WrittenPrefixScan<H> {
  /** Feeds the next bytes of the range (any size). */
  update(bytes: Uint8Array): void;
  /**
   * Ends the scan. The hash given to {@linkcode scanWrittenPrefix} then holds the whole range;
   * `prefixHash` holds exactly its first `prefix` bytes: up to the first all-zero block (or the
   * range's end), without the zeros that end the block before it.
   */
  finish(): { prefix: number; prefixHash: H };
}

/**
 * Starts a scan that feeds `hash` with a range's bytes and notes, without reading anything
 * twice, where its written prefix ends. Before that point is found each block is looked at from
 * its end (one byte for most data); zeros are held back as a count and hashed from a zero buffer
 * once data follows them, so the hash can be copied exactly at the last nonzero byte. After it,
 * bytes go straight to the hash.
 *
 * Self-contained (no reference outside its own body): the hashing threads run its source too.
 *
 * @example The prefix of a range whose last block was written in part
 * ```ts
 * import { createHash } from "node:crypto";
 * import { scanWrittenPrefix } from "./written_prefix.ts";
 * const range = new Uint8Array(10);
 * range.set([1, 2, 3]);
 * const hash = createHash("sha256");
 * const scan = scanWrittenPrefix(hash, 4);
 * scan.update(range.subarray(0, 5));
 * scan.update(range.subarray(5));
 * const { prefix, prefixHash } = scan.finish();
 * console.log(prefix); // 3
 * console.log(prefixHash.digest("hex") === createHash("sha256").update(range.subarray(0, 3)).digest("hex")); // true
 * console.log(hash.digest("hex") === createHash("sha256").update(range).digest("hex")); // true
 * ```
 */
export function scanWrittenPrefix<H extends ForkableHash<H>>(
  hash: H,
  blockSize: number,
): WrittenPrefixScan<H> {
  // Written without nested functions and with no outside reference, so that its source text
  // also runs as is in a hashing thread.
  const scan = {
    /** Made when zeros must be hashed (most data never needs it). */
    zeros: undefined as Uint8Array | undefined,
    /** Bytes seen. */
    position: 0,
    /** Where the run of zeros that ends at `position` starts: bytes before it are hashed. */
    runStart: 0,
    prefix: -1,
    prefixHash: undefined as H | undefined,

    hashZeros(count: number): void {
      if (count <= 0) return;
      const zeros = this.zeros ??= new Uint8Array(Math.min(blockSize, 1 << 20));
      while (count > 0) {
        const n = Math.min(count, zeros.length);
        hash.update(zeros.subarray(0, n));
        count -= n;
      }
    },

    fork(): void {
      this.prefix = this.runStart;
      this.prefixHash = hash.copy();
      this.hashZeros(this.position - this.runStart);
      this.runStart = this.position;
    },

    update(bytes: Uint8Array): void {
      let i = 0;
      while (this.prefix < 0 && i < bytes.length) {
        // One block at most: from `position` to the end of its block.
        const blockEnd = (Math.floor(this.position / blockSize) + 1) * blockSize;
        const n = Math.min(bytes.length - i, blockEnd - this.position);
        let last = i + n - 1;
        while (last >= i && bytes[last] === 0) last--;
        if (last >= i) {
          this.hashZeros(this.position - this.runStart);
          hash.update(bytes.subarray(i, last + 1));
          this.runStart = this.position + (last - i) + 1;
        }
        this.position += n;
        i += n;
        if (this.position === blockEnd && this.runStart <= blockEnd - blockSize) this.fork();
      }
      if (i < bytes.length) {
        hash.update(i === 0 ? bytes : bytes.subarray(i));
        this.position += bytes.length - i;
      }
    },

    finish(): { prefix: number; prefixHash: H } {
      if (this.prefix < 0) this.fork();
      return { prefix: this.prefix, prefixHash: this.prefixHash! };
    },
  };
  return scan;
}
