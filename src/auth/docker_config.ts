/**
 * Credentials from the docker configuration file (`$DOCKER_CONFIG/config.json`, else
 * `~/.docker/config.json`) and the credential helpers it names.
 *
 * @module
 */
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { CredentialError } from "../errors/kinds.ts";
import type { Credential, CredentialSource } from "./credential.ts";
import { runCredentialHelper } from "./credential_helper.ts";
import { InputFileError, readInputFile } from "./input_file.ts";

/** The server address under which the default public hub's credential is stored. */
export const DOCKER_HUB_SERVER = "https://index.docker.io/v1/";

/** Host names that all mean the default public hub. */
export const DOCKER_HUB_HOSTS: readonly string[] = Object.freeze([
  "docker.io",
  "index.docker.io",
  "registry-1.docker.io",
  "registry.hub.docker.com",
]);

/** One `auths` entry of the docker configuration. */
export interface DockerAuthEntry {
  /** base64 of `user:password`. */
  auth?: string;
  /** Basic user. */
  username?: string;
  /** Basic secret. */
  password?: string;
  /** An OAuth2 refresh token: refused. */
  identitytoken?: string;
  /** A bearer token presented verbatim. */
  registrytoken?: string;
}

/** The fields of the docker configuration this package reads. */
export interface DockerConfig {
  /** Stored credentials by server address. */
  auths?: Record<string, DockerAuthEntry>;
  /** The default credential helper (`docker-credential-<credsStore>`). */
  credsStore?: string;
  /** Credential helpers by registry host. */
  credHelpers?: Record<string, string>;
}

/**
 * Runs a credential helper; replaceable for embedding.
 *
 * @example Answering helper lookups in process
 * ```ts
 * import { dockerConfigCredentials, type HelperRunner } from "@ocipart/ocipart/auth";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify({ credsStore: "vault" }));
 * const runHelper: HelperRunner = (name, serverUrl) =>
 *   Promise.resolve({ username: `${name}-user`, password: serverUrl });
 * const source = dockerConfigCredentials({ configPath: `${dir}/config.json`, runHelper });
 * console.log((await source.get("ghcr.io")).username); // "vault-user"
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export type HelperRunner = (
  name: string,
  serverUrl: string,
  signal?: AbortSignal,
) => Promise<Credential>;

/**
 * Options of {@linkcode dockerConfigCredentials}.
 *
 * @example A configuration in a directory of its own
 * ```ts
 * import { dockerConfigCredentials, type DockerConfigOptions } from "@ocipart/ocipart/auth";
 * const options: DockerConfigOptions = {
 *   env: (name) => (name === "DOCKER_CONFIG" ? "/etc/ci-docker" : undefined),
 * };
 * const source = dockerConfigCredentials(options); // reads /etc/ci-docker/config.json
 * ```
 */
export interface DockerConfigOptions {
  /** Reads the configuration from this file instead of the standard location. */
  configPath?: string;
  /** Environment lookup (`DOCKER_CONFIG`, `HOME`); default reads the process environment. */
  env?: (name: string) => string | undefined;
  /** Runs `docker-credential-<name> get`; default {@linkcode runCredentialHelper}. */
  runHelper?: HelperRunner;
}

/**
 * A `CredentialError` about the configuration file itself: it cannot be read, is not JSON, or
 * a field has the wrong shape. A program can name the file it was reading (the message does
 * not, so that it never carries a local path).
 *
 * @example Telling a broken file from a failing helper
 * ```ts
 * import { DockerConfigFileError, dockerConfigCredentials } from "@ocipart/ocipart/auth";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/config.json`, "{ not json");
 * try {
 *   await dockerConfigCredentials({ configPath: `${dir}/config.json` }).get("registry.example");
 * } catch (err) {
 *   console.log(err instanceof DockerConfigFileError); // true
 * }
 * ```
 */
export class DockerConfigFileError extends CredentialError {}

