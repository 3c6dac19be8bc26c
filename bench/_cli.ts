/**
 * How a bench runs this project's CLI: as the README's install line runs it, with its V8 flag
 * (the young generation kept at 1 MiB), so the memory figures are the installed command's.
 *
 * @module
 */

/** The runtime flags of the README's install line, besides the permissions. */
export const CLI_RUNTIME_FLAGS: readonly string[] = ["--v8-flags=--max-semi-space-size=1"];

/** The command line that runs the CLI at `cliPath` with every permission and the install flags. */
export function cliCommand(cliPath: string): string[] {
  return [Deno.execPath(), "run", "-A", ...CLI_RUNTIME_FLAGS, cliPath];
}
