/**
 * The guards around the partial file of a pull: opening it without following a link, the
 * exclusive lock that makes it one pull's, the free-space check before it is sized, the identity
 * check before it is removed or renamed, and what a pull may replace at its destination.
 *
 * @module
 */
import { constants } from "node:fs";
import { type FileHandle, lstat, open, statfs } from "node:fs/promises";
import { dirname } from "node:path";
import { LocalFileError } from "../errors/kinds.ts";
import { DestinationExistsError, type ExistingEntry } from "./destination_exists_error.ts";
import { osReason } from "./fs_reason.ts";
import { denoRuntime } from "./deno_runtime.ts";

/** What identifies one file: the device and inode numbers. */
export interface FileIdentity {
  /** Device number. */
  readonly dev: number;
  /** Inode number. */
  readonly ino: number;
}

/**
 * The partial file is locked by another pull (in this process or another).
 *
 * @example Its message
 * ```ts
 * import { PartialInUseError } from "@ocipart/ocipart/parted";
 * console.log(new PartialInUseError().message);
 * // "pull destination: the partial file is in use by another pull"
 * ```
 */
export class PartialInUseError extends LocalFileError {
  /** Creates the error. */
  constructor() {
    super("pull destination: the partial file is in use by another pull");
  }
}

// Absent on platforms without it (0 then changes nothing). Deno ignores it when its permission
// checks resolve the path first, so the lstat-then-fstat identity check below is what holds.
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;
const READ_WRITE = constants.O_RDWR | NO_FOLLOW;

/**
 * Opens `path` for reading and writing without following a link, creating it when absent. An
 * existing path must be a regular file with one link, and the file opened must be the one
 * inspected (a link swapped in between is refused). `created` tells whether this call made it.
 *
 * @example Opening and creating
 * ```ts
 * import { openNoFollow } from "./fs_guard.ts";
 * const dir = await Deno.makeTempDir();
 * const { handle, created } = await openNoFollow(`${dir}/f`);
 * console.log(created); // true
 * await handle.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function openNoFollow(
  path: string,
): Promise<{ handle: FileHandle; created: boolean }> {
  for (let attempt = 0;; attempt++) {
    const seen = await lstat(path).catch((err) => {
      if (codeOf(err) === "ENOENT") return undefined;
      throw openFailure(err);
    });
    if (seen !== undefined) {
      checkPlainFile(seen);
      const handle = await open(path, READ_WRITE).catch((err) => {
        // Gone since the lstat (another pull committed it): look again, at most once.
        if (codeOf(err) === "ENOENT" && attempt === 0) return undefined;
        throw openFailure(err);
      });
      if (handle === undefined) continue;
      const opened = await handle.stat().catch(() => undefined);
      if (opened?.ino !== seen.ino || opened.dev !== seen.dev) {
        await handle.close().catch(() => {});
        throw new LocalFileError("pull destination: the partial file changed while being opened");
      }
      return { handle, created: false };
    }
    try {
      // O_EXCL never follows a link: a link planted since the lstat fails with EEXIST.
      const flags = READ_WRITE | constants.O_CREAT | constants.O_EXCL;
      return { handle: await open(path, flags, 0o644), created: true };
    } catch (err) {
      if (codeOf(err) !== "EEXIST" || attempt > 0) throw openFailure(err);
    }
  }
}

/**
 * Refuses anything but a regular file with exactly one link: writing through a symbolic link or
 * into a file with another hard link would change a file the user never named.
 *
 * @example Checking a fresh file
 * ```ts
 * import { checkPlainFile } from "./fs_guard.ts";
 * import { lstat } from "node:fs/promises";
 * const path = await Deno.makeTempFile();
 * checkPlainFile(await lstat(path));
 * await Deno.remove(path);
 * ```
 */
