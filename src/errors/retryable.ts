/**
 * Retry classification of errors, reachable after wrapping and after the budget ran out.
 *
 * @module
 */
import { causeChain, isAbortError } from "./find_error.ts";
import { OciError } from "./oci_error.ts";

/**
 * What {@linkcode retryable} tells about an error.
 *
 * @example Waiting as long as the server asked before trying again
 * ```ts
 * import { type RetryClassification, retryable } from "@ocipart/ocipart";
 * import { HttpStatusError } from "@ocipart/ocipart/errors";
 * const options = { status: 429, retryable: true, retryAfterMs: 1500 };
 * const verdict: RetryClassification = retryable(new HttpStatusError("GET blob", options));
 * if (verdict.retryable) console.log(`retry in ${verdict.retryAfterMs ?? 1000} ms`); // 1500
 * ```
 */
export interface RetryClassification {
  /** True when repeating the work may succeed. */
  retryable: boolean;
  /** The usable Retry-After floor in milliseconds, if a server asked for one. */
  retryAfterMs: number | undefined;
}

/**
 * Classifies an error for retry. The first error in the chain that classifies itself decides;
 * an abort is never retryable; an error that no layer classified is terminal. The Retry-After
 * floor is the first one found in the chain.
 *
 * @example After the budget ran out
 * ```ts
 * import { retryable } from "@ocipart/ocipart";
 * import { HttpStatusError, RetriesExhaustedError } from "@ocipart/ocipart/errors";
 * const last = new HttpStatusError("GET blob", { status: 429, retryable: true, retryAfterMs: 2000 });
 * const err = new RetriesExhaustedError("GET blob", 4, { cause: last });
 * console.log(retryable(err)); // { retryable: true, retryAfterMs: 2000 }
 * ```
 */
export function retryable(err: unknown): RetryClassification {
  let decided: boolean | undefined;
  let retryAfterMs: number | undefined;
  if (isAbortError(err)) return { retryable: false, retryAfterMs: undefined };
  for (const link of causeChain(err)) {
    if (!(link instanceof OciError)) continue;
    if (decided === undefined && link.retryable !== undefined) decided = link.retryable;
    if (retryAfterMs === undefined && link.retryAfterMs !== undefined) {
      retryAfterMs = link.retryAfterMs;
    }
  }
  return { retryable: decided ?? false, retryAfterMs };
}

/**
 * The retry classification of an HTTP status (docs/protocol.md#retries): 429 and 5xx are worth
 * another attempt; every other 4xx is terminal, except 401, 403, 404 and 410 from an off-origin
 * storage or redirect target (an expired signature: a fresh session may choose a new location).
 *
 * @example
 * ```ts
 * import { isRetryableStatus } from "./retryable.ts";
 * console.log(isRetryableStatus(503), isRetryableStatus(404), isRetryableStatus(404, true));
 * // true false true
 * ```
 */
export function isRetryableStatus(status: number, offOrigin = false): boolean {
  if (status === 429 || (status >= 500 && status <= 599)) return true;
  if (offOrigin && (status === 401 || status === 403 || status === 404 || status === 410)) {
    return true;
  }
  return false;
}
