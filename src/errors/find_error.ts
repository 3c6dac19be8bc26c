/**
 * Walks an error's `cause` chain.
 *
 * @module
 */

/**
 * A constructor of an error class, as accepted by {@linkcode findError}.
 *
 * @example Any error class, this package's or not
 * ```ts
 * import { type ErrorClass, findError, NotFoundError } from "@ocipart/ocipart";
 * const classes: ErrorClass<Error>[] = [NotFoundError, TypeError];
 * const err = new Error("pull", { cause: new TypeError("bad") });
 * console.log(classes.map((cls) => findError(err, cls) !== undefined)); // [false, true]
 * ```
 */
// deno-lint-ignore no-explicit-any
export type ErrorClass<T> = abstract new (...args: any[]) => T;

/**
 * Yields `err` and every `cause` below it, stopping on cycles and after 64 links.
 *
 * @example Listing a chain
 * ```ts
 * import { causeChain } from "@ocipart/ocipart/errors";
 * const err = new Error("outer", { cause: new Error("inner") });
 * console.log([...causeChain(err)].length); // 2
 * ```
 */
export function* causeChain(err: unknown): Generator<unknown> {
  const seen = new Set<unknown>();
  let current: unknown = err;
  for (let depth = 0; depth < 64 && current !== undefined && !seen.has(current); depth++) {
    seen.add(current);
    yield current;
    current = current instanceof Error ? current.cause : undefined;
  }
}

/**
 * Finds the first error in the `cause` chain that is an instance of `cls`: the TypeScript
 * counterpart of Go's `errors.As`. Never match on message text.
 *
 * @example Finding a sentinel under wrapping
 * ```ts
 * import { findError, NotFoundError } from "@ocipart/ocipart";
 * const err = new Error("pull failed", { cause: new NotFoundError("GET manifest: status 404") });
 * console.log(findError(err, NotFoundError) !== undefined); // true
 * ```
 */
export function findError<T>(err: unknown, cls: ErrorClass<T>): T | undefined {
  for (const link of causeChain(err)) {
    if (link instanceof cls) return link;
  }
  return undefined;
}

/**
 * Reports whether `err` is an abort: a `DOMException` named `AbortError` or `TimeoutError`
 * anywhere in the chain, as produced by `AbortSignal.abort()` and `AbortSignal.timeout()`.
 *
 * @example
 * ```ts
 * import { isAbortError } from "./find_error.ts";
 * console.log(isAbortError(new DOMException("stop", "AbortError"))); // true
 * ```
 */
export function isAbortError(err: unknown): boolean {
  for (const link of causeChain(err)) {
    if (
      link instanceof DOMException && (link.name === "AbortError" || link.name === "TimeoutError")
    ) {
      return true;
    }
  }
  return false;
}
