/**
 * `ocipart login <registry>` and `ocipart logout <registry>`: check a credential against the
 * registry and save it in the docker configuration, or erase it.
 *
 * @module
 */
import { eraseDockerLogin, saveDockerLogin } from "../../auth/docker_login.ts";
import { PartedClient } from "../../parted/client.ts";
import type { LoginCommand, LogoutCommand } from "../args.ts";
import { EXIT_CODES, exitOutcome } from "../exit_code.ts";
import { stdout } from "../io.ts";
import { jsonText, terminalText } from "../../registry/untrusted_text.ts";
import { reportFailure, runRegistryCommand } from "../session.ts";

/**
 * Runs `login`: the credential from `--username`/`--password-stdin` is checked with
 * `GET /v2/` first; a refused one saves nothing (exit 6).
 *
 * @example
 * ```ts ignore
 * import { runLogin } from "./login.ts";
 * const code = await runLogin(parseCommandLine(["login", "--username", "ci",
 *   "--password-stdin", "registry.example"]) as LoginCommand);
 * ```
 */
export function runLogin(command: LoginCommand): Promise<number> {
  return runRegistryCommand({
    label: "ocipart login",
    flags: command,
    run: async ({ clientOptions, signal, credential }) => {
      using client = new PartedClient(clientOptions);
      await client.checkLogin(command.registry, { signal });
      const saved = await saveDockerLogin(command.registry, credential!, configOption(command));
      const where = saved.helper === undefined
        ? "the docker configuration"
        : `credential helper docker-credential-${terminalText(saved.helper)}`;
      stdout(
        command.json
          ? `${jsonText({ ...saved, loggedIn: true })}\n`
          : `Login succeeded; saved in ${where}\n`,
      );
      return EXIT_CODES.success;
    },
  });
}

/**
 * Runs `logout`: erases the registry's credential (helper and `auths` entry).
 *
 * @example
 * ```ts ignore
 * import { runLogout } from "./login.ts";
 * const code = await runLogout(parseCommandLine(["logout", "registry.example"]) as LogoutCommand);
 * ```
 */
export async function runLogout(command: LogoutCommand): Promise<number> {
  try {
    const erased = await eraseDockerLogin(command.registry, configOption(command));
    stdout(
      command.json
        ? `${jsonText({ ...erased, loggedIn: false })}\n`
        : `Removed the login of ${erased.registry}\n`,
    );
    return EXIT_CODES.success;
  } catch (err) {
    const outcome = exitOutcome(err);
    return reportFailure({ label: "ocipart logout" }, err, outcome.explanation, outcome.code);
  }
}

function configOption(command: { registryConfig: string | undefined }) {
  return command.registryConfig === undefined ? {} : { configPath: command.registryConfig };
}
