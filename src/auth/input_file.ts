/**
 * The one way a configuration input is read from disk (the docker configuration, a CA file, a
 * registries configuration): a regular file only, at most {@linkcode INPUT_FILE_LIMIT} bytes, and
 * stopped by the caller's signal between reads. A named pipe or a device would block the open or
 * never end; neither can hold a configuration.
 *
 * @module
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { concatBytes } from "../registry/bytes.ts";

/** The largest input file read: far above any real configuration or CA bundle (4 MiB). */
export const INPUT_FILE_LIMIT: number = 4 * 1024 * 1024;

const READ_BYTES = 64 * 1024;

/**
 * What makes a file unusable as an input before any of it is read.
 *
 * @example Why a file was refused
 * ```ts
 * import { InputFileError, type InputFileProblem } from "@ocipart/ocipart/auth";
 * const problem: InputFileProblem = "too large";
 * console.log(new InputFileError(problem, "the limit is 4 MiB").problem); // "too large"
 * ```
 */
export type InputFileProblem = "not a regular file" | "too large";

/**
 * An input file that is not a regular file, or larger than the limit. The message says which
 * (the kind of file, or the limit) and never the path.
 *
 * @example Telling a named pipe apart
 * ```ts
 * import { InputFileError } from "@ocipart/ocipart/auth";
 * const err = new InputFileError("not a regular file", "a named pipe (FIFO)");
 * console.log(err.message); // "not a regular file but a named pipe (FIFO)"
 * ```
 */
export class InputFileError extends Error {
  /** Which rule the file broke. */
  readonly problem: InputFileProblem;

  /** `detail` says what the file is, or the limit it passed. */
  constructor(problem: InputFileProblem, detail: string) {
    super(problem === "not a regular file" ? `${problem} but ${detail}` : `${problem}: ${detail}`);
    this.name = "InputFileError";
    this.problem = problem;
  }
}

/**
 * Reads the regular file at `path` as UTF-8 text. The open never waits for a writer (a named
 * pipe is opened non-blocking, then refused); the size is checked before reading and again while
 * reading (a file that grows); `signal` stops the read between two reads.
 *
 * @throws {InputFileError} The file is not a regular file (a directory fails as the system says,
 * `EISDIR`), or holds more than `limit` bytes.
 * @throws The system's error when the file cannot be opened or read (its `code`, e.g. `ENOENT`),
 * or the signal's reason.
 *
 * @example Reading a configuration file
 * ```ts
 * import { readInputFile } from "@ocipart/ocipart/auth";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/config.json`, "{}");
 * console.log(await readInputFile(`${dir}/config.json`)); // "{}"
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readInputFile(
  path: string,
  options: { signal?: AbortSignal | undefined; limit?: number } = {},
): Promise<string> {
  const { signal, limit = INPUT_FILE_LIMIT } = options;
  signal?.throwIfAborted();
  // O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer, unstoppably.
  const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const info = await handle.stat();
    if (!info.isFile() && !info.isDirectory()) {
      throw new InputFileError("not a regular file", kindOf(info));
    }
    if (info.size > limit) throw new InputFileError("too large", `more than ${limit} bytes`);
    return new TextDecoder().decode(await readAtMost(handle, limit, signal));
  } finally {
    await handle.close();
  }
}

/** The bytes of `handle` up to `limit`; one byte more is refused. */
async function readAtMost(
  handle: FileHandle,
  limit: number,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    signal?.throwIfAborted();
    const piece = new Uint8Array(READ_BYTES);
    const { bytesRead } = await handle.read(piece, 0, READ_BYTES, null);
    if (bytesRead === 0) return concatBytes(pieces, length);
    pieces.push(piece.subarray(0, bytesRead));
    length += bytesRead;
    if (length > limit) throw new InputFileError("too large", `more than ${limit} bytes`);
  }
}

function kindOf(info: { isFIFO(): boolean; isCharacterDevice(): boolean; isSocket(): boolean }) {
  if (info.isFIFO()) return "a named pipe (FIFO)";
  if (info.isCharacterDevice()) return "a character device";
  if (info.isSocket()) return "a socket";
  return "a device";
}
