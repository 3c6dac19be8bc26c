/**
 * The `--debug` log of the CLI: one line per HTTP exchange, made only of what the transport's
 * exchange record holds (no URL, host, query, header, token or credential).
 *
 * @module
 */
import type { ExchangeRecord } from "../../transport/mod.ts";

/**
 * The debug line of one exchange, e.g.
 * `debug: PUT registry 201 sent=1048576 received=0 12ms`.
 *
 * @example
 * ```ts
 * import { debugLine } from "./debug_log.ts";
 * console.log(debugLine({
 *   method: "GET", site: "storage", status: 200, sentBytes: 0, receivedBytes: 5,
 *   durationMs: 3.2, failed: false,
 * })); // "debug: GET storage 200 sent=0 received=5 3ms"
 * ```
 */
export function debugLine(record: ExchangeRecord): string {
  const status = record.status === 0 ? "no-answer" : String(record.status);
  return `debug: ${record.method} ${record.site} ${status} sent=${record.sentBytes} ` +
    `received=${record.receivedBytes} ${Math.round(record.durationMs)}ms` +
    (record.failed ? " failed" : "");
}
