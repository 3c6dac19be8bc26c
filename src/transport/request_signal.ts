/**
 * The abort signal a request was made with, kept beside the request, for every runtime.
 *
 * A `Request` gets a signal of its own that follows the one it was made with, and a `Request` made
 * from another (`new Request(request, init)`, as each layer of the transport does) follows its
 * source's. On Node 20 that link is weak: once the source request is collected, an abort no
 * longer reaches the copy (nodejs/undici#3644), and a transfer stopped by its caller would run on.
 * So requests are made with {@linkcode requestWith}, which records the caller's own signal, and
 * whatever waits on a request's abort listens to {@linkcode signalOf}.
 *
 * @module
 */

const signals = new WeakMap<Request, AbortSignal>();

/**
 * `new Request(input, init)`, remembering the signal it should follow: `init.signal`, else the
 * signal `input` (a request) was made with.
 *
 * @example A copy that keeps the caller's signal
 * ```ts
 * import { requestWith, signalOf } from "./request_signal.ts";
 * const controller = new AbortController();
 * const first = requestWith("http://127.0.0.1/", { signal: controller.signal });
 * const copy = requestWith(first, { headers: { "x-layer": "1" } });
 * console.log(signalOf(copy) === controller.signal); // true
 * ```
 */
export function requestWith(input: Request | string | URL, init: RequestInit = {}): Request {
  const made = new Request(input, init);
  const signal = init.signal ?? (input instanceof Request ? signalOf(input) : undefined);
  if (signal !== undefined && signal !== null) signals.set(made, signal);
  return made;
}

/**
 * The signal to listen to for `request`'s abort: the one it was made with by
 * {@linkcode requestWith}, else its own.
 *
 * @example
 * ```ts
 * import { signalOf } from "./request_signal.ts";
 * const request = new Request("http://127.0.0.1/");
 * console.log(signalOf(request) === request.signal); // true
 * ```
 */
export function signalOf(request: Request): AbortSignal {
  return signals.get(request) ?? request.signal;
}
