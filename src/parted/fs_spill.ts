/**
 * Temporary part files: the spill directory of a pull to a stream, the part files of a push
 * from a stream, and the files of a part cache directory. Each file holds one part at offset 0.
 *
 * @module
 */
import { rmSync } from "node:fs";
import { mkdtemp, open, rename, rm } from "node:fs/promises";
import process from "node:process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalFileError } from "../errors/kinds.ts";
import { osReason } from "./fs_reason.ts";
import { denoRuntime } from "./deno_runtime.ts";
import { writeAllAt } from "./fs_writes.ts";

/** Bytes of one read when a part file is streamed out. */
const READ_BYTES = 1 << 20;

/**
 * A directory of this process's own under the system's temporary directory (or `parent`),
 * removed with everything in it by {@linkcode SpillDirectory.remove}.
 *
 * @example A part spilled to disk and read back
 * ```ts
 * import { SpillDirectory } from "./fs_spill.ts";
 * const dir = await SpillDirectory.create();
 * const file = await dir.file("part-0");
 * await file.writeAt(new TextEncoder().encode("abc"), 0);
 * const chunks = [];
 * for await (const chunk of file.chunks(0, 3)) chunks.push(...chunk);
 * await file.close();
 * await dir.remove();
 * console.log(chunks.length); // 3
 * ```
 */
export class SpillDirectory {
  readonly path: string;
  /** Stops the removal at the process's exit, once the directory is removed. */
  readonly #forget: () => void;

  private constructor(path: string) {
    this.path = path;
    // A process that exits while the directory is in use (a second Ctrl-C: "quit now") would
    // leave up to `workers × part size` bytes behind.
    this.#forget = removedAtExit(path);
  }

  /** Creates a fresh directory `ocipart-…` in `parent` (default: the system's temporary one). */
  static async create(parent?: string): Promise<SpillDirectory> {
    try {
      const deno = denoRuntime();
      if (parent === undefined && deno !== undefined) {
        // The runtime's own call: it finds the temporary directory without reading TMPDIR
        // through a permission check.
        return new SpillDirectory(await deno.makeTempDir({ prefix: "ocipart-" }));
      }
      return new SpillDirectory(await mkdtemp(join(parent ?? tmpdir(), "ocipart-")));
    } catch (err) {
      throw new LocalFileError(`temporary directory: cannot be created${osReason(err)}`, {
        cause: err,
      });
    }
  }

  /** Creates (or truncates) the file `name` in the directory, open for writing and reading. */
  async file(name: string): Promise<PartFile> {
    return await PartFile.create(join(this.path, name));
  }

  /** Removes the directory and every file in it (never fails). */
  async remove(): Promise<void> {
    await rm(this.path, { recursive: true, force: true }).catch(() => {});
    this.#forget();
  }
}

/** The directories and files in use, removed if the process exits first. */
const inUse = new Set<string>();
let listening = false;

/**
 * Removes the directory or file `path` when the process exits (Deno's `unload`, which
 * `Deno.exit` dispatches; Node's `exit`) unless the returned function is called first. One
 * listener serves every path of the process.
 */
function removedAtExit(path: string): () => void {
  if (!listening) {
    listening = true;
    const removeAll = () => {
      for (const dir of inUse) {
        try {
          rmSync(dir, { recursive: true, force: true });
        } catch {
          // Exiting anyway.
        }
      }
    };
    if (denoRuntime() !== undefined) globalThis.addEventListener("unload", removeAll);
    else process.once("exit", removeAll);
  }
  inUse.add(path);
  return () => inUse.delete(path);
}

/**
 * One part on disk: positional writes (the sink of a part download), then reads in order.
 *
 * @example
 * ```ts ignore
 * const file = await PartFile.create(`${spillDir}/part-0`);
 * await file.writeAt(bytes, 0);
 * ```
 */
export class PartFile {
  /** Where the file is (it moves with {@linkcode PartFile.renameTo}). */
  path: string;
  readonly #handle: Awaited<ReturnType<typeof open>>;
  #closed = false;
  /** Stops the file's removal at the process's exit (it was removed or renamed). */
  #forget: () => void = () => {};