export function checkPlainFile(
  info: { isFile(): boolean; isSymbolicLink(): boolean; nlink: number },
): void {
  if (info.isSymbolicLink()) {
    throw new LocalFileError(
      "pull destination: the partial file is a symbolic link; refusing to follow it",
    );
  }
  if (!info.isFile()) {
    throw new LocalFileError("pull destination: the partial file is not a regular file");
  }
  if (info.nlink !== 1) {
    throw new LocalFileError(
      "pull destination: the partial file has another hard link; refusing to write through it",
    );
  }
}

/**
 * The lock of a partial file: the runtime handle that holds it, and the others asked for (each a
 * handle of the same file, which the pull's writes may use), all closed by disposing of it.
 */
export interface PartialLock extends Disposable {
  /** The runtime's handles of the locked file, open for reading and writing; the first locks. */
  readonly files: readonly Deno.FsFile[];
}

/**
 * Takes the exclusive lock of the open file `identity` at `path` without waiting: a second pull
 * of the same destination is refused at once with `PartialInUseError`. The lock is a `flock` the
 * OS drops when the process dies. Up to `handles` runtime handles of that same file are opened in
 * all, each checked to be it: one the OS refuses (too many open files, say) is done without. A
 * file that is no longer the one locked is refused with `LocalFileError`. Undefined where the
 * runtime has no file locks (`deno`: the runtime, by default this one).
 *
 * @example Locking a file once
 * ```ts
 * import { lockPartial } from "./fs_guard.ts";
 * import { stat } from "node:fs/promises";
 * const path = await Deno.makeTempFile();
 * const lock = await lockPartial(path, await stat(path));
 * const second = await lockPartial(path, await stat(path)).catch((err) => err.message);
 * console.log(second); // "pull destination: the partial file is in use by another pull"
 * lock?.[Symbol.dispose]();
 * await Deno.remove(path);
 * ```
 */
export async function lockPartial(
  path: string,
  identity: FileIdentity,
  handles = 1,
  deno: typeof Deno | undefined = denoRuntime(),
): Promise<PartialLock | undefined> {
  if (deno === undefined) return undefined;
  const files: Deno.FsFile[] = [];
  const close = () => files.forEach(closeQuietly);
  try {
    // Gone or another file before the lock: the holder committed (renamed it away) meanwhile.
    const file = await openSame(deno, path, identity);
    if (file === undefined) throw new PartialInUseError();
    files.push(file);
    if (!(await file.tryLock(true))) throw new PartialInUseError();
    // The holder may have committed (renamed the file away) between our open and our lock.
    if (!(await samePlainFile(path, identity))) throw new PartialInUseError();
    while (files.length < handles) {
      const more = await openSame(deno, path, identity).catch(() => null);
      if (more === null) break;
      // The lock is ours: a file gone or swapped since is another program's doing.
      if (more === undefined) {
        throw new LocalFileError("pull destination: the partial file changed while being opened");
      }
      files.push(more);
    }
    return { files, [Symbol.dispose]: close };
  } catch (err) {
    close();
    throw err;
  }
}

/**
 * A runtime handle of `path` if it is the file `identity`; undefined when `path` names no file or
 * another one. A refused open is a `LocalFileError`.
 */
async function openSame(
  deno: typeof Deno,
  path: string,
  identity: FileIdentity,
): Promise<Deno.FsFile | undefined> {
  let file: Deno.FsFile;
  try {
    file = await deno.open(path, { read: true, write: true });
  } catch (err) {
    if (err instanceof deno.errors.NotFound) return undefined;
    throw new LocalFileError(`pull destination: partial file cannot be locked${osReason(err)}`, {
      cause: err,
    });
  }
  try {
    const info = await file.stat();
    if (info.ino === identity.ino && info.dev === identity.dev) return file;
  } catch (err) {
    closeQuietly(file);
    throw err;
  }
  closeQuietly(file);
  return undefined;
}

/** Closes `file`; one that is already closed stays so. */
function closeQuietly(file: Deno.FsFile): void {
  try {
    file.close();
  } catch {
    // Already closed: nothing is left to release.
  }
}

