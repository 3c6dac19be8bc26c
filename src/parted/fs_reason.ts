/**
 * The operating system's reason for a failed file operation, as short text safe for a message:
 * the error code and what it means, never the path or the platform's own message.
 *
 * @module
 */
import { constants } from "node:os";

const MEANINGS: Readonly<Record<string, string>> = {
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  EFBIG: "file too large for the file system",
  EROFS: "read-only file system",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOENT: "no such file or directory",
  ENOTDIR: "a parent is not a directory",
  EISDIR: "is a directory",
  ELOOP: "is a symbolic link",
  ENAMETOOLONG: "file name too long",
  EMFILE: "too many open files",
  EIO: "input/output error",
  EINVAL: "invalid argument",
};

/**
 * What a file operation's errno code means in a few words, or undefined for a code without a
 * known meaning.
 *
 * @example The words of a code
 * ```ts
 * import { errnoMeaning } from "@ocipart/ocipart/parted";
 * console.log(errnoMeaning("ENOSPC")); // "no space left on the device"
 * ```
 */
export function errnoMeaning(code: string): string | undefined {
  return Object.hasOwn(MEANINGS, code) ? MEANINGS[code] : undefined;
}

/**
 * ` (CODE: meaning)` for an error carrying a known errno code, ` (CODE)` for another code, and
 * the empty string when there is none.
 *
 * @example Naming why a write failed
 * ```ts
 * import { osReason } from "./fs_reason.ts";
 * const err = Object.assign(new Error("boom"), { code: "ENOSPC" });
 * console.log(`write failed${osReason(err)}`);
 * // "write failed (ENOSPC: no space left on the device)"
 * ```
 */
export function osReason(err: unknown): string {
  const code = errnoCode(err);
  if (code === undefined) return "";
  const meaning = errnoMeaning(code);
  return meaning === undefined ? ` (${code})` : ` (${code}: ${meaning})`;
}

/**
 * The errno name of `err`: its `code`, or, for a runtime error that carries only the number in
 * its message (`File too large (os error 27)`), the name this platform gives that number.
 *
 * @example A code from a runtime error
 * ```ts
 * import { errnoCode } from "@ocipart/ocipart/parted";
 * console.log(errnoCode(Object.assign(new Error("x"), { code: "EROFS" }))); // "EROFS"
 * ```
 */
export function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^E[A-Z0-9]+$/.test(code)) return code;
  const message = err instanceof Error ? err.message : "";
  const number = /\(os error (\d+)\)/.exec(message)?.[1];
  if (number === undefined) return undefined;
  const errno = constants.errno as Record<string, number>;
  return Object.keys(errno).find((name) => errno[name] === Number(number));
}
