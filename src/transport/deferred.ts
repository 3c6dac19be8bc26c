/**
 * A promise with its resolve and reject functions at hand, on every runtime the package supports:
 * `Promise.withResolvers` is missing from Node 20.
 *
 * @module
 */

/** A promise and the functions that settle it. */
export interface Deferred<T> {
  /** Settles once `resolve` or `reject` is called. */
  promise: Promise<T>;
  /** Fulfils the promise. */
  resolve: (value: T) => void;
  /** Rejects the promise. */
  reject: (reason?: unknown) => void;
}

/**
 * A new pending promise and the functions that settle it.
 *
 * @example Settling a promise from elsewhere
 * ```ts
 * import { deferred } from "./deferred.ts";
 * const ready = deferred<string>();
 * setTimeout(() => ready.resolve("done"), 1);
 * console.log(await ready.promise); // "done"
 * ```
 */
export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason?: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
