/**
 * Helpers of the hosted-registry tests: the limits hosted registries set, scaled down to
 * seconds and kilobytes in front of the real Distribution, and the rerun a failure suggests.
 *
 * @module
 */
import { findError } from "../../src/errors/find_error.ts";
import { PartSizeError } from "../../src/parted/part_size_error.ts";
import { assert } from "../fixtures/assert.ts";
import type { FaultResponse } from "../fixtures/fault_rules.ts";
import { hintLines } from "../cli/_cli.ts";

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** Part PUTs: the request that carries a part's body. */
export const PART_PUT = { method: "PUT", path: /\/blobs\/uploads\/[^/]+$/ } as const;

/** Manifest PUTs. */
export const MANIFEST_PUT = { method: "PUT", path: /\/manifests\/[^/]+$/ } as const;

/** A short retry budget for library tests (the CLI keeps its default). */
export const FAST_RETRY = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 200 };

/** True for 1, 2, 4, 8, … */
export function isPowerOfTwo(n: number): boolean {
  return Number.isSafeInteger(n) && n > 0 && Number.isInteger(Math.log2(n));
}

/** The `PartSizeError` of a failure, asserted present. */
export function partSizeError(err: unknown): PartSizeError {
  const found = findError(err, PartSizeError);
  assert(found !== undefined, `no PartSizeError in ${err}`);
  return found;
}

/**
 * A registry's answer to a manifest with more than `max` layers, as `inspectBody` of a fault
 * rule: `status` with a registry error `code`; other manifests go through.
 */
export function refuseLayersOver(
  max: number,
  status: number,
  code: string,
): (body: Uint8Array) => FaultResponse | undefined {
  return (body) => {
    const layers = (JSON.parse(new TextDecoder().decode(body)) as { layers?: unknown[] }).layers;
    if ((layers?.length ?? 0) <= max) return undefined;
    return {
      status,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        errors: [{ code, message: "manifest invalid", detail: `more than ${max} layers` }],
      }),
    };
  };
}

/**
 * The command the CLI's hint says to run, split into its words (single-quoted words
 * unquoted): `["ocipart", "push", …]`.
 */
export function rerunWords(stderr: string): string[] {
  const command = hintLines(stderr).find((line) => line.startsWith("  "));
  assert(command !== undefined, `no command in the hint:\n${stderr}`);
  const words: string[] = [];
  for (const match of command.trim().matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)) {
    words.push(match[1] !== undefined ? match[1].replaceAll(`'\\''`, "'") : match[2]);
  }
  return words;
}
