/**
 * Saving and erasing a registry's credential in the docker configuration, as `docker login`
 * and `docker logout` do: through the configured credential helper when there is one, else as
 * `auths.<registry>.auth` (base64 of `user:password`) in the file, which is rewritten
 * atomically with mode 0600 and keeps every other key.
 *
 * @module
 */
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { CredentialError } from "../errors/kinds.ts";
import { changeHelperCredential } from "./credential_helper.ts";
import {
  credentialHelperFor,
  dockerConfigPath,
  helperServerUrl,
  parseDockerConfig,
} from "./docker_config.ts";

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
  /** Runs `docker-credential-<name> store|erase`; default the real helper program. */
  changeHelper?: (
    name: string,
    serverUrl: string,
    credential: LoginCredential | undefined,
  ) => Promise<void>;
}

/**
 * Where a credential was saved or erased.
 *
 * @example Naming where a login went
 * ```ts
 * import type { DockerLoginResult } from "@ocipart/ocipart/auth";
 * const where = (r: DockerLoginResult) => r.helper ?? r.configPath;
 * console.log(typeof where); // "function"
 * ```
 */
export interface DockerLoginResult {
  /** The registry host. */
  registry: string;
  /** The configuration file consulted. */
  configPath: string;
  /** The credential helper that holds the credential, when one is configured. */
  helper: string | undefined;
}

/**
 * Saves `credential` for `registry`: with the helper the configuration names for it, else in
 * the file's `auths`. Nothing is written when the file cannot be read or parsed.
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
 * Erases the credential of `registry`: from the configured helper, and its `auths` entry from
 * the file (the file is rewritten only when it had one). Erasing what is absent succeeds.
 *
 * @throws {CredentialError} The configuration is unreadable or malformed, or the helper fails.
 *
 * @example Erasing a saved login
 * ```ts
 * import { eraseDockerLogin, saveDockerLogin } from "@ocipart/ocipart/auth";
 * const dir = await Deno.makeTempDir();
 * const configPath = `${dir}/config.json`;
 * await saveDockerLogin("registry.example", { username: "ci", password: "s" }, { configPath });
 * await eraseDockerLogin("registry.example", { configPath });
 * console.log(await Deno.readTextFile(configPath)); // '{\n  "auths": {}\n}\n'
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
  const host = registry.toLowerCase();
  const configPath = options.configPath ?? dockerConfigPath();
  if (configPath === undefined) {
    throw new CredentialError("docker config location is unknown (no home directory)");
  }
  const document = await readDocument(configPath);
  const helper = credentialHelperFor(parseDockerConfig(JSON.stringify(document)), host);
  const key = helperServerUrl(host);
  if (helper !== undefined) {
    const change = options.changeHelper ??
      ((name, serverUrl, value) => changeHelperCredential(name, serverUrl, value));
    await change(helper, key, credential);
  }
  const auths = isRecord(document.auths) ? { ...document.auths } : {};
  const hadEntry = Object.hasOwn(auths, key);
  if (credential !== undefined && helper === undefined) {
    const auth = btoa(String.fromCodePoint(
      ...new TextEncoder().encode(`${credential.username}:${credential.password}`),
    ));
    auths[key] = { ...(isRecord(auths[key]) ? auths[key] : {}), auth };
  } else if (credential === undefined && hadEntry) {
    delete auths[key];
  } else {
    return { registry: host, configPath, helper };
  }
  await writeAtomically(configPath, `${JSON.stringify({ ...document, auths }, null, 2)}\n`);
  return { registry: host, configPath, helper };
}

/** The configuration as a JSON object; `{}` when the file does not exist. */
async function readDocument(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as { code?: unknown })?.code;
    if (code === "ENOENT") return {};
    throw new CredentialError("docker config could not be read", { cause: err });
  }
  parseDockerConfig(text); // refuses a malformed file before anything is written
  return JSON.parse(text) as Record<string, unknown>;
}

/** Writes `text` to a sibling temporary file with mode 0600, then renames it onto `path`. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const temporary = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const file = await open(temporary, "wx", 0o600);
    try {
      await file.writeFile(text, "utf8");
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (err) {
    await rm(temporary, { force: true }).catch(() => {});
    throw new CredentialError("docker config could not be written", { cause: err });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
