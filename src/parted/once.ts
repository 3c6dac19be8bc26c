/**
 * A function that acts on its first call only: a release or close that several paths may call.
 *
 * @module
 */

/**
 * `action` on the first call only.
 *
 * @example
 * ```ts
 * import { once } from "./once.ts";
 * let calls = 0;
 * const close = once(() => calls++);
 * close();
 * close();
 * console.log(calls); // 1
 * ```
 */
export function once(action: () => void): () => void {
  let done = false;
  return () => {
    if (!done) action();
    done = true;
  };
}
