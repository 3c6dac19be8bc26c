/**
 * A diagnostics hook of `HttpTransport`: one record per HTTP exchange, made of what is safe to
 * print (method, which side, status, byte counts, duration) and nothing else: no URL, host,
 * query, header or credential.
 *
 * @module
 */
import { relayBody } from "./byob_body.ts";
import { withBody } from "./response_body.ts";

/**
 * One finished HTTP exchange.
 *
 * @example A line per exchange, as `--debug` prints it
 * ```ts
 * import type { ExchangeRecord } from "@ocipart/ocipart/transport";
 * const record: ExchangeRecord = {
 *   method: "GET",
 *   site: "storage",
 *   status: 200,
 *   sentBytes: 0,
 *   receivedBytes: 1024,
 *   durationMs: 12,
 *   failed: false,
 * };
 * console.log(`${record.method} ${record.site} ${record.status} ${record.receivedBytes} B`);
 * ```
 */
export interface ExchangeRecord {
  /** The request method. */
  method: string;
  /**
   * `"registry"` for the registry's own transport, `"mirror"` for a mirror of it, `"storage"`
   * for cross-host requests (redirects, token realms elsewhere).
   */
  site: "registry" | "mirror" | "storage";
  /** The answer's status; 0 when no answer came (connection failure, abort before it). */
  status: number;
  /** Request body bytes declared by the request. */
  sentBytes: number;
  /** Answer body bytes read by the caller. */
  receivedBytes: number;
  /** From the request to the end (or failure) of its answer's body, in milliseconds. */
  durationMs: number;
  /** Whether the exchange ended with an error (or a cancel) instead of a complete answer. */
  failed: boolean;
}

/**
 * Receives each {@linkcode ExchangeRecord}; exceptions it throws are ignored.
 *
 * @example Counting the exchanges of a transport
 * ```ts
 * import { type ExchangeObserver, HttpTransport } from "@ocipart/ocipart/transport";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * let exchanges = 0;
 * const onExchange: ExchangeObserver = () => exchanges++;
 * const transport = new HttpTransport({ onExchange });
 * const response = await transport.fetch(new Request(`${registry.url}/v2/`));
 * await response.body?.cancel();
 * transport.close();
 * console.log(exchanges); // 1
 * ```
 */
export type ExchangeObserver = (record: ExchangeRecord) => void;

/**
 * Sends `request` with `send` and reports the exchange to `observer` once its answer's body
 * has been read to the end, failed or been cancelled (at once for a body-less answer).
 *
 * @example
 * ```ts
 * import { observeExchange } from "./exchange_observer.ts";
 * const response = await observeExchange(
 *   new Request("http://registry.example/v2/"),
 *   "registry",
 *   async () => new Response("{}"),
 *   (record) => console.log(record.method, record.status, record.receivedBytes), // GET 200 2
 * );
 * await response.text();
 * ```
 */
export async function observeExchange(
  request: Request,
  site: "registry" | "mirror" | "storage",
  send: () => Promise<Response>,
  observer: ExchangeObserver,
): Promise<Response> {
  const started = performance.now();
  const sentBytes = Number(request.headers.get("content-length") ?? 0) || 0;
  let reported = false;
  const report = (status: number, receivedBytes: number, failed: boolean) => {
    if (reported) return;
    reported = true;
    try {
      observer({
        method: request.method,
        site,
        status,
        sentBytes,
        receivedBytes,
        durationMs: performance.now() - started,
        failed,
      });
    } catch { /* a diagnostics hook never changes the exchange */ }
  };
  let response: Response;
  try {
    response = await send();
  } catch (err) {
    report(0, 0, true);
    throw err;
  }
  const source = response.body;
  if (source === null) {
    report(response.status, 0, false);
    return response;
  }
  let received = 0;
  const body = relayBody(source, {
    read: async (next) => {
      try {
        const result = await next();
        if (result.done) report(response.status, received, false);
        else received += result.value.byteLength;
        return result;
      } catch (err) {
        report(response.status, received, true);
        throw err;
      }
    },
    // A body set aside unread (the answer to an upload, say) is no failure; one cancelled for
    // a reason (an abort, an error further on) is.
    cancel: (reason) => report(response.status, received, reason !== undefined),
  });
  return withBody(response, body);
}
