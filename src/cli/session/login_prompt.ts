/**
 * `ocipart login` on a terminal without `--password-stdin`: asks for the user name when it was
 * not given, then for the password with the terminal's echo off, as `docker login` does.
 *
 * @module
 */

/** The terminal: its input bytes, raw mode (no echo, no line editing), and the prompt's output. */
export interface PromptTerminal {
  /** Standard input, read from the first prompt to the last. */
  readonly input: ReadableStream<Uint8Array>;
  /** Turns the terminal's raw mode (echo off) on or off. */
  setRaw(raw: boolean): void;
  /** Writes a prompt (on standard error: standard output stays for the result). */
  write(text: string): void;
}

/** Ctrl-C or Ctrl-D at a prompt: the login stops with nothing saved. */
export class PromptCancelledError extends Error {
  /** `key` names what was typed ("Ctrl-C", "Ctrl-D"). */
  constructor(readonly key: string) {
    super(`login cancelled at the prompt (${key})`);
    this.name = "PromptCancelledError";
  }
}

const CR = 0x0d, LF = 0x0a, BACKSPACE = 0x08, DEL = 0x7f, ETX = 0x03, EOT = 0x04;
/** Longer than any password or token; a stuck key must not grow a buffer forever. */
const MAX_BYTES = 64 * 1024;

/** The input's bytes one at a time, across the chunks the terminal delivers. */
class Keys {
  #chunk: Uint8Array = new Uint8Array(0);
  #at = 0;
  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  /** The next byte, or undefined at the end of the input. */
  async next(): Promise<number | undefined> {
    while (this.#at >= this.#chunk.byteLength) {
      const { value, done } = await this.reader.read();
      if (done) return undefined;
      [this.#chunk, this.#at] = [value, 0];
    }
    return this.#chunk[this.#at++];
  }
}

/**
 * Reads up to Enter. `hidden`: typed in raw mode, so Backspace removes the last character here,
 * and Ctrl-C or Ctrl-D (on an empty line) cancel; otherwise the terminal echoed and edited the
 * line itself (cooked mode), and the end of the input cancels.
 */
async function readLine(keys: Keys, hidden: boolean): Promise<string> {
  const bytes: number[] = [];
  for (;;) {
    const byte = await keys.next();
    if (byte === undefined) throw new PromptCancelledError("Ctrl-D");
    if (byte === LF || (hidden && byte === CR)) break;
    if (hidden && byte === ETX) throw new PromptCancelledError("Ctrl-C");
    if (hidden && byte === EOT && bytes.length === 0) throw new PromptCancelledError("Ctrl-D");
    if (hidden && (byte === DEL || byte === BACKSPACE)) {
      // One character: its UTF-8 continuation bytes (10xxxxxx), then its first byte.
      while (bytes.length > 0 && (bytes[bytes.length - 1] & 0xc0) === 0x80) bytes.pop();
      bytes.pop();
    } else if (bytes.length < MAX_BYTES) bytes.push(byte);
  }
  return new TextDecoder().decode(new Uint8Array(bytes)).replace(/\r$/, "");
}

/**
 * Asks for the user name (unless `username` is given) and the password, echo off. The terminal
 * leaves raw mode whatever happens.
 *
 * @throws {PromptCancelledError} On Ctrl-C, or Ctrl-D on an empty line.
 * @throws {Error} When the user name or the password is empty.
 *
 * @example
 * ```ts
 * import { promptLogin } from "./login_prompt.ts";
 * const typed = new TextEncoder().encode("alice\ns3cret\r");
 * const terminal = {
 *   input: new Blob([typed]).stream(),
 *   setRaw: (_: boolean) => {},
 *   write: (_: string) => {},
 * };
 * console.log(await promptLogin(undefined, terminal)); // { username: "alice", password: "s3cret" }
 * ```
 */
export async function promptLogin(
  username: string | undefined,
  terminal: PromptTerminal,
): Promise<{ username: string; password: string }> {
  const reader = terminal.input.getReader();
  const keys = new Keys(reader);
  try {
    if (username === undefined) {
      terminal.write("Username: ");
      username = (await readLine(keys, false)).trim();
      if (username === "") throw new Error("login: no user name was typed");
    }
    // Echo off before the prompt shows: nothing typed once it is there reaches the screen.
    terminal.setRaw(true);
    let password: string;
    try {
      terminal.write("Password: ");
      password = await readLine(keys, true);
    } finally {
      terminal.setRaw(false);
      terminal.write("\n"); // Enter was not echoed
    }
    if (password === "") throw new Error("login: no password was typed");
    return { username, password };
  } finally {
    reader.releaseLock();
  }
}
