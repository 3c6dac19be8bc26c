/**
 * The push source: a regular file given by path.
 *
 * @module
 */
import { open, stat } from "node:fs/promises";
import { LocalFileError } from "../errors/kinds.ts";
import { osReason } from "./fs_reason.ts";

/**
 * What {@linkcode fromFile} returns: a push source naming a file. Opened by push, not here.
 *
 * @example Naming the file to push
 * ```ts
 * import { fromFile, type PushSource } from "@ocipart/ocipart";
 * const source: PushSource = fromFile("./weights.bin");
 * console.log(source.kind, source.path); // "file" "./weights.bin"
 * ```
 */
export interface PushSource {
  /** The source kind. */
  readonly kind: "file";
  /** The file path as given. */
  readonly path: string;
}

/**
 * A push source reading the regular file at `path`. The file is opened (and a missing,
 * unreadable or non-regular file reported) by `push`, which re-streams failed parts from disk.
 *
 * @example A push source for a file
 * ```ts
 * import { fromFile } from "@ocipart/ocipart";
 * console.log(fromFile("./weights.bin").path); // "./weights.bin"
 * ```
 */
export function fromFile(path: string): PushSource {
  if (typeof path !== "string" || path === "") {
    throw new TypeError("fromFile: path must be a non-empty string");
  }
  return Object.freeze({ kind: "file", path });
}

/** What identifies a version of the source file; any change means the source changed. */
export interface SourceStamp {
  /** Size in bytes. */
  readonly size: number;
  /** Modification time in milliseconds (fractional where the platform has more precision). */
  readonly mtimeMs: number;
  /** Status change time in milliseconds. */
  readonly ctimeMs: number;
  /** Inode number (0 where unknown). */
  readonly ino: number;
}

/**
 * Stats a local file the transfer reads (`what` names it in errors): `LocalFileError` naming
 * the OS reason when it is missing or unreadable, or when it is not a regular file.
 *
 * @example The size and identity of a file about to be read
 * ```ts
 * import { statSource } from "./fs_source.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "abc");
 * console.log((await statSource(path)).size); // 3
 * await Deno.remove(path);
 * ```
 */
export async function statSource(path: string, what = "push source"): Promise<SourceStamp> {
  let info;
  try {
    info = await stat(path, { bigint: false });
  } catch (err) {
    throw new LocalFileError(`${what}: cannot be opened${osReason(err)}`, { cause: err });
  }
  if (!info.isFile()) throw new LocalFileError(`${what}: not a regular file`);
  return { size: info.size, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs, ino: info.ino ?? 0 };
}

/**
 * Checks that the source can be opened for reading (stat alone does not prove it).
 *
 * @example
 * ```ts ignore
 * import { checkReadable } from "./fs_source.ts";
 * await checkReadable("./weights.bin");
 * ```
 */
export async function checkReadable(path: string): Promise<void> {
  try {
    const handle = await open(path, "r");
    await handle.close();
  } catch (err) {
    throw new LocalFileError("push source: cannot be opened", { cause: err });
  }
}

/**
 * True when two stamps describe the same file version.
 *
 * @example
 * ```ts
 * import { sameStamp } from "./fs_source.ts";
 * const a = { size: 1, mtimeMs: 2, ctimeMs: 3, ino: 4 };
 * console.log(sameStamp(a, { ...a }), sameStamp(a, { ...a, mtimeMs: 5 })); // true false
 * ```
 */
export function sameStamp(a: SourceStamp, b: SourceStamp): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs &&
    a.ino === b.ino;
}
