/**
 * Text that is safe to write to a terminal: what a person typed, repeated in a message, must not
 * drive the terminal (a reference pasted with an escape sequence, a flag from a script).
 *
 * @module
 */

/**
 * `text` with control characters (C0, DEL, C1) shown as `\xNN` escapes.
 *
 * @example
 * ```ts
 * import { printable } from "./printable.ts";
 * console.log(printable("--x\u001b[2J")); // "--x\\x1b[2J"
 * ```
 */
export function printable(text: string): string {
  const escape = (c: string) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, escape);
}