/**
 * The message of a docker configuration that could not be read: what is wrong with the file
 * when it is not one that can be read (a named pipe, a device, too large), never its path.
 *
 * @example A named pipe
 * ```ts
 * import { InputFileError } from "@ocipart/ocipart/auth";
 * import { unreadableConfig } from "./docker_config.ts";
 * console.log(unreadableConfig(new InputFileError("not a regular file", "a named pipe (FIFO)")));
 * // "docker config could not be read: not a regular file but a named pipe (FIFO)"
 * ```
 */
export function unreadableConfig(err: unknown): string {
  const what = "docker config could not be read";
  return err instanceof InputFileError ? `${what}: ${err.message}` : what;
}

/** Reads the process environment; no permission to do so reads as unset. */
function processEnv(name: string): string | undefined {
  try {
    return process.env[name];
  } catch {
    return undefined;
  }
}

/**
 * Where the docker configuration lives: `$DOCKER_CONFIG/config.json`, else
 * `$HOME/.docker/config.json`; `undefined` when no home directory is known.
 *
 * @example Where the configuration is read from
 * ```ts
 * import { dockerConfigPath } from "@ocipart/ocipart/auth";
 * const env = (name: string) => (name === "DOCKER_CONFIG" ? "/etc/ci-docker" : undefined);
 * console.log(dockerConfigPath(env)); // "/etc/ci-docker/config.json"
 * ```
 */
export function dockerConfigPath(
  env: (name: string) => string | undefined = processEnv,
): string | undefined {
  const dir = env("DOCKER_CONFIG");
  if (dir) return join(dir, "config.json");
  let home = env("HOME");
  if (!home) {
    try {
      home = homedir();
    } catch {
      return undefined;
    }
  }
  return home ? join(home, ".docker", "config.json") : undefined;
}

/**
 * Parses the text of a docker configuration file.
 *
 * An empty or blank text is an empty configuration, as docker reads it.
 *
 * @throws {CredentialError} The text is not a JSON object or a known field has the wrong type.
 * The parser's text is not kept: it may quote a secret.
 *
 * @example
 * ```ts
 * import { parseDockerConfig } from "./docker_config.ts";
 * const config = parseDockerConfig('{"auths":{"registry.example":{"auth":"dTpw"}}}');
 * console.log(Object.keys(config.auths ?? {})); // ["registry.example"]
 * ```
 */
export function parseDockerConfig(text: string): DockerConfig {
  // docker reads an empty (or blank) file as an empty configuration.
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new DockerConfigFileError("docker config is not valid JSON");
  }
  if (!isRecord(parsed)) throw new DockerConfigFileError("docker config is not a JSON object");
  const config: DockerConfig = {};
  if (parsed.auths !== undefined && parsed.auths !== null) {
    if (!isRecord(parsed.auths)) {
      throw new DockerConfigFileError("docker config: auths is not an object");
    }
    const auths: Record<string, DockerAuthEntry> = {};
    for (const [server, entry] of Object.entries(parsed.auths)) {
      if (!isRecord(entry)) {
        throw new DockerConfigFileError("docker config: auths entry is not an object");
      }
      const out: DockerAuthEntry = {};
      for (
        const field of ["auth", "username", "password", "identitytoken", "registrytoken"] as const
      ) {
        const value = entry[field];
        if (value === undefined || value === null) continue;
        if (typeof value !== "string") {
          throw new DockerConfigFileError(
            `docker config: auths entry field ${field} is not a string`,
          );
        }
        out[field] = value;
      }
      auths[server] = out;
    }
    config.auths = auths;
  }
  if (parsed.credsStore !== undefined && parsed.credsStore !== null) {
    if (typeof parsed.credsStore !== "string") {
      throw new DockerConfigFileError("docker config: credsStore is not a string");
    }
    config.credsStore = parsed.credsStore;
  }
  if (parsed.credHelpers !== undefined && parsed.credHelpers !== null) {
    if (!isRecord(parsed.credHelpers)) {
      throw new DockerConfigFileError("docker config: credHelpers is not an object");
    }
    const helpers: Record<string, string> = {};
    for (const [server, name] of Object.entries(parsed.credHelpers)) {
      if (typeof name !== "string") {
        throw new DockerConfigFileError("docker config: credHelpers entry is not a string");
      }
      helpers[server] = name;
    }
    config.credHelpers = helpers;
  }
  return config;
}

