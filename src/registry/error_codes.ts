/**
 * The error codes the distribution spec lists (docs/protocol.md#errors-and-exit-codes): a
 * registry's error body names them (`{"errors":[{"code":"NAME_UNKNOWN",…}]}`), and they are the
 * only words of such a body that may be shown to a person. Anything else a registry sends (other
 * codes, messages, details) is free text from the network and is never rendered.
 *
 * @module
 */
import type { HttpStatusError } from "../errors/kinds.ts";
import { registryErrorCodes } from "./status.ts";

/**
 * The distribution spec's fixed list of error codes, in its order
 * (docs/protocol.md#errors-and-exit-codes).
 *
 * @example Checking a code against the list
 * ```ts
 * import { DISTRIBUTION_ERROR_CODES } from "@ocipart/ocipart/parted";
 * console.log(DISTRIBUTION_ERROR_CODES.includes("NAME_UNKNOWN")); // true
 * ```
 */
export const DISTRIBUTION_ERROR_CODES = [
  "BLOB_UNKNOWN",
  "BLOB_UPLOAD_INVALID",
  "BLOB_UPLOAD_UNKNOWN",
  "DIGEST_INVALID",
  "MANIFEST_BLOB_UNKNOWN",
  "MANIFEST_INVALID",
  "MANIFEST_UNKNOWN",
  "NAME_INVALID",
  "NAME_UNKNOWN",
  "SIZE_INVALID",
  "UNAUTHORIZED",
  "DENIED",
  "UNSUPPORTED",
  "TOOMANYREQUESTS",
] as const;

/**
 * One code of {@linkcode DISTRIBUTION_ERROR_CODES}.
 *
 * @example Matching one code
 * ```ts
 * import { type DistributionErrorCode, distributionErrorCodes } from "@ocipart/ocipart/parted";
 * import { HttpStatusError } from "@ocipart/ocipart/errors";
 * const body = new TextEncoder().encode(JSON.stringify({ errors: [{ code: "DENIED" }] }));
 * const codes: DistributionErrorCode[] = distributionErrorCodes(
 *   new HttpStatusError("GET manifest", { status: 403, body }),
 * );
 * console.log(codes.includes("DENIED")); // true
 * ```
 */
export type DistributionErrorCode = typeof DISTRIBUTION_ERROR_CODES[number];

const KNOWN: ReadonlySet<string> = new Set(DISTRIBUTION_ERROR_CODES);

/**
 * The codes of the error body `err` kept that are on the fixed list
 * (docs/protocol.md#errors-and-exit-codes), exactly as listed, in the body's order and without
 * repeats. A code the list does not hold (however close: other case, extra characters) is left
 * out, so the result is safe to print.
 *
 * @example A known code, a made-up one and one with an escape sequence
 * ```ts
 * import { distributionErrorCodes } from "@ocipart/ocipart/parted";
 * import { HttpStatusError } from "@ocipart/ocipart/errors";
 * const body = new TextEncoder().encode(JSON.stringify({
 *   errors: [{ code: "NAME_UNKNOWN" }, { code: "MADE_UP" }, { code: "DENIED\u001b[2J" }],
 * }));
 * const err = new HttpStatusError("GET manifest", { status: 404, body });
 * console.log(distributionErrorCodes(err)); // [ "NAME_UNKNOWN" ]
 * ```
 */
export function distributionErrorCodes(err: HttpStatusError): DistributionErrorCode[] {
  const codes = registryErrorCodes(err).filter((code) => KNOWN.has(code));
  return [...new Set(codes)] as DistributionErrorCode[];
}
