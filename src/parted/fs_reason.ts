/**
 * The operating system's reason for a failed file operation, as short text safe for a message:
 * the error code and what it means, never the path or the platform's own message.
 *
 * @module
 */

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
 * ` (CODE: meaning)` for an error carrying a known errno code, ` (CODE)` for another code, and
 * the empty string when there is none.
 *
 * @example Naming why a write failed
 * ```ts
 * import { osReason } from "./fs_reason.ts";
 * const err = Object.assign(new Error("boom"), { code: "ENOSPC" });
 * console.log(`write failed${osReason(err)}`); // "write failed (ENOSPC: no space left on the device)"
 * ```
 */
export function osReason(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !/^E[A-Z0-9]+$/.test(code)) return "";
  const meaning = MEANINGS[code];
  return meaning === undefined ? ` (${code})` : ` (${code}: ${meaning})`;
}
