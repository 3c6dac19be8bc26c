/**
 * The CLI's standard streams: whole writes, and best-effort writes for progress and notices.
 *
 * A reader that went away (`ocipart inspect … | head -1`, `push --json | true`) ends nothing:
 * like `git` and `ls`, the CLI stops writing to that stream without a word, and the exit code
 * still says how the command's own work went.
 *
 * @module
 */

const encoder = new TextEncoder();

// Set once a stream's reader has gone: later writes to it are dropped.
let stdoutGone = false;
let stderrGone = false;

/**
 * Standard output could not take the text for another reason than a reader that went away (a
 * full disk behind `> file`): what the user asked for is lost, so the command fails.
 *
 * @example
 * ```ts
 * import { OutputError } from "./io.ts";
 * const err = new OutputError(Object.assign(new Error("full"), { code: "ENOSPC" }));
 * console.log(err.message); // "standard output: write failed"
 * ```
 */
export class OutputError extends Error {
  /** Wraps the write's own error, kept as `cause`. */
  constructor(cause: unknown) {
    super("standard output: write failed", { cause });
    this.name = "OutputError";
  }
}

function isBrokenPipe(err: unknown): boolean {
  return err instanceof Deno.errors.BrokenPipe || (err as { code?: unknown })?.code === "EPIPE";
}

/**
 * Whether `err`, or an error in its cause chain, is the broken pipe of a reader of standard
 * output that went away (`| head -c 8`): it had what it wanted, so the command succeeded.
 *
 * @example
 * ```ts
 * import { readerGone } from "./io.ts";
 * console.log(readerGone(new Error("write", { cause: new Deno.errors.BrokenPipe() }))); // true
 * ```
 */
export function readerGone(err: unknown): boolean {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (isBrokenPipe(e)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function writeAll(stream: { writeSync(p: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.byteLength > 0) bytes = bytes.subarray(stream.writeSync(bytes));
}

/**
 * Pipes `stream` to standard output, which stays open. A stop (`signal`) cancels the stream and
 * ends the wait at once with the signal's reason: a reader that stopped reading leaves a write
 * that never completes, and a pipe waits for its writes before it ends. A reader that went away
 * ({@linkcode readerGone}) cancels the stream too, and the pipe resolves: nothing failed.
 *
 * @example
 * ```ts
 * import { pipeToStdout } from "./io.ts";
 * await pipeToStdout(ReadableStream.from([new TextEncoder().encode("hi\n")]), AbortSignal.timeout(5000));
 * ```
 */
export async function pipeToStdout(
  stream: ReadableStream<Uint8Array>,
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  const piping = stream.pipeTo(Deno.stdout.writable, {
    preventClose: true,
    preventAbort: true,
    signal,
  });
  let onAbort = () => {};
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([piping, stopped]);
  } catch (err) {
    if (signal.aborted || !readerGone(err)) throw err;
  } finally {
    signal.removeEventListener("abort", onAbort);
    piping.catch(() => {});
    stopped.catch(() => {});
  }
}

/**
 * Writes `text` to standard output. Once its reader has gone (a broken pipe) the text, and all
 * later text, is dropped quietly; any other write error (a full disk behind `> file`) throws an
 * {@linkcode OutputError}, because the output a person asked for is lost.
 *
 * @example
 * ```ts
 * import { stdout } from "./io.ts";
 * stdout("done\n");
 * ```
 */
export function stdout(text: string): void {
  if (stdoutGone) return;
  try {
    writeAll(Deno.stdout, text);
  } catch (err) {
    if (!isBrokenPipe(err)) throw new OutputError(err);
    stdoutGone = true;
  }
}

/**
 * Writes `text` to standard error. A standard error that is closed or broken cannot be told
 * about: the text is dropped and the exit code still tells.
 *
 * @example
 * ```ts
 * import { stderr } from "./io.ts";
 * stderr("ocipart: a warning\n");
 * ```
 */
export function stderr(text: string): void {
  if (stderrGone) return;
  try {
    writeAll(Deno.stderr, text);
  } catch (err) {
    // A broken pipe stays broken; another error may be passing (an interrupted write).
    if (isBrokenPipe(err)) stderrGone = true;
  }
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
  stderr(text);
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
