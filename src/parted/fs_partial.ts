/**
 * The pull destination and its partial file `<dest>.parted-partial`: owned by one pull at a time
 * (an exclusive lock the OS releases when the process dies), never reached through a link, sized
 * only when the file system has room, written positionally by concurrent workers, and renamed
 * onto the destination atomically. A partial that was never sized is removed on failure.
 *
 * @module
 */
import { type FileHandle, rename, unlink } from "node:fs/promises";
import { basename } from "node:path";
import { LocalFileError } from "../errors/kinds.ts";
import { osReason } from "./fs_reason.ts";
import { FileWrites, WRITE_LANES } from "./fs_writes.ts";
import {
  checkDestination,
  checkFreeSpace,
  checkPlainFile,
  type FileIdentity,
  lockPartial,
  openNoFollow,
  PartialInUseError,
  type PartialLock,
  samePlainFile,
} from "./fs_guard.ts";

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
 * The longest file name, in bytes, common file systems accept (ext4, XFS, APFS, NTFS).
 *
 * @example The longest destination name a pull accepts
 * ```ts
 * import { NAME_LIMIT_BYTES, PARTIAL_SUFFIX } from "./fs_partial.ts";
 * console.log(NAME_LIMIT_BYTES - PARTIAL_SUFFIX.length); // 240
 * ```
 */
export const NAME_LIMIT_BYTES = 255;

/**
 * Bytes written between background flushes: the kernel starts writing a file back only once
 * dirty memory passes a share of RAM, so a multi-GB pull would otherwise leave all of it to the
 * commit's flush (measured: 0.6 s for 2 GiB on a virtual disk, after the last byte arrived).
 */
const FLUSH_EVERY_BYTES = 256 * 1024 * 1024;

/**
 * What {@linkcode toFile} and {@linkcode toDirectory} return: a pull destination naming a file,
 * or a directory the file is written into under its recorded name.
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
  readonly kind: "file" | "directory";
  /** The destination path as given. */
  readonly path: string;
  /** A directory destination may replace a file of the artifact's name (default false). */
  readonly overwrite?: boolean;
}

/**
 * Options of {@linkcode toDirectory}.
 *
 * @example Replacing an earlier download of the same file
 * ```ts
 * import { type DirectoryOptions, toDirectory } from "@ocipart/ocipart";
 * const options: DirectoryOptions = { overwrite: true };
 * console.log(toDirectory("./models", options).overwrite); // true
 * ```
 */
export interface DirectoryOptions {
  /**
   * Replace a regular file that has the artifact's name (default false: the pull is refused
   * before any part is fetched). A directory, symbolic link or special file of that name is
   * never replaced.
   */
  overwrite?: boolean;
}

/**
 * A pull destination at `path`. While pulling, `<path>.parted-partial` holds the data; the
 * destination only ever appears complete and verified, and then replaces what was at `path`
 * (a file, or a symbolic link, which is replaced and not followed). A directory at `path` is
 * refused with `DestinationExistsError` before any part is fetched.
 *
 * @example A pull destination for a file
 * ```ts
 * import { toFile } from "@ocipart/ocipart";
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
 * A pull destination inside the directory `path`: the file is written under the name its push
 * recorded (the `org.opencontainers.image.title` annotation). A missing title, or one that is
 * not a plain file name (`..`, a slash, a backslash, a control character, empty, over 255
 * bytes), rejects the pull with `InvalidManifestError` before anything is written. What already
 * has that name is never replaced unless `options.overwrite` allows a regular file to be: the
 * pull rejects with `DestinationExistsError` (its `path` names the file) before any part is
 * fetched. A partial file `<name>.parted-partial` left by an interrupted pull is resumed, not
 * replaced. The pull's result names the file written.
 *
 * @throws {TypeError} An empty path, or an `overwrite` that is not a boolean.
 *
 * @example Pulling into a directory
 * ```ts
 * import { toDirectory } from "@ocipart/ocipart";
 * const destination = toDirectory("./models");
 * console.log(destination.kind, destination.path); // "directory" "./models"
 * ```
 */
export function toDirectory(path: string, options: DirectoryOptions = {}): PullDestination {
  if (typeof path !== "string" || path === "") {
    throw new TypeError("toDirectory: path must be a non-empty string");
  }
  const overwrite = options?.overwrite ?? false;
  if (typeof overwrite !== "boolean") {
    throw new TypeError(`toDirectory: overwrite must be a boolean, not ${String(overwrite)}`);
  }
  return Object.freeze({ kind: "directory", path, overwrite });
}

