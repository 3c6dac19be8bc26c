/**
 * Saving and erasing a registry's credential in the docker configuration, as `docker login`
 * and `docker logout` do: through the configured credential helper when there is one, else as
 * `auths.<registry>.auth` (base64 of `user:password`) in the file.
 *
 * A login replaces everything the file held for the registry (every spelling of its key, with
 * any stale `identitytoken` or `registrytoken`); when a helper stores the credential, the file
 * keeps no entry for the registry at all. The file is rewritten atomically and keeps every
 * other key; a symbolic link to it stays a link and its target is rewritten (see
 * `docker_config_file.ts`).
 *
 * @module
 */
import { CredentialError } from "../errors/kinds.ts";
import { changeHelperCredential } from "./credential_helper.ts";
import {
  authKeysFor,
  credentialHelperFor,
  dockerConfigPath,
  helperServerUrl,
  parseDockerConfig,
} from "./docker_config.ts";
import { readConfigFile, writeConfigFile } from "./docker_config_file.ts";

/**
 * A user name and password to save.
 *
 * @example A robot account
 * ```ts
 * import type { LoginCredential } from "@ocipart/ocipart/auth";
 * const credential: LoginCredential = { username: "ci", password: "secret" };
 * console.log(credential.username); // "ci"
 * ```
 */
export interface LoginCredential {
  /** The user name. */
  username: string;
  /** The password or registry token. */
  password: string;
}

/**
 * Where a login goes and how helpers run.
 *
 * @example A configuration file of its own
 * ```ts
 * import type { DockerLoginOptions } from "@ocipart/ocipart/auth";
 * const options: DockerLoginOptions = { configPath: "/etc/ci-docker/config.json" };
 * console.log(options.configPath); // "/etc/ci-docker/config.json"
 * ```
 */
export interface DockerLoginOptions {
  /** The configuration file; default `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`. */
  configPath?: string;
  /**
   * Runs `docker-credential-<name> store|erase`; default the real helper program. Resolves to
   * `false` when an erase found nothing to erase (anything else counts as changed).
   */
  changeHelper?: (
    name: string,
    serverUrl: string,
    credential: LoginCredential | undefined,
    signal?: AbortSignal,
  ) => Promise<boolean | void>;
  /** Stops the change: a running helper is killed and the file is left as it was. */
  signal?: AbortSignal;
}

/**
 * A store that holds a registry's credential: a credential helper, or the file's `auths`.
 *
 * @example Reading where a logout removed a login from
 * ```ts
 * import type { CredentialStore } from "@ocipart/ocipart/auth";
 * const removedFrom: CredentialStore[] = ["helper", "auths"];
 * console.log(removedFrom.includes("auths")); // true
 * ```
 */
export type CredentialStore = "helper" | "auths";

/**
 * Where a credential was saved, and what was removed.
 *
 * @example Naming where a login went
 * ```ts
 * import type { DockerLoginResult } from "@ocipart/ocipart/auth";
 * const where = (r: DockerLoginResult) => r.savedIn === "helper" ? r.helper : r.configPath;
 * console.log(typeof where); // "function"
 * ```
 */
export interface DockerLoginResult {
  /** The registry host. */
  registry: string;
  /** The configuration file consulted (as given; a symbolic link is written through). */
  configPath: string;
  /** The credential helper the configuration names for the registry, if any. */
  helper: string | undefined;
  /** Where a login saved the credential; `undefined` for an erase. */
  savedIn: CredentialStore | undefined;
  /**
   * The stores that held a credential for the registry and no longer do: for an erase, what
   * was actually removed (empty: nothing was stored); for a login through a helper, `auths`
   * when a plain-text copy was dropped from the file.
   */
  removedFrom: CredentialStore[];
}

