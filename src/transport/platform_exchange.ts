/**
 * One exchange on the runtime's own HTTP client (the download path of `HttpTransport`): the
 * answer's body relayed with mapped errors, and the request's signal wired to it by a listener
 * of our own, so an abort reaches a body in flight however long ago the runtime's request and
 * response objects were collected.
 *
 * @module
 */
import { relayBody } from "./byob_body.ts";
import { withBody } from "./response_body.ts";
import type { PlatformFetch } from "./platform_fetch.ts";
import { connectError, readError } from "./failure.ts";

/**
 * Sends a body-less `request` through `platform` with `headers` (identity encoding forced) and
 * resolves with its answer, whose body errors with the signal's reason when the signal fires.
 *
 * @example
 * ```ts ignore
 * const response = await platformExchange(platform, request, { accept: "*\/*" });
 * ```
 */
export async function platformExchange(
  platform: PlatformFetch,
  request: Request,
  headers: Record<string, string>,
): Promise<Response> {
  const signal = request.signal;
  // Without it the runtime's client would ask for gzip and decode the answer behind our back.
  headers["accept-encoding"] = "identity";
  // The runtime follows our signal with an internal hook that dies with its own request
  // object; an event listener is kept alive by the signal itself and so always fires.
  let body: { cancel(reason?: unknown): Promise<void> } | undefined;
  const onAbort = () => body?.cancel(signal.reason).catch(() => {});
  signal.addEventListener("abort", onAbort, { once: true });
  const done = () => signal.removeEventListener("abort", onAbort);
  let response: Response;
  try {
    response = await platform.fetch(request.url, { method: request.method, headers, signal });
  } catch (err) {
    done();
    if (signal.aborted) throw signal.reason;
    throw connectError(err);
  }
  const source = response.body;
  if (source === null) {
    done();
    return response;
  }
  body = source;
  if (signal.aborted) onAbort();
  const relayed = relayBody(source, {
    // Read failures become the retryable NetworkError (the runtime rejects with TypeError), an
    // abort the signal's reason.
    read: async (next) => {
      try {
        const result = await next();
        // A cancelled read ends as if the body were complete: the abort must not look so.
        if (signal.aborted) throw signal.reason;
        if (result.done) done();
        return result;
      } catch (err) {
        done();
        if (err === signal.reason) throw err;
        throw signal.aborted ? signal.reason : readError(err);
      }
    },
    // Once read, the stream is locked: its reader is what an abort cancels.
    opened: (reader) => {
      body = reader;
    },
    cancel: done,
  });
  return withBody(response, relayed, request.url);
}