/**
 * The credential an `auths` entry holds: `registrytoken` as a registry token, else the base64
 * `auth` field, else `username`/`password`.
 *
 * @throws {CredentialError} The entry holds an identity token (refused, never exchanged and
 * never downgraded to anonymous), or its `auth` field does not decode to `user:password`.
 *
 * @example
 * ```ts
 * import { credentialFromAuthEntry } from "./docker_config.ts";
 * console.log(credentialFromAuthEntry({ auth: btoa("ci:secret") })); // { username: "ci", password: "secret" }
 * ```
 */
export function credentialFromAuthEntry(entry: DockerAuthEntry): Credential {
  if (entry.identitytoken) {
    throw new CredentialError("identity tokens are not supported; log in with a password or token");
  }
  if (entry.registrytoken) return { registryToken: entry.registrytoken };
  if (entry.auth) {
    let decoded: string;
    try {
      const binary = atob(entry.auth.trim());
      decoded = new TextDecoder("utf-8", { fatal: true }).decode(
        Uint8Array.from(binary, (c) => c.charCodeAt(0)),
      );
    } catch {
      throw new DockerConfigFileError("docker config: auth field is not valid base64");
    }
    const colon = decoded.indexOf(":");
    if (colon < 0) {
      throw new DockerConfigFileError("docker config: auth field is not user:password");
    }
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (entry.username || entry.password) {
    return { username: entry.username ?? "", password: entry.password ?? "" };
  }
  return {};
}

/** The host of a configuration key: scheme and path dropped, lowercased. */
function keyHost(key: string): string {
  let host = key.trim().toLowerCase();
  const scheme = host.indexOf("://");
  if (scheme >= 0) host = host.slice(scheme + 3);
  const slash = host.indexOf("/");
  if (slash >= 0) host = host.slice(0, slash);
  return host;
}

function isHubHost(host: string): boolean {
  return DOCKER_HUB_HOSTS.includes(host);
}

/** Whether a configuration key names the (lowercased) registry host. */
function keyNames(key: string, host: string): boolean {
  const other = keyHost(key);
  return other === host || (isHubHost(host) && isHubHost(other));
}

/** Finds the value stored for `host`: an exact key first, then a key naming the same host. */
function lookup<T>(table: Record<string, T> | undefined, host: string): T | undefined {
  if (table === undefined) return undefined;
  const exact = isHubHost(host) ? [DOCKER_HUB_SERVER, ...DOCKER_HUB_HOSTS] : [host];
  for (const key of exact) {
    if (Object.hasOwn(table, key)) return table[key];
  }
  const key = Object.keys(table).find((candidate) => keyNames(candidate, host));
  return key === undefined ? undefined : table[key];
}

/**
 * Every key of an `auths` (or `credHelpers`) table that the lookup of this module would match
 * for `registryHost`: the host itself, any spelling with a scheme or path
 * (`https://registry.example/v1/`) or in other case, and for the public hub all its names.
 * A login replaces, and a logout removes, all of them.
 *
 * @example Every spelling of one registry
 * ```ts
 * import { authKeysFor } from "./docker_config.ts";
 * const auths = { "r.example": {}, "https://r.example/v1/": {}, "r.example:5000": {} };
 * console.log(authKeysFor(auths, "r.example")); // ["r.example", "https://r.example/v1/"]
 * ```
 */
export function authKeysFor(table: Record<string, unknown>, registryHost: string): string[] {
  const host = registryHost.toLowerCase();
  return Object.keys(table).filter((key) => keyNames(key, host));
}

/**
 * The server address given to a credential helper for a registry host: the hub's special
 * address for the public hub, the host itself otherwise.
 *
 * @example
 * ```ts
 * import { helperServerUrl } from "./docker_config.ts";
 * console.log(helperServerUrl("registry-1.docker.io")); // "https://index.docker.io/v1/"
 * console.log(helperServerUrl("ghcr.io")); // "ghcr.io"
 * ```
 */
export function helperServerUrl(registryHost: string): string {
  const host = registryHost.toLowerCase();
  return isHubHost(host) ? DOCKER_HUB_SERVER : host;
}

/**
 * The credential helper a configuration names for a registry host: its `credHelpers` entry,
 * else `credsStore`; undefined when the credential lives in `auths`.
 *
 * @example
 * ```ts
 * import { credentialHelperFor } from "./docker_config.ts";
 * const config = { credsStore: "pass", credHelpers: { "ghcr.io": "gh" } };
 * console.log(credentialHelperFor(config, "ghcr.io"), credentialHelperFor(config, "quay.io"));
 * // "gh" "pass"
 * ```
 */
export function credentialHelperFor(
  config: DockerConfig,
  registryHost: string,
): string | undefined {
  return lookup(config.credHelpers, registryHost.toLowerCase()) || config.credsStore || undefined;
}

/**
 * Resolves a registry host's credential from a parsed configuration: a `credHelpers` entry for
 * the host, else `credsStore`, else the `auths` entry; anonymous (`{}`) when nothing matches.
 *
 * @example
 * ```ts
 * import { resolveDockerCredential } from "./docker_config.ts";
 * const config = { auths: { "https://registry.example/v1/": { username: "u", password: "p" } } };
 * console.log(await resolveDockerCredential(config, "registry.example")); // { username: "u", password: "p" }
 * ```
 */
export async function resolveDockerCredential(
  config: DockerConfig,
  registryHost: string,
  options: { runHelper?: HelperRunner; signal?: AbortSignal } = {},
): Promise<Credential> {
  const host = registryHost.toLowerCase();
  const helper = credentialHelperFor(config, host);
  if (helper) {
    const run = options.runHelper ??
      ((name, serverUrl, signal) =>
        runCredentialHelper(name, serverUrl, signal === undefined ? {} : { signal }));
    return await run(helper, helperServerUrl(host), options.signal);
  }
  const entry = lookup(config.auths, host);
  return entry === undefined ? {} : credentialFromAuthEntry(entry);
}

/**
 * The credential source of docker-compatible tools: reads the configuration file on every
 * lookup (so a login between transfers is seen), asks `credHelpers`/`credsStore` through the
 * `docker-credential-<name> get` protocol, and understands the `auths` entries. A missing file
 * or an unknown registry yields anonymous without error; an unreadable or malformed file, an
 * identity token, or a failing helper is a `CredentialError`.
 *
 * @example Reading a configuration file
 * ```ts
 * import { dockerConfigCredentials } from "@ocipart/ocipart/auth";
 * const dir = await Deno.makeTempDir();
 * const auths = { "ghcr.io": { auth: btoa("ci:secret") } };
 * await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify({ auths }));
 * // Without configPath: $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
 * const source = dockerConfigCredentials({ configPath: `${dir}/config.json` });
 * console.log((await source.get("ghcr.io")).username); // "ci"
 * console.log(await source.get("quay.io")); // {} (anonymous)
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function dockerConfigCredentials(options: DockerConfigOptions = {}): CredentialSource {
  return {
    async get(registryHost: string, signal?: AbortSignal): Promise<Credential> {
      signal?.throwIfAborted();
      const path = options.configPath ?? dockerConfigPath(options.env ?? processEnv);
      if (path === undefined) return {};
      let text: string;
      try {
        text = await readInputFile(path, { signal });
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const code = (err as NodeJS.ErrnoException)?.code;
        if (code === "ENOENT" || code === "ENOTDIR") return {};
        throw new DockerConfigFileError(unreadableConfig(err), { cause: err });
      }
      const config = parseDockerConfig(text);
      return await resolveDockerCredential(config, registryHost, {
        ...(options.runHelper ? { runHelper: options.runHelper } : {}),
        ...(signal ? { signal } : {}),
      });
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
