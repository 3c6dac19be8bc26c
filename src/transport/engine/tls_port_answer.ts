/**
 * Recognises a TLS server's answer to a plain-HTTP request: Go servers (Distribution) and nginx
 * answer it with a 400 whose body says so. Such an answer becomes a terminal error with a hint
 * instead of a bare "status 400".
 *
 * @module
 */
import { ExchangeError, OPERATION } from "../failure.ts";
import { withBody } from "../response_body.ts";
import { requestWith, signalOf } from "../request_signal.ts";

// The bodies servers send when a plain-HTTP request reaches a TLS port.
const TLS_PORT_BODY =
  /client sent an HTTP request to an HTTPS server|plain HTTP request was sent to HTTPS port/i;
const PEEK_LIMIT = 4096;

/**
 * `response` unchanged, unless it is a 400 to a plain-HTTP request whose body says the port
 * speaks TLS: then rejects with a terminal `ExchangeError` (reason `TLS_SERVER`). Only such
 * 400s are read ahead (their first chunk, put back in front of the body). A HEAD answer has no
 * body to read: one without a single header is Go's raw TLS-port answer and decides at once;
 * another 400 to a plain-HTTP HEAD is asked again once with a bare GET of the same URL through
 * `send` (no header of the request is repeated), whose body decides.
 *
 * @example
 * ```ts
 * import { checkTlsPortAnswer } from "./tls_port_answer.ts";
 * const request = new Request("http://r.example/v2/");
 * const ok = await checkTlsPortAnswer(request, new Response("{}"), fetch);
 * console.log(ok.status); // 200
 * ```
 */
export async function checkTlsPortAnswer(
  request: Request,
  response: Response,
  send: (request: Request) => Promise<Response>,
): Promise<Response> {
  if (new URL(request.url).protocol !== "http:" || response.status !== 400) return response;
  if (response.body === null) {
    // Go writes its TLS-port answer as raw bytes, with no header at all, which no HTTP
    // server's own 400 lacks (they carry Date or Content-Length).
    if (isEmpty(response.headers)) throw new ExchangeError(OPERATION, "", undefined, "TLS_SERVER");
    if (request.method === "HEAD" && await headAnsweredByTls(request, send)) {
      throw new ExchangeError(OPERATION, "", undefined, "TLS_SERVER");
    }
    return response;
  }
  const reader = response.body.getReader();
  const first = await reader.read().catch(() => ({ done: true as const, value: undefined }));
  if (saysTls(first.value)) {
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

async function headAnsweredByTls(
  request: Request,
  send: (request: Request) => Promise<Response>,
): Promise<boolean> {
  const probe = requestWith(request.url, {
    headers: { "accept-encoding": "identity" },
    signal: signalOf(request),
  });
  try {
    const answer = await send(probe);
    const reader = answer.body?.getReader();
    const first = await reader?.read();
    reader?.cancel().catch(() => {});
    return answer.status === 400 && saysTls(first?.value);
  } catch {
    // No answer to the probe: the HEAD's 400 stands as it is.
    return false;
  }
}

function saysTls(chunk: Uint8Array | undefined): boolean {
  const head = chunk?.subarray(0, PEEK_LIMIT);
  return head !== undefined && TLS_PORT_BODY.test(new TextDecoder().decode(head));
}

function isEmpty(headers: Headers): boolean {
  for (const _ of headers) return false;
  return true;
}
