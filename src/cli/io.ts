/**
 * The CLI's standard streams: whole writes, and best-effort writes for progress and notices.
 *
 * @module
 */

const encoder = new TextEncoder();

function writeAll(stream: { writeSync(p: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.byteLength > 0) bytes = bytes.subarray(stream.writeSync(bytes));
}

/**
 * Writes `text` to standard output.
 *
 * @example
 * ```ts
 * import { stdout } from "./io.ts";
 * stdout("done\n");
 * ```
 */
export function stdout(text: string): void {
  writeAll(Deno.stdout, text);
}

/**
 * Writes `text` to standard error.
 *
 * @example
 * ```ts
 * import { stderr } from "./io.ts";
 * stderr("ocipart: a warning\n");
 * ```
 */
export function stderr(text: string): void {
  writeAll(Deno.stderr, text);
}

/**
 * Writes `text` to standard error at best: progress and notices must not fail a command when
 * standard error is closed or broken.
 *
 * @example
 * ```ts
 * import { noticeWrite } from "./io.ts";
 * noticeWrite("50%\r");
 * ```
 */
export function noticeWrite(text: string): void {
  try {
    writeAll(Deno.stderr, text);
  } catch {
    // Nowhere to report it; the exit code still tells.
  }
}

/**
 * The terminal's width in columns, 80 when unknown.
 *
 * @example
 * ```ts
 * import { terminalColumns } from "./io.ts";
 * console.log(terminalColumns() > 0); // true
 * ```
 */
export function terminalColumns(): number {
  try {
    // A pseudo-terminal nobody sized reports 0 columns.
    return Deno.consoleSize().columns || 80;
  } catch {
    return 80;
  }
}
