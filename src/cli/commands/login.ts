/**
 * `ocipart login <registry>` and `ocipart logout <registry>`: check a credential against the
 * registry and save it in the docker configuration, or erase it. Both stop a credential helper
 * that hangs at `--timeout` or Ctrl-C, and name the configuration file when it is the problem.
 *
 * @module
 */
import {
  DockerConfigFileError,
  dockerConfigPath,
  type DockerLoginResult,
  eraseDockerLogin,
  saveDockerLogin,
} from "../../auth/mod.ts";
import type { LoginCommand, LogoutCommand } from "../arguments/args.ts";
import { errorLine, EXIT_CODES } from "../words/exit_code.ts";
import { stderr, stdout } from "../session/io.ts";
import { PromptCancelledError, promptLogin, type PromptTerminal } from "../session/login_prompt.ts";
import { UsageError } from "../arguments/usage_error.ts";
import { jsonText, terminalText } from "../../parted/mod.ts";
import {
  openSession,
  reportFailure,
  requireRegistryConfig,
  StopScope,
} from "../session/session.ts";

/**
 * Runs `login`: the credential from `--username`/`--password-stdin`, or typed at the terminal's
 * prompt (the user name when not given, the password with echo off), is checked with `GET /v2/`
 * first; a refused one saves nothing (exit 6). Ctrl-C at the prompt exits 130.
 *
 * @example
 * ```ts ignore
 * import { runLogin } from "./login.ts";
 * const code = await runLogin(parseCommandLine(["login", "--username", "ci",
 *   "--password-stdin", "registry.example"]) as LoginCommand);
 * ```
 */
export async function runLogin(command: LoginCommand): Promise<number> {
  const job = { label: "ocipart login", flags: command, createsConfig: true };
  let credential: { username: string; password: string } | undefined;
  if (command.prompt !== undefined) {
    const asked = terminal();
    try {
      credential = await promptLogin(command.prompt || undefined, asked);
    } catch (err) {
      // Ctrl-C in raw mode is a key, not a signal: it ends the login as SIGINT would.
      return err instanceof PromptCancelledError
        ? reportFailure(job, err, "interrupted at the prompt (exit 130)", EXIT_CODES.sigint)
        : reportFailure(job, err, "no sentinel matched (exit 1)", EXIT_CODES.failure);
    }
  }
  const session = await openSession({ ...job, ...(credential ? { credential } : {}) });
  if (typeof session === "number") return session;
  using _ = session;
  try {
    // A refused credential or a closed port is told by the failure report's words.
    await session.client.checkLogin(command.registry, { signal: session.signal });
    const saved = await namingConfig(
      command,
      saveDockerLogin(command.registry, session.credential!, {
        ...configOption(command),
        signal: session.signal,
      }),
    );
    stdout(
      command.json
        ? `${jsonText({ ...saved, loggedIn: true })}\n`
        : `Login succeeded; saved in ${loginPlace(saved)}\n`,
    );
    return EXIT_CODES.success;
  } catch (err) {
    return await session.failed(err);
  }
}

/**
 * Runs `logout`: erases the registry's credential (helper and `auths` entries) and says where
 * one was removed from, or that none was stored.
 *
 * @example
 * ```ts ignore
 * import { runLogout } from "./login.ts";
 * const code = await runLogout(parseCommandLine(["logout", "registry.example"]) as LogoutCommand);
 * ```
 */
export async function runLogout(command: LogoutCommand): Promise<number> {
  using scope = new StopScope({ label: "ocipart logout" }, command);
  try {
    if (command.registryConfig !== undefined) await requireRegistryConfig(command.registryConfig);
    const erased = await namingConfig(
      command,
      eraseDockerLogin(command.registry, { ...configOption(command), signal: scope.signal }),
    );
    stdout(
      command.json ? `${jsonText({ ...erased, loggedIn: false })}\n` : logoutLine(erased),
    );
    return EXIT_CODES.success;
  } catch (err) {
    return await scope.failed(err);
  }
}

/**
 * Standard input as the login prompt's terminal. Without a terminal there is nobody to ask: the
 * password must come from `--password-stdin`, as `docker login` requires.
 */
function terminal(): PromptTerminal {
  if (!Deno.stdin.isTerminal()) {
    throw new UsageError(
      "standard input is not a terminal: give --username with --password-stdin",
      "login",
    );
  }
  return {
    input: Deno.stdin.readable,
    setRaw: (raw) => Deno.stdin.setRaw(raw),
    write: (text) => stderr(text),
  };
}

/** Adds the configuration file's path to an error about that file (the library leaves it out). */
async function namingConfig<T>(
  command: { registryConfig: string | undefined },
  change: Promise<T>,
): Promise<T> {
  try {
    return await change;
  } catch (err) {
    if (!(err instanceof DockerConfigFileError)) throw err;
    const path = command.registryConfig ?? dockerConfigPath() ?? "the docker configuration";
    throw new Error(`${errorLine(err)} (${path})`, { cause: err });
  }
}

function loginPlace(saved: DockerLoginResult): string {
  if (saved.savedIn !== "helper") return "the docker configuration";
  const helper = `credential helper docker-credential-${terminalText(saved.helper ?? "")}`;
  return saved.removedFrom.includes("auths")
    ? `${helper}; removed the plain-text copy from the docker configuration`
    : helper;
}

function logoutLine(erased: DockerLoginResult): string {
  const places: string[] = [];
  if (erased.removedFrom.includes("helper")) {
    places.push(`credential helper docker-credential-${terminalText(erased.helper ?? "")}`);
  }
  if (erased.removedFrom.includes("auths")) places.push("the docker configuration");
  if (places.length === 0) return `No login was stored for ${erased.registry}\n`;
  return `Removed the login of ${erased.registry} from ${places.join(" and ")}\n`;
}

function configOption(command: { registryConfig: string | undefined }) {
  return command.registryConfig === undefined ? {} : { configPath: command.registryConfig };
}
