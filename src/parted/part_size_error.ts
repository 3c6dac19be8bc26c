/**
 * The error of a push that ran into a registry's limit on parts of its size, naming a part
 * size that fits.
 *
 * @module
 */
import { OciError, type OciErrorOptions } from "../errors/oci_error.ts";
import { wholeBinaryUnit } from "../registry/bytes.ts";
import { MAX_PARTS } from "./format.ts";

/**
 * Which limit a part size ran into:
 * - `"request-time"`: every upload of a part was cut after about the same time (a registry or
 *   a proxy in front of it limits how long one request may take);
 * - `"body-size"`: the registry answered 413 to a part (it refuses request bodies that large);
 * - `"layer-count"`: the registry refused the manifest of a push with many parts (it limits
 *   the layers of a manifest);
 * - `"token-lifetime"`: the registry (or a proxy that reads whole bodies before passing them on)
 *   checks the token once a part has arrived, and refused a token that was fresh when the part
 *   started: parts must arrive within a token's lifetime.
 *
 * @example Telling the limits apart
 * ```ts
 * import type { PartSizeLimit } from "@ocipart/ocipart/parted";
 * const direction = (limit: PartSizeLimit) => limit === "layer-count" ? "larger" : "smaller";
 * console.log(direction("body-size")); // "smaller"
 * ```
 */
export type PartSizeLimit = "request-time" | "body-size" | "layer-count" | "token-lifetime";

/**
 * What a push measured about the limit; every size and count is the push's own.
 *
 * @example The facts of a registry that refused a 512 MiB part
 * ```ts
 * import type { PartSizeFacts } from "@ocipart/ocipart/parted";
 * const facts: PartSizeFacts = {
 *   limit: "body-size",
 *   partSize: 512 * 1024 * 1024,
 *   refusedBytes: 512 * 1024 * 1024,
 *   suggestedPartSize: 256 * 1024 * 1024,
 * };
 * console.log(facts.suggestedPartSize! / 1024 / 1024); // 256
 * ```
 */
export interface PartSizeFacts {
  /** The limit the push ran into. */
  readonly limit: PartSizeLimit;
  /** The part size of the push, in bytes. */
  readonly partSize: number;
  /**
   * A part size (bytes) that fits the limit, or `undefined` when no size the format allows
   * does (more than {@linkcode MAX_PARTS} parts would be needed).
   */
  readonly suggestedPartSize: number | undefined;
  /** `"body-size"`: the size of the request body the registry refused, in bytes. */
  readonly refusedBytes?: number;
  /** `"request-time"`: how long each attempt ran before it was cut (the median), in ms. */
  readonly cutAfterMs?: number;
  /** `"request-time"`, `"token-lifetime"`: the speed of one upload, bytes per second. */
  readonly bytesPerSecond?: number;
  /** `"request-time"`, `"token-lifetime"`: how many attempts failed that way. */
  readonly attempts?: number;
  /** `"token-lifetime"`: the tokens' stated lifetime, in ms, when the registry states one. */
  readonly tokenLifetimeMs?: number;
  /** `"token-lifetime"`: how long the refused part took to arrive, in ms. */
  readonly uploadMs?: number;
  /** `"layer-count"`: the number of parts in the refused manifest. */
  readonly partCount?: number;
}

/**
 * A push ran into a registry limit that depends on the part size; the same part size would
 * fail again. `suggestedPartSize` names a size that fits (see {@linkcode PartSizeFacts}). A new
 * part size makes a new artifact: no part uploaded at the old size is reused. Terminal. On a
 * 413 the chain also carries `PartTooLargeError` (or `TooLargeError` for the manifest).
 *
 * @example Pushing again with the suggested part size
 * ```ts
 * import { findError } from "@ocipart/ocipart";
 * import { PartSizeError } from "@ocipart/ocipart/parted";
 * const err: unknown = new PartSizeError("part 3: upload", {
 *   limit: "request-time",
 *   partSize: 512 * 1024 * 1024,
 *   suggestedPartSize: 64 * 1024 * 1024,
 *   cutAfterMs: 10_000,
 *   bytesPerSecond: 20 * 1024 * 1024,
 *   attempts: 4,
 * });
 * const limit = findError(err, PartSizeError);
 * if (limit?.suggestedPartSize !== undefined) {
 *   console.log(limit.code, limit.suggestedPartSize); // "ERR_PART_SIZE" 67108864
 * }
 * ```
 */
