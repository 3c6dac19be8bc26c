/**
 * The error of a file that needs more parts than the format allows.
 *
 * @module
 */
import { OciError } from "../errors/oci_error.ts";
import { MAX_PARTS } from "./format.ts";

/**
 * A file would need more than {@linkcode MAX_PARTS} parts at the chosen part size. The message
 * and `minPartSize` name the smallest part size that fits. Terminal, no sentinel.
 *
 * @example Choosing a part size that fits
 * ```ts
 * import { TooManyPartsError } from "@ocipart/ocipart/parted";
 * const err = new TooManyPartsError(8193);
 * console.log(err.minPartSize, err.code); // 8193 "ERR_TOO_MANY_PARTS"
 * ```
 */
export class TooManyPartsError extends OciError {
  /** Stable identifier: `"ERR_TOO_MANY_PARTS"`. */
  override readonly code: string = "ERR_TOO_MANY_PARTS";
  /** The smallest part size, in bytes, at which the file fits in {@linkcode MAX_PARTS} parts. */
  readonly minPartSize: number;
  /** Creates the error naming the smallest part size that fits. */
  constructor(minPartSize: number) {
    super(
      `file needs more than ${MAX_PARTS} parts at this part size; ` +
        `the smallest part size that fits is ${minPartSize} bytes`,
      { retryable: false },
    );
    this.minPartSize = minPartSize;
  }
}
