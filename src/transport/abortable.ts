/**
 * A wait that ends at an abort: the one helper for racing a promise against an `AbortSignal`.
 *
 * @module
 */

/**
 * `promise`, or the signal's reason as soon as it aborts; a value that arrives too late goes to
 * `discard`.
 *
 * @example A wait that ends at the abort
 * ```ts
 * import { abortable } from "./abortable.ts";
 * const controller = new AbortController();
 * const pending = abortable(new Promise(() => {}), controller.signal);
 * controller.abort(new Error("stopped"));
 * console.log(await pending.catch((e) => e.message)); // "stopped"
 * ```
 */
export function abortable<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  discard?: (value: T) => void,
): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.then((v) => discard?.(v), () => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const onAbort = () => {
      done = true;
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then((value) => {
      signal.removeEventListener("abort", onAbort);
      if (done) discard?.(value);
      else resolve(value);
    }, (err) => {
      signal.removeEventListener("abort", onAbort);
      if (!done) reject(err);
    });
  });
}
