/**
 * The error a command line that cannot be run raises.
 *
 * @module
 */

/** The commands of the reference CLI. */
export type CommandName =
  | "push"
  | "pull"
  | "copy"
  | "inspect"
  | "cat"
  | "verify"
  | "login"
  | "logout"
  | "blob pull"
  | "blob push"
  | "blob exists"
  | "blob mount";

/** What `ocipart help` shows: a command, or the blob commands together. */
export type HelpTopic = CommandName | "blob";

/**
 * A command line that cannot be run: an unknown flag, an unparseable or out-of-range value, a
 * wrong operand count, a destination that is a directory. The CLI exits 2 and prints the message
 * (with a suggestion or a hint when there is one) and a line pointing at the help of `command`
 * (or at the general help when no command was recognised), not the usage block itself.
 *
 * @example
 * ```ts
 * import { UsageError } from "./usage_error.ts";
 * const err = new UsageError("--workers: must be a positive integer", "push");
 * console.log(err.command); // "push"
 * ```
 */
export class UsageError extends Error {
  /** A stable identifier of this kind of error. */
  readonly code: string = "ERR_USAGE";
  /** The command whose help applies, if one was recognised. */
  readonly command: CommandName | undefined;
  /** Creates the error; `command` selects the help the CLI points at. */
  constructor(message: string, command?: CommandName) {
    super(message);
    this.name = "UsageError";
    this.command = command;
  }
}