/**
 * Saves `credential` for `registry`: with the helper the configuration names for it, else in
 * the file's `auths`, replacing whatever the file held for that registry. Nothing is written
 * when the file cannot be read or parsed.
 *
 * @throws {CredentialError} The configuration is unreadable or malformed, or the helper fails.
 *
 * @example Saving into a configuration file
 * ```ts
 * import { dockerConfigCredentials, saveDockerLogin } from "@ocipart/ocipart/auth";
 * const dir = await Deno.makeTempDir();
 * const configPath = `${dir}/config.json`;
 * await saveDockerLogin("registry.example", { username: "ci", password: "s" }, { configPath });
 * const source = dockerConfigCredentials({ configPath });
 * console.log((await source.get("registry.example")).username); // "ci"
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function saveDockerLogin(
  registry: string,
  credential: LoginCredential,
  options: DockerLoginOptions = {},
): Promise<DockerLoginResult> {
  return await changeLogin(registry, credential, options);
}

/**
 * Erases the credential of `registry`: from the configured helper, and every `auths` entry
 * naming it from the file (the file is rewritten only when it had one). Erasing what is absent
 * succeeds with an empty `removedFrom`. When the helper fails, the plain-text entries are still
 * removed, and the error names the helper that may still hold the login.
 *
 * @throws {CredentialError} The configuration is unreadable or malformed, or the helper fails
 * (after the file's plain-text entries were removed).
 *
 * @example Erasing a saved login
 * ```ts
 * import { eraseDockerLogin, saveDockerLogin } from "@ocipart/ocipart/auth";
 * const dir = await Deno.makeTempDir();
 * const configPath = `${dir}/config.json`;
 * await saveDockerLogin("registry.example", { username: "ci", password: "s" }, { configPath });
 * console.log((await eraseDockerLogin("registry.example", { configPath })).removedFrom); // ["auths"]
 * console.log((await eraseDockerLogin("registry.example", { configPath })).removedFrom); // []
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function eraseDockerLogin(
  registry: string,
  options: DockerLoginOptions = {},
): Promise<DockerLoginResult> {
  return await changeLogin(registry, undefined, options);
}

async function changeLogin(
  registry: string,
  credential: LoginCredential | undefined,
  options: DockerLoginOptions,
): Promise<DockerLoginResult> {
  options.signal?.throwIfAborted();
  const host = registry.toLowerCase();
  const configPath = options.configPath ?? dockerConfigPath();
  if (configPath === undefined) {
    throw new CredentialError("docker config location is unknown (no home directory)");
  }
  const file = await readConfigFile(configPath, options.signal);
  const document = file.document;
  const helper = credentialHelperFor(parseDockerConfig(JSON.stringify(document)), host);
  const key = helperServerUrl(host);
  let helperFailure: unknown;
  let helperChanged = false;
  try {
    helperChanged = helper !== undefined &&
      await changeInHelper(options, helper, key, credential) !== false;
  } catch (err) {
    // A login that failed saves nothing; an erase stopped by its signal changes nothing. An
    // erase the helper refused still removes the plain-text copies, then reports the helper.
    if (credential !== undefined || options.signal?.aborted === true) throw err;
    helperFailure = err;
  }
  const auths = isRecord(document.auths) ? { ...document.auths } : {};
  const stale = authKeysFor(auths, host);
  for (const name of stale) delete auths[name];
  const inFile = credential !== undefined && helper === undefined;
  if (inFile) auths[key] = { auth: basicAuth(credential) };
  if (inFile || stale.length > 0) {
    const text = `${JSON.stringify({ ...document, auths }, null, 2)}\n`;
    await writeConfigFile(file, text, options.signal);
  }
  if (helperFailure !== undefined) throw helperNotErased(helper!, stale.length > 0, helperFailure);
  const removedFrom: CredentialStore[] = [];
  if (credential === undefined && helperChanged) removedFrom.push("helper");
  if (!inFile && stale.length > 0) removedFrom.push("auths");
  const savedIn = credential === undefined ? undefined : inFile ? "auths" : "helper";
  return { registry: host, configPath, helper, savedIn, removedFrom };
}

/** An erase the helper refused: what stays in the helper, and what was removed all the same. */
function helperNotErased(helper: string, fileChanged: boolean, cause: unknown): CredentialError {
  const file = fileChanged
    ? "its plain-text copy was removed from the docker configuration"
    : "the docker configuration held no plain-text copy";
  // The helper's own failure is one of ours (`credential_helper.ts`), its words safe to repeat.
  const failed = cause instanceof CredentialError
    ? cause.message.replace(/^credentials: /, "")
    : `credential helper docker-credential-${helper} erase failed`;
  return new CredentialError(`${failed}, so it may still hold the login; ${file}`, { cause });
}

function changeInHelper(
  options: DockerLoginOptions,
  helper: string,
  serverUrl: string,
  credential: LoginCredential | undefined,
): Promise<boolean | void> {
  const signal = options.signal;
  if (options.changeHelper !== undefined) {
    return options.changeHelper(helper, serverUrl, credential, signal);
  }
  return changeHelperCredential(helper, serverUrl, credential, signal ? { signal } : {});
}

/** base64 of the UTF-8 bytes of `user:password`. */
function basicAuth(credential: LoginCredential): string {
  const bytes = new TextEncoder().encode(`${credential.username}:${credential.password}`);
  return btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join(""));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
