/**
 * Re-export of the Retry-After parser, which lives with the other header parsers in the
 * registry layer.
 *
 * @module
 */
export { parseRetryAfter } from "../registry/retry_after.ts";