export class PartSizeError extends OciError {
  /** Stable identifier: `"ERR_PART_SIZE"`. */
  override readonly code: string = "ERR_PART_SIZE";
  /** Which limit the push ran into. */
  readonly limit: PartSizeLimit;
  /** The part size of the push, in bytes. */
  readonly partSize: number;
  /** A part size that fits, in bytes, or `undefined` when none the format allows does. */
  readonly suggestedPartSize: number | undefined;
  /** Everything the push measured about the limit. */
  readonly facts: PartSizeFacts;

  /** Creates the error for `operation` (a fixed name, e.g. `"PUT manifest: status 405"`). */
  constructor(operation: string, facts: PartSizeFacts, options: OciErrorOptions = {}) {
    super(`${operation}: ${explain(facts)}`, { ...options, retryable: false });
    this.limit = facts.limit;
    this.partSize = facts.partSize;
    this.suggestedPartSize = facts.suggestedPartSize;
    this.facts = Object.freeze({ ...facts });
  }
}

const NEW_ARTIFACT = "a new part size is a new artifact: every part is uploaded again";

function explain(facts: PartSizeFacts): string {
  const suggested = facts.suggestedPartSize;
  switch (facts.limit) {
    case "request-time": {
      const what = `each of ${facts.attempts ?? 0} attempts was cut after about ` +
        `${describeDuration(facts.cutAfterMs ?? 0)} at ${describeRate(facts.bytesPerSecond ?? 0)}` +
        ": the registry or a proxy in front of it limits how long a request may take";
      return suggested === undefined
        ? `${what}; at that speed no part size fits within ${MAX_PARTS} parts`
        : `${what}; parts of ${describeBytes(suggested)} fit (${NEW_ARTIFACT})`;
    }
    case "body-size": {
      const what = `the registry refuses a request body of ` +
        describeBytes(facts.refusedBytes ?? facts.partSize);
      return suggested === undefined
        ? `${what}; smaller parts would need more than ${MAX_PARTS} parts`
        : `${what} and states no limit; try parts of ${describeBytes(suggested)}, a guess at ` +
          `half that or less (${NEW_ARTIFACT})`;
    }
    case "token-lifetime": {
      const lifetime = facts.tokenLifetimeMs === undefined
        ? ""
        : `tokens live ${describeDuration(facts.tokenLifetimeMs)} and `;
      const what = `the registry refused the token once the whole part had arrived, on ` +
        `${facts.attempts ?? 0} attempts in a row: ${lifetime}a part took ` +
        `${describeDuration(facts.uploadMs ?? 0)} at ${describeRate(facts.bytesPerSecond ?? 0)}`;
      return suggested === undefined
        ? `${what}; at that speed no part size fits within ${MAX_PARTS} parts`
        : `${what}; parts of ${describeBytes(suggested)} arrive within a token's life ` +
          `(${NEW_ARTIFACT})`;
    }
    case "layer-count":
      return `the registry refused a manifest of ${facts.partCount ?? 0} parts; if it limits ` +
        `the layers of a manifest, parts of ${describeBytes(suggested ?? 0)} halve the count ` +
        `(${NEW_ARTIFACT})`;
  }
}

/** `512 MiB` when the size is a whole number of a binary unit, else `<n> bytes`. */
function describeBytes(bytes: number): string {
  const whole = wholeBinaryUnit(bytes);
  return whole === undefined ? `${bytes} bytes` : `${whole.value} ${whole.unit}`;
}

const RATE_UNITS = ["KiB", "MiB", "GiB", "TiB"];

/** `2.5 MiB/s`: one decimal in the largest binary unit below the rate. */
function describeRate(bytesPerSecond: number): string {
  let unit = 0;
  let value = bytesPerSecond / 1024;
  while (unit < RATE_UNITS.length - 1 && value >= 1024) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${RATE_UNITS[unit]}/s`;
}

/** `2.5 s`, `45 s`, `10 min`. */
function describeDuration(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 120) return `${Math.round(seconds)} s`;
  return `${Number((seconds / 60).toFixed(1))} min`;
}
