/**
 * Reads a password from standard input for `--password-stdin`.
 *
 * @module
 */

/** Refuse absurd input instead of buffering it: passwords and tokens are far smaller. */
const MAX_BYTES = 64 * 1024;

/**
 * Reads standard input to its end and returns it without one trailing line break (`\n` or
 * `\r\n`), as `docker login --password-stdin` does.
 *
 * @throws {Error} When the input is empty or larger than 64 KiB.
 *
 * @example
 * ```ts ignore
 * import { readPasswordFromStdin } from "./read_password.ts";
 * const password = await readPasswordFromStdin(Deno.stdin.readable);
 * ```
 */
export async function readPasswordFromStdin(
  input: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stoppable(input, signal)) {
    size += chunk.byteLength;
    if (size > MAX_BYTES) throw new Error("--password-stdin: input larger than 64 KiB");
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  const password = new TextDecoder().decode(bytes).replace(/\r?\n$/, "");
  if (password === "") throw new Error("--password-stdin: standard input is empty");
  return password;
}

/** The chunks of `input` until `signal` aborts: a pipe whose writer never writes nor closes. */
async function* stoppable(
  input: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  const reader = input.getReader();
  // Not Promise.withResolvers: Node 20 lacks it.
  let reject!: (reason: unknown) => void;
  const stopped = { promise: new Promise<never>((_, rej) => reject = rej) };
  stopped.promise.catch(() => {});
  const stop = () => reject(signal!.reason);
  signal?.addEventListener("abort", stop, { once: true });
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await Promise.race([reader.read(), stopped.promise]);
      if (done) return;
      yield value;
    }
  } finally {
    signal?.removeEventListener("abort", stop);
    // A pending read keeps the lock: cancel it so the process can exit.
    reader.cancel().catch(() => {});
  }
}