  private constructor(path: string, handle: Awaited<ReturnType<typeof open>>) {
    this.path = path;
    this.#handle = handle;
  }

  /**
   * Creates (or truncates) the file at `path`; with `transient`, the file is removed if the
   * process exits before it is removed or renamed (a part being fetched into a directory that
   * outlives the process).
   */
  static async create(path: string, options: { transient?: boolean } = {}): Promise<PartFile> {
    try {
      const file = new PartFile(path, await open(path, "w+"));
      if (options.transient === true) file.#forget = removedAtExit(path);
      return file;
    } catch (err) {
      throw new LocalFileError(`temporary part file: cannot be created${osReason(err)}`, {
        cause: err,
      });
    }
  }

  /** Opens the existing file at `path` for reading. */
  static async openRead(path: string): Promise<PartFile> {
    return new PartFile(path, await open(path, "r"));
  }

  /** Writes all of `bytes` at `position`. */
  writeAt(bytes: Uint8Array, position: number): Promise<void> {
    return writeAllAt(this.#handle, bytes, position);
  }

  /** Reads `length` bytes from `position` into a new array (fewer where the file ends). */
  async readAt(position: number, length: number): Promise<Uint8Array> {
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.#handle.read(out, done, length - done, position + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done === length ? out : out.subarray(0, done);
  }

  /** Reads up to `buffer`'s length from `position` into it: the bytes read, a view of `buffer`. */
  async readInto(buffer: Uint8Array, position: number): Promise<Uint8Array> {
    let done = 0;
    while (done < buffer.byteLength) {
      const { bytesRead } = await this.#handle.read(
        buffer,
        done,
        buffer.byteLength - done,
        position + done,
      );
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return buffer.subarray(0, done);
  }

  /**
   * The bytes `[position, position + length)` in order, read ahead into `buffers` by turns (the
   * next read runs while the caller handles the chunk before): each chunk is a view of one of
   * them, valid until the caller asks for the next chunk.
   */
  async *chunksInto(
    position: number,
    length: number,
    buffers: readonly [Uint8Array, Uint8Array],
  ): AsyncGenerator<Uint8Array> {
    const end = position + length;
    let turn = 0;
    const read = (at: number) => {
      const buffer = buffers[turn];
      turn ^= 1;
      const reading = this.readInto(buffer.subarray(0, Math.min(buffer.byteLength, end - at)), at);
      // Surfaces at the await below, or is dropped with the generator.
      reading.catch(() => {});
      return reading;
    };
    let pending = position < end ? read(position) : undefined;
    try {
      for (let at = position; pending !== undefined;) {
        const chunk = await pending;
        if (chunk.byteLength === 0) return;
        at += chunk.byteLength;
        pending = at < end ? read(at) : undefined;
        yield chunk;
      }
    } finally {
      // No read may still fill a buffer once the caller has them back.
      await pending?.catch(() => {});
    }
  }

  /** The bytes `[position, position + length)` in new arrays of at most 1 MiB, in order. */
  async *chunks(position: number, length: number): AsyncGenerator<Uint8Array> {
    for (let at = position; at < position + length;) {
      const chunk = await this.readAt(at, Math.min(READ_BYTES, position + length - at));
      if (chunk.byteLength === 0) return;
      at += chunk.byteLength;
      yield chunk;
    }
  }

  /** The file's status, from its handle. */
  async stat(): Promise<{ isFile(): boolean; size: number }> {
    return await this.#handle.stat();
  }

  /** Renames the file to `path` (within its directory's file system). */
  async renameTo(path: string): Promise<void> {
    await rename(this.path, path);
    this.path = path;
    this.#forget();
  }

  /** Closes the file (once). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#handle.close().catch(() => {});
  }

  /** Closes and deletes the file (never fails). */
  async remove(): Promise<void> {
    await this.close();
    await rm(this.path, { force: true }).catch(() => {});
    this.#forget();
  }
}
