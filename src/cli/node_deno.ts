/**
 * The part of the `Deno` namespace the CLI calls, for the CLI built for Node (`deno task npm`).
 *
 * The CLI is written against Deno's runtime API. The Node build injects this module's `Deno` in
 * place of the global of that name (esbuild's `inject`), so the CLI's code stays as it is: under
 * Deno the real namespace is used, under Node these few calls map onto `node:` modules. Only
 * what the CLI calls is here; the library never relies on the global (its runtime paths test
 * for the functions they need, and find none of them here).
 *
 * @module
 */
import { readdirSync, writeSync } from "node:fs";
import { readFile, stat as nodeStat } from "node:fs/promises";
import process from "node:process";
import { Readable } from "node:stream";
import { isatty, type ReadStream } from "node:tty";

/** A Node error of this `code` counts as an instance of the class (`err instanceof NotFound`). */
function errorClass(code: string): new () => Error {
  return class extends Error {
    static override [Symbol.hasInstance](value: unknown): boolean {
      return (value as { code?: unknown } | null)?.code === code;
    }
  };
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A standard stream written with blocking whole writes, as Deno's `writeSync` does. */
function writer(fd: number) {
  return {
    writeSync(bytes: Uint8Array): number {
      for (;;) {
        try {
          return writeSync(fd, bytes);
        } catch (err) {
          // A descriptor another program left non-blocking: wait for room rather than drop text.
          if ((err as { code?: unknown }).code !== "EAGAIN") throw err;
          sleepSync(1);
        }
      }
    },
    isTerminal: (): boolean => isatty(fd),
  };
}

/**
 * Standard output as a stream, for `pull <ref> -`: a chunk's write resolves once Node has handed
 * its bytes on, so the pull may reuse the chunk as it does under Deno.
 */
function stdoutWritable(): WritableStream<Uint8Array> {
  // A reader that went away fails the write that met it (EPIPE, which the CLI takes as the end
  // of the output); the same error as an event must not end the process first.
  process.stdout.on("error", () => {});
  return new WritableStream<Uint8Array>({
    write: (chunk) =>
      new Promise<void>((resolve, reject) => {
        process.stdout.write(chunk, (err) => err ? reject(err) : resolve());
      }),
  });
}

let rawInput: ReadStream | undefined;

/** Standard input: its stream, whether it is a terminal, and raw mode (for a hidden prompt). */
const stdin = {
  get readable(): ReadableStream<Uint8Array> {
    return Readable.toWeb(rawInput ?? process.stdin) as ReadableStream<Uint8Array>;
  },
  isTerminal: (): boolean => isatty(0),
  setRaw(mode: boolean): void {
    rawInput ??= process.stdin as ReadStream;
    rawInput.setRawMode(mode);
  },
};

async function stat(path: string) {
  const info = await nodeStat(path);
  return { isFile: info.isFile(), isDirectory: info.isDirectory(), size: info.size };
}

async function* readDir(path: string): AsyncIterable<{ name: string; isFile: boolean }> {
  const entries = readdirSync(path, { withFileTypes: true }); // a missing directory throws
  for (const entry of entries) yield { name: entry.name, isFile: entry.isFile() };
}

/** The terminal's size, when standard error is a terminal (Node keeps that one blocking). */
function consoleSize(): { columns: number; rows: number } {
  if (!isatty(2)) throw new Error("not a terminal");
  return { columns: process.stderr.columns ?? 0, rows: process.stderr.rows ?? 0 };
}

const nodeDeno = {
  args: process.argv.slice(2),
  exit: (code: number): never => process.exit(code),
  stdout: {
    ...writer(1),
    get writable(): WritableStream<Uint8Array> {
      return stdoutWritable();
    },
  },
  stderr: writer(2),
  stdin,
  errors: {
    NotFound: errorClass("ENOENT"),
    BrokenPipe: errorClass("EPIPE"),
  },
  env: { get: (name: string): string | undefined => process.env[name] },
  // Node has no permission model in use here: every read the CLI asks about is allowed.
  permissions: { querySync: (_: unknown) => ({ state: "granted" as const }) },
  consoleSize,
  unrefTimer: (id: unknown): void => (id as { unref?: () => void }).unref?.(),
  addSignalListener: (signal: string, handler: () => void): void => {
    process.on(signal, handler);
  },
  removeSignalListener: (signal: string, handler: () => void): void => {
    process.off(signal, handler);
  },
  stat,
  readDir,
  readTextFile: (path: string): Promise<string> => readFile(path, "utf8"),
};

/** Deno's own namespace under Deno; under Node, the calls above. */
export const Deno: typeof nodeDeno = (globalThis as unknown as { Deno?: typeof nodeDeno }).Deno ??
  nodeDeno;
