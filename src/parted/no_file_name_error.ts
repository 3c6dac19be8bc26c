/**
 * The error of a pull into a directory whose manifest gives no name the file may have.
 *
 * @module
 */
import { InvalidManifestError } from "../errors/kinds.ts";

/**
 * Why a manifest names no file: it has no title, or its title is not a plain file name.
 *
 * @example Choosing the advice
 * ```ts
 * import { NoFileNameError, type NoFileNameReason } from "@ocipart/ocipart/parted";
 * const reason: NoFileNameReason = new NoFileNameError("no-title").reason;
 * console.log(reason === "no-title" ? "pull into a named file" : "rename"); // "pull into a named file"
 * ```
 */
export type NoFileNameReason = "no-title" | "not-plain";

const RULE: Readonly<Record<NoFileNameReason, string>> = {
  "no-title": "annotations: no title to name the file; pull into a file",
  "not-plain": "annotations: title is not a plain file name",
};

/**
 * A pull into a directory was refused before any part was fetched: the manifest has no title
 * annotation, or its title is not a plain file name (`isPlainFileName`). An
 * `InvalidManifestError` (`ERR_INVALID_MANIFEST`) for a pull into a directory only; pulled into a
 * named file the same artifact is fine, so the CLI tells this case apart by `reason`. The
 * message never holds the title: a registry chose it.
 *
 * @example Telling a missing title from a refused one
 * ```ts
 * import { NoFileNameError } from "@ocipart/ocipart/parted";
 * const err = new NoFileNameError("not-plain");
 * console.log(err.reason, err.message);
 * // not-plain invalid manifest: annotations: title is not a plain file name
 * ```
 */
export class NoFileNameError extends InvalidManifestError {
  /** Whether the title is missing or not a plain file name. */
  readonly reason: NoFileNameReason;

  /** Creates the terminal error for `reason`. */
  constructor(reason: NoFileNameReason) {
    super(RULE[reason]);
    this.reason = reason;
  }
}