/**
 * Refuses, naming both numbers, when the file system holding `path` has less free space than
 * the bytes of a `size`-byte file the open `handle` does not hold yet. Where free space cannot be
 * measured the check passes and the writes report what happens.
 *
 * @example A size that fits
 * ```ts
 * import { checkFreeSpace } from "./fs_guard.ts";
 * import { open } from "node:fs/promises";
 * const path = await Deno.makeTempFile();
 * const handle = await open(path, "r+");
 * await checkFreeSpace(handle, path, 1024);
 * await handle.close();
 * await Deno.remove(path);
 * ```
 */
export async function checkFreeSpace(
  handle: FileHandle,
  path: string,
  size: number,
): Promise<void> {
  let needed: number;
  let available: number;
  try {
    const info = await handle.stat();
    needed = size - Math.min(size, (info.blocks ?? 0) * 512);
    // Deno asks for `--allow-sys=statfs`; without it the check is skipped.
    const fs = await statfs(dirname(path));
    available = fs.bavail * fs.bsize;
  } catch {
    return;
  }
  if (needed > available) {
    throw new LocalFileError(
      `pull destination: not enough space: ${needed} bytes needed, ${available} available`,
    );
  }
}

/**
 * Refuses, with `DestinationExistsError`, a destination the pull's commit must not replace. A
 * directory is always refused (a rename cannot replace it). A file the caller `named` is replaced
 * (a link there is replaced, never followed); a file named by the artifact inside a directory is
 * replaced only with `overwrite`, and a link or special file of that name never is. Nothing
 * there passes; so does a path that cannot be inspected (the partial's open reports why).
 *
 * @example A file of that name exists
 * ```ts
 * import { checkDestination } from "./fs_guard.ts";
 * const path = await Deno.makeTempFile();
 * const refused = await checkDestination(path, { named: false, overwrite: false })
 *   .catch((err) => err.existing);
 * console.log(refused); // "file"
 * await checkDestination(path, { named: false, overwrite: true });
 * await Deno.remove(path);
 * ```
 */
export async function checkDestination(
  path: string,
  options: { named: boolean; overwrite: boolean },
): Promise<void> {
  const existing = await entryAt(path);
  if (existing === undefined) return;
  const replaceable = existing === "file"
    ? options.named || options.overwrite
    : options.named && existing !== "directory";
  if (!replaceable) throw new DestinationExistsError(path, existing);
}

/** What is at `path`, without following a link; undefined when nothing (or not inspectable). */
async function entryAt(path: string): Promise<ExistingEntry | undefined> {
  const info = await lstat(path).catch(() => undefined);
  if (info === undefined) return undefined;
  if (info.isSymbolicLink()) return "link";
  if (info.isDirectory()) return "directory";
  return info.isFile() ? "file" : "other";
}

/**
 * True when `path` is, without following a link, the regular file `identity`.
 *
 * @example A file is itself
 * ```ts
 * import { samePlainFile } from "./fs_guard.ts";
 * import { stat } from "node:fs/promises";
 * const path = await Deno.makeTempFile();
 * console.log(await samePlainFile(path, await stat(path))); // true
 * await Deno.remove(path);
 * ```
 */
export async function samePlainFile(path: string, identity: FileIdentity): Promise<boolean> {
  try {
    const info = await lstat(path);
    return info.isFile() && info.ino === identity.ino && info.dev === identity.dev;
  } catch {
    return false;
  }
}

function codeOf(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

function openFailure(err: unknown): LocalFileError {
  if (codeOf(err) === "ELOOP") {
    return new LocalFileError(
      "pull destination: the partial file is a symbolic link; refusing to follow it",
      { cause: err },
    );
  }
  return new LocalFileError(`pull destination: partial file cannot be opened${osReason(err)}`, {
    cause: err,
  });
}
