/**
 * Recognises a TLS server's answer to a plain-HTTP request: Go servers (Distribution) and nginx
 * answer it with a 400 whose body says so. Such an answer becomes a terminal error with a hint
 * instead of a bare "status 400".
 *
 * @module
 */
import { ExchangeError, OPERATION } from "./failure.ts";
import { withBody } from "./response_body.ts";

// The bodies servers send when a plain-HTTP request reaches a TLS port.
const TLS_PORT_BODY =
  /client sent an HTTP request to an HTTPS server|plain HTTP request was sent to HTTPS port/i;
const PEEK_LIMIT = 4096;

/**
 * `response` unchanged, unless it is a 400 to a plain-HTTP request whose body says the port
 * speaks TLS, or a bodyless 400 (a HEAD's) without a single header, as Go sends it: then rejects
 * with a terminal `ExchangeError` (reason `TLS_SERVER`). Only such 400s are read ahead (their
 * first chunk, put back in front of the body).
 *
 * @example
 * ```ts
 * import { checkTlsPortAnswer } from "./tls_port_answer.ts";
 * const ok = await checkTlsPortAnswer(new URL("http://r.example/v2/"), new Response("{}"));
 * console.log(ok.status); // 200
 * ```
 */
export async function checkTlsPortAnswer(url: URL, response: Response): Promise<Response> {
  if (url.protocol !== "http:" || response.status !== 400) return response;
  if (response.body === null) {
    // A HEAD's answer has no body to read. Go writes its TLS-port answer as raw bytes, with no
    // header at all, which no HTTP server's own 400 lacks (they carry Date or Content-Length).
    if (isEmpty(response.headers)) throw new ExchangeError(OPERATION, "", undefined, "TLS_SERVER");
    return response;
  }
  const reader = response.body.getReader();
  const first = await reader.read().catch(() => ({ done: true as const, value: undefined }));
  const head = first.value?.subarray(0, PEEK_LIMIT);
  if (head !== undefined && TLS_PORT_BODY.test(new TextDecoder().decode(head))) {
    reader.cancel().catch(() => {});
    throw new ExchangeError(OPERATION, "", undefined, "TLS_SERVER");
  }
  const rest = new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.value !== undefined) controller.enqueue(first.value);
      if (first.done) controller.close();
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return withBody(response, rest);
}

function isEmpty(headers: Headers): boolean {
  for (const _ of headers) return false;
  return true;
}
