/**
 * Content digests: `<algorithm>:<encoded>` per the OCI image specification.
 *
 * @module
 */

// The OCI digest grammar: algorithm components joined by separators, then an encoded part.
const DIGEST = /^([a-z0-9]+(?:[+._-][a-z0-9]+)*):([a-zA-Z0-9=_-]+)$/;
const SHA256 = /^sha256:[a-f0-9]{64}$/;
const SHA512_ENCODED = /^[a-f0-9]{128}$/;
const SHA256_ENCODED = /^[a-f0-9]{64}$/;

/** The two parts of a digest, as returned by {@linkcode parseDigest}. */
export interface ParsedDigest {
  /** The algorithm, e.g. `"sha256"`. */
  algorithm: string;
  /** The encoded hash, e.g. 64 lowercase hex characters for sha256. */
  encoded: string;
}

/**
 * Reports whether `text` is a sha256 digest: `sha256:` followed by exactly 64 lowercase hex
 * characters. This is the only algorithm both libraries transfer.
 *
 * @example Checking a digest
 * ```ts
 * import { isSha256Digest } from "./digest.ts";
 * console.log(isSha256Digest("sha256:" + "a".repeat(64))); // true
 * console.log(isSha256Digest("sha256:" + "A".repeat(64))); // false
 * ```
 */
export function isSha256Digest(text: string): boolean {
  return SHA256.test(text);
}

/**
 * Splits a digest into algorithm and encoded part, checking the OCI digest grammar and, for
 * the registered algorithms sha256 and sha512, the exact lowercase hex length.
 *
 * @throws {TypeError} The text is not a digest. The message never repeats the text.
 *
 * @example Parsing a digest
 * ```ts
 * import { parseDigest } from "./digest.ts";
 * const { algorithm, encoded } = parseDigest("sha256:" + "0".repeat(64));
 * console.log(algorithm, encoded.length); // "sha256" 64
 * ```
 */
export function parseDigest(text: string): ParsedDigest {
  const match = DIGEST.exec(text);
  if (match === null) throw new TypeError("invalid digest: does not match the digest grammar");
  const [, algorithm, encoded] = match as unknown as [string, string, string];
  if (algorithm === "sha256" && !SHA256_ENCODED.test(encoded)) {
    throw new TypeError("invalid digest: sha256 needs 64 lowercase hex characters");
  }
  if (algorithm === "sha512" && !SHA512_ENCODED.test(encoded)) {
    throw new TypeError("invalid digest: sha512 needs 128 lowercase hex characters");
  }
  return { algorithm, encoded };
}

/**
 * Joins an algorithm and an encoded hash into a digest, checking the result like
 * {@linkcode parseDigest}.
 *
 * @throws {TypeError} The parts do not form a valid digest.
 *
 * @example Formatting a digest
 * ```ts
 * import { formatDigest } from "./digest.ts";
 * console.log(formatDigest("sha256", "0".repeat(64)).length); // 71
 * ```
 */
export function formatDigest(algorithm: string, encoded: string): string {
  const text = `${algorithm}:${encoded}`;
  parseDigest(text);
  return text;
}