/**
 * The partial file of a pull, opened for positional reads and writes (a `node:fs` handle; on
 * Deno, runtime handles that each seek and write one write at a time, as two interleaved would
 * corrupt) and locked for the whole pull.
 *
 * @example Opening, sizing and committing
 * ```ts
 * import { PartialFile } from "./fs_partial.ts";
 * const dir = await Deno.makeTempDir();
 * const partial = await PartialFile.open(`${dir}/weights.bin`);
 * await partial.prepare(3);
 * await partial.writeAt(new TextEncoder().encode("abc"), 0);
 * await partial.commit();
 * console.log(await Deno.readTextFile(`${dir}/weights.bin`)); // "abc"
 * await Deno.remove(dir, { recursive: true });
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
  #lock: PartialLock | undefined;
  /** The writes of parts, through the lock's runtime handles where there are some. */
  readonly #writes: FileWrites;
  readonly #identity: FileIdentity;
  readonly #guard: DestinationGuard;
  #sized = false;
  /** The length `prepare` gave the file: the only length a commit accepts. */
  #size: number | undefined;
  #committed = false;
  /** The background flush in flight, if any; it never rejects (the commit's flush reports). */
  #flushing: Promise<void> | undefined;
  #flushAgain = false;
  #unflushed = 0;
  /** The close under way or done: a second call waits for the same one. */
  #closing: Promise<void> | undefined;

  private constructor(
    destination: string,
    handle: FileHandle,
    lock: PartialLock | undefined,
    identity: FileIdentity & { size: number },
    guard: DestinationGuard,
  ) {
    this.destination = destination;
    this.#guard = guard;
    this.path = destination + PARTIAL_SUFFIX;
    this.#handle = handle;
    this.#lock = lock;
    this.#writes = new FileWrites(handle, lock?.files);
    this.#identity = identity;
    this.initialLength = identity.size;
  }

  /**
   * Checks what is at `destination` may be replaced (`guard`: a file the caller named, by
   * default; see `checkDestination`), then opens (creating if needed)
   * `<destination>.parted-partial` without following a link, checks it is a regular file with
   * one link, takes its exclusive lock and measures its length. Every refusal is a
   * `LocalFileError` and leaves the file system as it was.
   */
  static async open(
    destination: string,
    guard: DestinationGuard = { named: true, overwrite: true },
  ): Promise<PartialFile> {
    checkNameLength(destination);
    await checkDestination(destination, guard);
    const path = destination + PARTIAL_SUFFIX;
    const { handle, created } = await openNoFollow(path);
    let lock: PartialLock | undefined;
    try {
      const info = await handle.stat();
      checkPlainFile(info);
      lock = await lockPartial(path, info, WRITE_LANES);
      return new PartialFile(destination, handle, lock, info, guard);
    } catch (err) {
      lock?.[Symbol.dispose]();
      await handle.close().catch(() => {});
      // Only a file this call created and nobody else holds is this call's to remove.
      if (created && !(err instanceof PartialInUseError)) await unlink(path).catch(() => {});
      throw err;
    }
  }

  /**
   * Sizes the file to `size` bytes (growth is sparse zeros) once the file system is known to
   * have room for the bytes still missing.
   */
  async prepare(size: number): Promise<void> {
    const handle = this.#open();
    await checkFreeSpace(handle, this.path, size);
    if (size !== this.initialLength) {
      try {
        await handle.truncate(size);
      } catch (err) {
        throw new LocalFileError(
          `pull destination: partial file cannot be resized${osReason(err)}`,
          { cause: err },
        );
      }
    }
    this.#sized = size > 0;
    this.#size = size;
  }

  /** Writes all of `bytes` at `position`. */
  async writeAt(bytes: Uint8Array, position: number): Promise<void> {
    this.#open();
    try {
      await this.#writes.writeAt(bytes, position);
    } catch (err) {
      throw new LocalFileError(`pull destination: write failed${osReason(err)}`, { cause: err });
    }
    this.#unflushed += bytes.byteLength;
    if (this.#unflushed >= FLUSH_EVERY_BYTES) this.flushSoon();
  }

  /**
   * Starts writing what the file holds to the disk in the background (at most one flush in
   * flight; a request during one runs once it ends), so the disk works while the network and
   * the hashes do and the commit's flush waits only for the rest. A resume calls it first: the
   * bytes an interrupted pull left may still be in memory only.
   */
  flushSoon(): void {
    this.#unflushed = 0;
    const handle = this.#handle;
    // A write that lands while the file closes needs no flush of its own: the commit flushes.
    if (handle === undefined) return;
    if (this.#flushing !== undefined) {
      this.#flushAgain = true;
      return;
    }
    this.#flushing = handle.datasync().catch(() => {}).then(() => {
      this.#flushing = undefined;
      if (!this.#flushAgain || this.#handle === undefined) return;
      this.#flushAgain = false;
      this.flushSoon();
    });
  }

  /** Waits until no background flush is in flight. */
  async #flushed(): Promise<void> {
    this.#flushAgain = false;
    while (this.#flushing !== undefined) await this.#flushing;
  }

  /**
   * Flushes the data once and renames the file onto the destination atomically (a link at the
   * destination is replaced, never followed), then releases the file. Only the file this pull
   * locked and sized is committed: the path must still name it (same device and inode) and it
   * must still have the size `prepare` gave it, so a file replaced, appended to or cut short by
   * another program is refused (and kept). What appeared at the destination during the pull is
   * checked again first, so a file the pull may not replace is kept (and so is the partial); the
   * rename cannot refuse to replace, so only that last instant stays open, and a rename that
   * moved another file there is reported.
   */
  async commit(): Promise<void> {
    const handle = this.#open();
    await this.#writes.settled();
    await this.#flushed();
    try {
      await handle.datasync();
    } catch (err) {
      throw new LocalFileError(`pull destination: commit failed${osReason(err)}`, { cause: err });
    }
    await this.#checkIntact(handle);
    await checkDestination(this.destination, this.#guard);
    try {
      await rename(this.path, this.destination);
    } catch (err) {
      throw new LocalFileError(`pull destination: commit failed${osReason(err)}`, { cause: err });
    }
    this.#committed = true;
    await this.close();
    if (!(await samePlainFile(this.destination, this.#identity))) {
      throw new LocalFileError("pull destination: another program replaced the file at the commit");
    }
  }

  /**
   * Refuses a partial that is no longer the file this pull locked, or no longer of the size it
   * was given: another program wrote to it (the bytes placed and verified are not what is there).
   */
  async #checkIntact(handle: FileHandle): Promise<void> {
    if (!(await samePlainFile(this.path, this.#identity))) {
      throw new LocalFileError("pull destination: the partial file was replaced during the pull");
    }
    const { size } = await handle.stat();
    if (this.#size !== undefined && size !== this.#size) {
      throw new LocalFileError(
        `pull destination: the partial file changed size during the pull (${size} bytes, ` +
          `not ${this.#size}): another program wrote to it`,
      );
    }
  }

  /**
   * Releases the file; never throws. A partial that was empty when opened and was never sized is
   * removed first, so a pull that failed before its first byte was placed leaves nothing behind
   * (a sized partial stays: it is the evidence a later pull resumes from).
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const handle = this.#handle;
    if (handle === undefined) return;
    // No write starts once closing began; the lock is held until the last one has landed.
    this.#handle = undefined;
    await this.#writes.settled();
    await this.#flushed();
    if (!this.#committed && !this.#sized && this.initialLength === 0) {
      if (await samePlainFile(this.path, this.#identity)) await unlink(this.path).catch(() => {});
    }
    await handle.close().catch(() => {});
    this.#lock?.[Symbol.dispose]();
    this.#lock = undefined;
  }

  #open(): FileHandle {
    if (this.#handle === undefined) throw new LocalFileError("pull destination: file closed");
    return this.#handle;
  }
}

/** What a pull may replace at its destination (see `checkDestination`). */
export interface DestinationGuard {
  /** The caller named the file (a file or link there is replaced). */
  readonly named: boolean;
  /** A file named by the artifact may be replaced. */
  readonly overwrite: boolean;
}

/** Refuses a destination whose name cannot take the partial suffix, before anything is written. */
function checkNameLength(destination: string): void {
  const bytes = new TextEncoder().encode(basename(destination) + PARTIAL_SUFFIX).byteLength;
  if (bytes > NAME_LIMIT_BYTES) {
    throw new LocalFileError(
      `pull destination: the file name is too long to add "${PARTIAL_SUFFIX}" ` +
        `(${bytes} bytes with it; file names are limited to ${NAME_LIMIT_BYTES} bytes)`,
    );
  }
}
