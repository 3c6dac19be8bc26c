/**
 * The part of the `Deno` namespace the CLI calls, for the CLI built for Node (`deno task npm`).
 *
 * The CLI is written against Deno's runtime API. The Node build injects this module's `Deno` in
 * place of the global of that name (esbuild's `inject`), so the CLI's code stays as it is: under
 * Deno the real namespace is used, under Node these few calls map onto `node:` modules. Only
 * what the CLI calls is here. The library, bundled with it, sees this stand-in too: its paths
 * that need Deno ask whether the runtime is Deno (`src/parted/deno_runtime.ts`), which this is
 * not.
 *
 * @module
 */
import { constants, createReadStream, readdirSync, type Stats, writeSync } from "node:fs";
import {
  type FileHandle,
  lstat as nodeLstat,
  open as nodeOpen,
  readFile,
  rename,
  stat as nodeStat,
  unlink,
} from "node:fs/promises";
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

let stdoutStream: WritableStream<Uint8Array> | undefined;

/**
 * Standard output as a stream, for `pull <ref> -`: a chunk's write resolves once Node has handed
 * its bytes on, so the pull may reuse the chunk as it does under Deno. One stream for the process,
 * as Deno's `stdout.writable` is.
 */
function stdoutWritable(): WritableStream<Uint8Array> {
  if (stdoutStream !== undefined) return stdoutStream;
  // A reader that went away fails the write that met it (EPIPE, which the CLI takes as the end
  // of the output); the same error as an event must not end the process first.
  process.stdout.on("error", () => {});
  return stdoutStream = new WritableStream<Uint8Array>({
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

/** What the CLI reads of a file's status. */
function fileInfo(info: Stats) {
  return {
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    isSymlink: info.isSymbolicLink(),
    size: info.size,
  };
}

async function stat(path: string) {
  return fileInfo(await nodeStat(path));
}

async function lstat(path: string) {
  return fileInfo(await nodeLstat(path));
}

/** Where a seek counts from; the CLI seeks from the start only. */
const SeekMode = { Start: 0, Current: 1, End: 2 } as const;

/** The `Deno.open` options the CLI uses. */
interface OpenOptions {
  read?: boolean;
  write?: boolean;
  create?: boolean;
  createNew?: boolean;
}

function openFlags(options: OpenOptions): number {
  const access = options.write ? (options.read ? constants.O_RDWR : constants.O_WRONLY) : 0;
  const create = options.createNew
    ? constants.O_CREAT | constants.O_EXCL
    : options.create
    ? constants.O_CREAT
    : 0;
  return (access || constants.O_RDONLY) | create;
}

/**
 * A file as the CLI uses `Deno.FsFile`: reads and writes at a position of its own, seeks from the
 * start. Node has no file locks: `tryLock` always succeeds, so two blob pulls into one file at
 * once are not kept apart there as they are under Deno.
 */
class NodeFile {
  readonly #handle: FileHandle;
  #position = 0;

  constructor(handle: FileHandle) {
    this.#handle = handle;
  }

  async read(buffer: Uint8Array): Promise<number | null> {
    const { bytesRead } = await this.#handle.read(buffer, 0, buffer.byteLength, this.#position);
    if (bytesRead === 0 && buffer.byteLength > 0) return null;
    this.#position += bytesRead;
    return bytesRead;
  }

  async write(buffer: Uint8Array): Promise<number> {
    const { bytesWritten } = await this.#handle.write(buffer, 0, buffer.byteLength, this.#position);
    this.#position += bytesWritten;
    return bytesWritten;
  }

  seek(offset: number, whence: number): Promise<number> {
    if (whence !== SeekMode.Start) throw new TypeError("only seeks from the start are supported");
    this.#position = offset;
    return Promise.resolve(offset);
  }

  truncate(length?: number): Promise<void> {
    return this.#handle.truncate(length);
  }

  async stat() {
    return fileInfo(await this.#handle.stat());
  }

  tryLock(_exclusive?: boolean): Promise<boolean> {
    return Promise.resolve(true);
  }

  syncData(): Promise<void> {
    return this.#handle.datasync();
  }

  close(): void {
    this.#handle.close().catch(() => {});
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

async function open(path: string, options: OpenOptions = { read: true }): Promise<NodeFile> {
  return new NodeFile(await nodeOpen(path, openFlags(options), 0o666));
}

/** The one synchronous open the CLI makes: a file's bytes as a stream (a blob push's body). */
function openSync(path: string): { readonly readable: ReadableStream<Uint8Array> } {
  return {
    get readable(): ReadableStream<Uint8Array> {
      return Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
    },
  };
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
    AlreadyExists: errorClass("EEXIST"),
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
  lstat,
  open,
  openSync,
  rename,
  remove: (path: string): Promise<void> => unlink(path),
  SeekMode,
  readDir,
  readTextFile: (path: string): Promise<string> => readFile(path, "utf8"),
};

/** Deno's own namespace under Deno; under Node, the calls above. */
export const Deno: typeof nodeDeno = (globalThis as unknown as { Deno?: typeof nodeDeno }).Deno ??
  nodeDeno;
