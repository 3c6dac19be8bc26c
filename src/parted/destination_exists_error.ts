/**
 * The error of a pull whose file name is already taken.
 *
 * @module
 */
import { LocalFileError } from "../errors/kinds.ts";

/**
 * What already has a pull's file name: see {@linkcode DestinationExistsError}.
 *
 * @example Explaining a refusal
 * ```ts
 * import type { ExistingEntry } from "@ocipart/ocipart";
 * const advice = (existing: ExistingEntry) =>
 *   existing === "file" ? "pass overwrite to replace it" : "move it out of the way";
 * console.log(advice("directory")); // "move it out of the way"
 * ```
 */
export type ExistingEntry = "file" | "directory" | "link" | "other";

const WHAT: Readonly<Record<ExistingEntry, string>> = {
  file: "a file",
  directory: "a directory",
  link: "a symbolic link",
  other: "a special file",
};

/**
 * A pull was refused before any part was fetched because its file name is taken: in a directory
 * destination, by a file (pass `overwrite` to `toDirectory` to replace it), a directory, a
 * symbolic link or a special file (never replaced); for a destination named by `toFile`, by a
 * directory. The path is a field and not part of the message, because a directory pull's file
 * name comes from the registry. Terminal, no sentinel; a `LocalFileError`.
 *
 * @example Naming the file a pull would have replaced
 * ```ts
 * import { DestinationExistsError, findError } from "@ocipart/ocipart";
 * const err: unknown = new DestinationExistsError("models/.bashrc", "file");
 * const refused = findError(err, DestinationExistsError);
 * if (refused) console.log(`${refused.path} exists (${refused.existing})`);
 * // "models/.bashrc exists (file)"
 * ```
 */
export class DestinationExistsError extends LocalFileError {
  /** Stable identifier: `"ERR_DESTINATION_EXISTS"`. */
  override readonly code: string = "ERR_DESTINATION_EXISTS";
  /** The path the pull would have written. */
  readonly path: string;
  /** What is at `path`. */
  readonly existing: ExistingEntry;

  /** Creates the error for `path`, where `existing` is. */
  constructor(path: string, existing: ExistingEntry) {
    super(
      `pull destination: ${WHAT[existing]} of that name already exists; ` +
        (existing === "file"
          ? "refusing to replace it without overwrite"
          : "refusing to replace it"),
    );
    this.path = path;
    this.existing = existing;
  }
}
