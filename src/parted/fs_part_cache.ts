/**
 * A part cache directory: verified parts kept as files named by their digest's hex, so that
 * reads of nearby bytes (and later processes) do not fetch them again. At most `limit` parts
 * are kept; the least recently used go first. A file is hashed again the first time a reader
 * uses it: the directory is the user's, and its files may have changed.
 *
 * @module
 */
import { mkdir, readdir, rm, stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import { LocalFileError } from "../errors/kinds.ts";
import { osReason } from "./fs_reason.ts";
import { PartFile } from "./fs_spill.ts";

/** The suffix of a part being fetched into the directory. */
const PARTIAL = ".partial";

/**
 * A partial file unwritten for this long belongs to a process that was killed: a running fetch
 * writes within its stall timeout (60 s by default) or fails, and a failed one removes its file.
 */
const ABANDONED_MS = 60 * 60 * 1000;

/**
 * The files of a part cache directory.
 *
 * @example
 * ```ts ignore
 * const cache = await CacheDirectory.open("./.ocipart-cache", 8);
 * const path = cache.pathOf("sha256:…");
 * ```
 */
export class CacheDirectory {
  readonly path: string;
  readonly #limit: number;

  private constructor(path: string, limit: number) {
    this.path = path;
    this.#limit = limit;
  }

  /** Opens (creating it if needed) the directory at `path`, keeping at most `limit` parts. */
  static async open(path: string, limit: number): Promise<CacheDirectory> {
    try {
      await mkdir(path, { recursive: true });
    } catch (err) {
      throw new LocalFileError(`cache directory: cannot be created${osReason(err)}`, {
        cause: err,
      });
    }
    return new CacheDirectory(path, limit);
  }

  /** Where the part of `digest` is kept. */
  pathOf(digest: string): string {
    return join(this.path, digest.replace(/^sha256:/, ""));
  }

  /**
   * The kept file of `digest`, opened for reading, when it has `size` bytes (its use is
   * recorded), else undefined. Read through this handle, it stays readable if another reader
   * trims it away meanwhile.
   */
  async openKept(digest: string, size: number): Promise<PartFile | undefined> {
    const path = this.pathOf(digest);
    let file: PartFile;
    try {
      file = await PartFile.openRead(path);
    } catch {
      return undefined;
    }
    const info = await file.stat().catch(() => undefined);
    if (info === undefined || !info.isFile() || info.size !== size) {
      await file.close();
      return undefined;
    }
    await this.touch(path);
    return file;
  }

  /** Records a use of the kept file at `path` (the trim keeps the most recently used). */
  async touch(path: string): Promise<void> {
    const now = new Date();
    await utimes(path, now, now).catch(() => {});
  }

  /**
   * A new file for the part of `digest`, to be {@linkcode CacheDirectory.keep}-ed once verified
   * (or removed); if the process exits first, the file goes with it.
   */
  async create(digest: string): Promise<PartFile> {
    const name = `${digest.replace(/^sha256:/, "")}.${crypto.randomUUID()}${PARTIAL}`;
    try {
      return await PartFile.create(join(this.path, name), { transient: true });
    } catch (err) {
      // The directory is the user's: it may have gone (removed while the reader ran).
      throw new LocalFileError(`cache directory: a part file cannot be created${osReason(err)}`, {
        cause: err,
      });
    }
  }

  /**
   * Puts the verified `file` in place under its digest's name (the file stays open for reading
   * through it), then trims the directory.
   */
  async keep(file: PartFile, digest: string): Promise<void> {
    try {
      await file.renameTo(this.pathOf(digest));
    } catch (err) {
      await file.remove();
      throw new LocalFileError(`cache directory: a part cannot be kept${osReason(err)}`, {
        cause: err,
      });
    }
    await this.#trim();
  }

  /** Deletes a file that did not verify. */
  async forget(path: string): Promise<void> {
    await rm(path, { force: true }).catch(() => {});
  }

  /**
   * Keeps the `limit` most recently used parts, and removes the partial files of a process
   * that was killed mid-fetch (untouched for {@linkcode ABANDONED_MS}).
   */
  async #trim(): Promise<void> {
    const all = await readdir(this.path);
    const abandoned = Date.now() - ABANDONED_MS;
    for (const name of all.filter((name) => name.endsWith(PARTIAL))) {
      const path = join(this.path, name);
      const at = (await stat(path).catch(() => undefined))?.mtimeMs;
      if (at !== undefined && at < abandoned) await this.forget(path);
    }
    const names = all.filter((name) => /^[0-9a-f]{64}$/.test(name));
    if (names.length <= this.#limit) return;
    const dated = await Promise.all(names.map(async (name) => {
      const path = join(this.path, name);
      return { path, at: (await stat(path).catch(() => undefined))?.mtimeMs ?? 0 };
    }));
    dated.sort((a, b) => a.at - b.at);
    for (const { path } of dated.slice(0, dated.length - this.#limit)) await this.forget(path);
  }
}
