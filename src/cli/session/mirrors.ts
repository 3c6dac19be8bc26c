/**
 * The mirrors of a command that reads an artifact: `--mirror` flags for the reference's
 * registry, or else the registries configuration (`--registries-conf FILE`,
 * `$CONTAINERS_REGISTRIES_CONF`, `~/.config/containers/registries.conf`,
 * `/etc/containers/registries.conf`). A default location this process may not read (a Deno
 * permission not granted) counts as absent, without a prompt.
 *
 * @module
 */
import {
  type MirrorTable,
  parseReference,
  readRegistriesConf,
  type RegistriesConfLocation,
  registriesConfLocation,
} from "../../parted/mod.ts";
import { LocalFileError } from "../../errors/mod.ts";
import { InputFileError } from "../../auth/mod.ts";
import type { ReadFlags } from "../arguments/args.ts";

/**
 * The mirror table of a reading command, or undefined when it has none.
 *
 * @throws {Error} The registries configuration cannot be read or used; the message names it.
 *
 * @example
 * ```ts ignore
 * const mirrors = await commandMirrors(command, command.reference);
 * ```
 */
export async function commandMirrors(
  flags: ReadFlags,
  reference: string,
  signal?: AbortSignal,
): Promise<MirrorTable | undefined> {
  if (flags.mirrors.length > 0) {
    let registry: string;
    try {
      registry = parseReference(reference).registry;
    } catch {
      return undefined; // the library reports the reference itself
    }
    // No scheme or TLS of their own: a mirror host is reached as the client's settings say
    // (`--plain-http`, `--insecure`, `--ca-file`; a copy adds its source side's).
    return {
      [registry]: flags.mirrors.map((location) => ({ location, pullFromMirror: "digest-only" })),
    };
  }
  const location = flags.registriesConf === undefined
    ? await registriesConfLocation({ env: permittedEnv, readable: permittedRead })
    : { path: flags.registriesConf, required: true };
  if (location === undefined) return undefined;
  const flag = flags.registriesConf === undefined ? undefined : "--registries-conf";
  const table = await readNamed(location, flag, signal);
  return Object.keys(table).length === 0 ? undefined : table;
}

async function readNamed(
  location: RegistriesConfLocation,
  flag: string | undefined,
  signal: AbortSignal | undefined,
): Promise<MirrorTable> {
  try {
    return await readRegistriesConf(location, { signal });
  } catch (err) {
    if (signal?.aborted) throw err;
    const reason = err instanceof Error
      ? err.message.replace(/^registries configuration: /, "")
      : "";
    // Not a LocalFileError any more: the report would name the destination as the file at fault.
    const cause = err instanceof LocalFileError ? err.cause : err;
    // A named pipe or a device: say which flag wants a regular file (the default locations
    // are files the user did not type).
    const which = cause instanceof InputFileError && flag !== undefined
      ? `; ${flag} takes a regular file of at most 4 MiB`
      : "";
    throw new Error(`registries configuration ${location.path}: ${reason}${which}`, { cause });
  }
}

/** The variable's value when this process may read it without asking. */
function permittedEnv(name: string): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") {
    return undefined;
  }
  return Deno.env.get(name);
}

/** Whether this process may read `path` without asking. */
function permittedRead(path: string): boolean {
  return Deno.permissions.querySync({ name: "read", path }).state === "granted";
}
