/**
 * The pull destination and its partial file `<dest>.parted-partial`: positional writes from
 * concurrent workers, an atomic commit.
 *
 * @module
 */
import { type FileHandle, open, rename, stat, unlink } from "node:fs/promises";
import { LocalFileError } from "../errors/kinds.ts";

/**
 * The suffix of the partial file next to the destination.
 *
 * @example Where an interrupted pull keeps its data
 * ```ts
 * import { PARTIAL_SUFFIX } from "@ocipart/ocipart/parted";
 * console.log(`./weights.bin${PARTIAL_SUFFIX}`); // "./weights.bin.parted-partial"
 * ```
 */
export const PARTIAL_SUFFIX = ".parted-partial";

/**
 * What {@linkcode toFile} returns: a pull destination naming a file.
 *
 * @example Naming the file to pull into
 * ```ts
 * import { type PullDestination, toFile } from "@ocipart/ocipart";
 * const destination: PullDestination = toFile("./weights.bin");
 * console.log(destination.kind, destination.path); // "file" "./weights.bin"
 * ```
 */
export interface PullDestination {
  /** The destination kind. */
  readonly kind: "file";
  /** The destination path as given. */
  readonly path: string;
}

/**
 * A pull destination at `path`. While pulling, `<path>.parted-partial` holds the data; the
 * destination only ever appears complete and verified.
 *
 * @example A pull destination for a file
 * ```ts
 * import { toFile } from "./fs_partial.ts";
 * console.log(toFile("./weights.bin").path); // "./weights.bin"
 * ```
 */
export function toFile(path: string): PullDestination {
  if (typeof path !== "string" || path === "") {
    throw new TypeError("toFile: path must be a non-empty string");
  }
  return Object.freeze({ kind: "file", path });
}

/**
 * The partial file of a pull, opened for positional reads and writes (one handle, positional
 * I/O only: concurrent seek-and-write would corrupt).
 *
 * @example
 * ```ts ignore
 * import { PartialFile } from "./fs_partial.ts";
 * const partial = await PartialFile.open("./weights.bin");
 * await partial.resize(10);
 * await partial.commit();
 * ```
 */
export class PartialFile {
  /** The partial file's path. */
  readonly path: string;
  /** The destination path. */
  readonly destination: string;
  /** The length the partial had when opened, measured before any resize. */
  readonly initialLength: number;
  #handle: FileHandle | undefined;

  private constructor(destination: string, handle: FileHandle, initialLength: number) {
    this.destination = destination;
    this.path = destination + PARTIAL_SUFFIX;
    this.#handle = handle;
    this.initialLength = initialLength;
  }

  /**
   * Opens (creating if needed) `<destination>.parted-partial` and measures its length.
   * `LocalFileError` when it cannot be created (e.g. the directory does not exist).
   */
  static async open(destination: string): Promise<PartialFile> {
    const path = destination + PARTIAL_SUFFIX;
    let handle: FileHandle;
    try {
      handle = await open(path, "r+");
    } catch (err) {
      if ((err as { code?: string }).code !== "ENOENT") {
        throw new LocalFileError("pull destination: partial file cannot be opened", { cause: err });
      }
      try {
        handle = await open(path, "w+");
      } catch (err2) {
        throw new LocalFileError("pull destination: partial file cannot be created", {
          cause: err2,
        });
      }
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw new Error("not a regular file");
      return new PartialFile(destination, handle, info.size);
    } catch (err) {
      await handle.close().catch(() => {});
      throw new LocalFileError("pull destination: partial file cannot be measured", {
        cause: err,
      });
    }
  }

  /** Cuts or grows the file to `size` bytes (growth is sparse zeros). */
  async resize(size: number): Promise<void> {
    try {
      await this.#open().truncate(size);
    } catch (err) {
      throw new LocalFileError("pull destination: partial file cannot be resized", { cause: err });
    }
  }

  /** Writes all of `bytes` at `position`. */
  async writeAt(bytes: Uint8Array, position: number): Promise<void> {
    const handle = this.#open();
    let done = 0;
    try {
      while (done < bytes.byteLength) {
        const { bytesWritten } = await handle.write(
          bytes,
          done,
          bytes.byteLength - done,
          position + done,
        );
        if (bytesWritten <= 0) throw new Error("no progress");
        done += bytesWritten;
      }
    } catch (err) {
      throw new LocalFileError("pull destination: write failed", { cause: err });
    }
  }

  /** Flushes the data once, closes the file and renames it onto the destination atomically. */
  async commit(): Promise<void> {
    const handle = this.#open();
    try {
      await handle.datasync();
      this.#handle = undefined;
      await handle.close();
      await rename(this.path, this.destination);
    } catch (err) {
      throw new LocalFileError("pull destination: commit failed", { cause: err });
    }
  }

  /** Closes the file if still open; never throws. */
  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.close().catch(() => {});
  }

  #open(): FileHandle {
    if (this.#handle === undefined) throw new LocalFileError("pull destination: file closed");
    return this.#handle;
  }
}

/**
 * Removes `<destination>.parted-partial` when it exists with length zero (a pull that failed
 * at the manifest leaves nothing behind); never throws.
 *
 * @example
 * ```ts ignore
 * import { removeEmptyPartial } from "./fs_partial.ts";
 * await removeEmptyPartial("./weights.bin");
 * ```
 */
export async function removeEmptyPartial(destination: string): Promise<void> {
  const path = destination + PARTIAL_SUFFIX;
  try {
    const info = await stat(path);
    if (info.isFile() && info.size === 0) await unlink(path);
  } catch {
    // absent or unreadable: nothing to clean
  }
}
