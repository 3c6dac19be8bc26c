/**
 * The `ocipart login` command a failure report tells the user to run: it reaches the registry
 * the way the failed command did (the connection flags typed: `--plain-http`, `--insecure`,
 * `--ca-file`, `--registry-config`; for one side of a copy, that side's), so running it as
 * printed works where the failed command's requests went. Each word is quoted for a POSIX shell
 * (`src/cli/words/shell_word.ts`).
 *
 * @module
 */
import type { FailureSubject, TypedRegistry } from "./failure_subject.ts";
import { shellLine } from "./shell_word.ts";

/** The user name a login command shows when the failed command gave none: the usage's word. */
export const USER_PLACEHOLDER = "USER";

/** How one registry was reached: the settings a login must repeat. */
interface Reach {
  readonly plainHttp?: boolean | undefined;
  readonly insecure?: boolean | undefined;
  readonly caFile?: string | undefined;
}

/** A copy reaches each side by that side's settings; other commands by the shared flags. */
function reachOf(subject: FailureSubject, registry: TypedRegistry): Reach {
  const { input } = subject;
  if (registry.side !== undefined && input.sides !== undefined) return input.sides[registry.side];
  return input;
}

/**
 * `ocipart login` for `registry`, with the connection flags of the failed command, the user name
 * `username` (or {@linkcode USER_PLACEHOLDER}) and `--password-stdin`.
 *
 * @example After a 401 of `push --plain-http --registry-config 'ci config.json'`
 * ```ts
 * import { loginCommand } from "./login_command.ts";
 * const input = { plainHttp: true, registryConfig: "ci config.json" };
 * const registry = { shown: "r.lan:5000", host: "r.lan:5000", port: "5000" };
 * console.log(loginCommand({ command: "push", input }, registry, "alice"));
 * // ocipart login --plain-http --registry-config 'ci config.json' --username alice …
 * //   --password-stdin r.lan:5000 (one line)
 * ```
 */
export function loginCommand(
  subject: FailureSubject,
  registry: TypedRegistry,
  username: string = USER_PLACEHOLDER,
): string {
  const reach = reachOf(subject, registry);
  const { registryConfig } = subject.input;
  return shellLine([
    "ocipart",
    "login",
    ...(reach.plainHttp ? ["--plain-http"] : []),
    ...(reach.insecure ? ["--insecure"] : []),
    ...(reach.caFile === undefined ? [] : ["--ca-file", reach.caFile]),
    ...(registryConfig === undefined ? [] : ["--registry-config", registryConfig]),
    "--username",
    username,
    "--password-stdin",
    registry.host,
  ]);
}
