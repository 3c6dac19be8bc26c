/**
 * The mirrors of the containers registries configuration (`registries.conf`, the TOML version 2
 * format podman, skopeo and buildah read): where the file is, and its `[[registry]]` and
 * `[[registry.mirror]]` tables as a {@linkcode MirrorTable} for `PartedClient`'s `mirrors`.
 *
 * What is read: each `[[registry]]`'s `prefix` (default: its `location`) and
 * `mirror-by-digest-only`, and each of its mirrors' `location`, `insecure` and
 * `pull-from-mirror` (`all` when absent, as the format defines; `digest-only`, `tag-only`).
 * What is not: a `location` that rewrites the registry itself, `blocked` and the registry's own
 * `insecure` (ocipart reads from the registry the reference names, with the client's own
 * scheme and TLS settings), the drop-in directories `registries.conf.d`, and every other key,
 * which is ignored.
 *
 * @module
 */
import { stat } from "node:fs/promises";
import { InputFileError, readInputFile } from "../auth/input_file.ts";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parse, TomlError } from "smol-toml";
import { LocalFileError } from "../errors/kinds.ts";
import {
  checkMirrorTable,
  isMirrorLocation,
  isMirrorPrefix,
  type MirrorOptions,
  type MirrorTable,
  type PullFromMirror,
} from "../remote/mirror_table.ts";
import { osReason } from "./fs_reason.ts";

/** The system-wide file, read when the user has none of their own. */
export const SYSTEM_REGISTRIES_CONF = "/etc/containers/registries.conf";

/**
 * Where the registries configuration is read from, and whether it must exist.
 *
 * @example A location
 * ```ts
 * import type { RegistriesConfLocation } from "@ocipart/ocipart/parted";
 * const where: RegistriesConfLocation = { path: "/etc/containers/registries.conf", required: false };
 * console.log(where.required); // false
 * ```
 */
export interface RegistriesConfLocation {
  /** The file. */
  path: string;
  /** True when the file was named explicitly (a missing one is then an error). */
  required: boolean;
}

/**
 * Options of {@linkcode registriesConfLocation}.
 *
 * @example An environment of its own
 * ```ts
 * import type { RegistriesConfLocationOptions } from "@ocipart/ocipart/parted";
 * const options: RegistriesConfLocationOptions = { env: () => undefined };
 * console.log(typeof options.env); // "function"
 * ```
 */
export interface RegistriesConfLocationOptions {
  /** Environment lookup (`CONTAINERS_REGISTRIES_CONF`, `HOME`); default the process's. */
  env?: (name: string) => string | undefined;
  /**
   * Whether a file may be looked at; a default location it refuses counts as absent (e.g. a
   * permission not granted). Default: every file.
   */
  readable?: (path: string) => boolean;
}

function processEnv(name: string): string | undefined {
  try {
    return process.env[name];
  } catch {
    return undefined;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * Where the containers tools read their registries configuration: `$CONTAINERS_REGISTRIES_CONF`
 * when set (required), else `$HOME/.config/containers/registries.conf` when it exists, else
 * `/etc/containers/registries.conf` (absent is fine); `undefined` when there is none to read.
 *
 * @example The file a variable names
 * ```ts
 * import { registriesConfLocation } from "@ocipart/ocipart/parted";
 * const env = (name: string) => name === "CONTAINERS_REGISTRIES_CONF" ? "/ci/registries.conf" : undefined;
 * console.log(await registriesConfLocation({ env })); // { path: "/ci/registries.conf", required: true }
 * ```
 */
export async function registriesConfLocation(
  options: RegistriesConfLocationOptions = {},
): Promise<RegistriesConfLocation | undefined> {
  const env = options.env ?? processEnv;
  const readable = options.readable ?? (() => true);
  const named = env("CONTAINERS_REGISTRIES_CONF");
  if (named) return { path: named, required: true };
  let home = env("HOME");
  if (!home) {
    try {
      home = homedir();
    } catch {
      home = undefined;
    }
  }
  if (home) {
    const user = join(home, ".config", "containers", "registries.conf");
    if (readable(user) && await isFile(user)) return { path: user, required: false };
  }
  return readable(SYSTEM_REGISTRIES_CONF)
    ? { path: SYSTEM_REGISTRIES_CONF, required: false }
    : undefined;
}

/**
 * Reads the mirrors of the registries configuration at `location` (see
 * {@linkcode registriesConfLocation}); a missing file that is not `required` has none. Only a
 * regular file of at most 4 MiB is read; `options.signal` stops the read.
 *
 * @throws {LocalFileError} The file cannot be read, is not a regular file, is larger than
 * 4 MiB, is not TOML, or has an entry this reader
 * cannot use (the message names the entry, e.g. `registry[1].mirror[0].location`).
 *
 * @example Mirrors for a registry
 * ```ts
 * import { PartedClient, readRegistriesConf } from "@ocipart/ocipart/parted";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/registries.conf`, `
 * [[registry]]
 * location = "ghcr.io"
 * [[registry.mirror]]
 * location = "cache.lan:5000"
 * `);
 * const mirrors = await readRegistriesConf({ path: `${dir}/registries.conf`, required: true });
 * console.log(mirrors["ghcr.io"][0].pullFromMirror); // "all"
 * using client = new PartedClient({ mirrors });
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readRegistriesConf(
  location: RegistriesConfLocation,
  options: { signal?: AbortSignal } = {},
): Promise<MirrorTable> {
  let text: string;
  try {
    text = await readInputFile(location.path, { signal: options.signal });
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (err instanceof InputFileError) {
      throw new LocalFileError(`registries configuration: ${err.message}`, { cause: err });
    }
    const code = (err as { code?: unknown })?.code;
    if (!location.required && (code === "ENOENT" || code === "ENOTDIR")) return {};
    throw new LocalFileError(`registries configuration: cannot be read${osReason(err)}`, {
      cause: err,
    });
  }
  return parseRegistriesConf(text);
}

/**
 * The mirrors of a registries configuration's text.
 *
 * @throws {LocalFileError} The text is not TOML, or an entry cannot be used.
 *
 * @example A namespace mirrored by digest only
 * ```ts
 * import { parseRegistriesConf } from "@ocipart/ocipart/parted";
 * const mirrors = parseRegistriesConf(`
 * unqualified-search-registries = ["docker.io"]
 * [[registry]]
 * prefix = "ghcr.io/acme"
 * location = "ghcr.io/acme"
 * mirror-by-digest-only = true
 * [[registry.mirror]]
 * location = "cache.lan/acme"
 * insecure = true
 * `);
 * console.log(mirrors["ghcr.io/acme"]); // [ { location: "cache.lan/acme", pullFromMirror: "digest-only", plainHttp: false, insecure: true } ]
 * ```
 */
export function parseRegistriesConf(text: string): MirrorTable {
  let document: Record<string, unknown>;
  try {
    document = parse(text);
  } catch (err) {
    // The parser's message quotes the file: only the position is kept.
    const where = err instanceof TomlError ? ` (line ${err.line}, column ${err.column})` : "";
    throw new LocalFileError(`registries configuration: not valid TOML${where}`, { cause: err });
  }
  const registries = document.registry ?? [];
  if (!Array.isArray(registries)) fail("registry", "must be an array of tables ([[registry]])");
  const table: Record<string, MirrorOptions[]> = {};
  registries.forEach((entry, i) => {
    const { prefix, mirrors } = registryEntry(entry, `registry[${i}]`);
    if (Object.hasOwn(table, prefix)) fail(`registry[${i}].prefix`, "is given twice");
    table[prefix] = mirrors;
  });
  try {
    return checkMirrorTable(table, "registries configuration");
  } catch (err) {
    // Every entry was checked above; this is a last guard that keeps the values out.
    throw new LocalFileError("registries configuration: an entry cannot be used", { cause: err });
  }
}

function fail(key: string, problem: string): never {
  throw new LocalFileError(`registries configuration: ${key} ${problem}`);
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** One `[[registry]]`: its prefix and the mirrors it gives. */
function registryEntry(
  entry: unknown,
  key: string,
): { prefix: string; mirrors: MirrorOptions[] } {
  if (!isTable(entry)) fail(key, "must be a table");
  const location = optionalString(entry.location, `${key}.location`);
  const prefix = optionalString(entry.prefix, `${key}.prefix`) ?? location;
  if (prefix === undefined || prefix === "") fail(key, "needs a prefix or a location");
  const cleaned = cleanLocation(prefix, `${key}.prefix`);
  if (!isMirrorPrefix(cleaned)) {
    fail(`${key}.prefix`, "is not host[:port][/namespace] or *.domain");
  }
  const byDigestOnly = optionalBoolean(
    entry["mirror-by-digest-only"],
    `${key}.mirror-by-digest-only`,
  );
  const list = entry.mirror ?? [];
  if (!Array.isArray(list)) {
    fail(`${key}.mirror`, "must be an array of tables ([[registry.mirror]])");
  }
  const mirrors = list.map((mirror, j) => mirrorEntry(mirror, `${key}.mirror[${j}]`, byDigestOnly));
  return { prefix: cleaned, mirrors };
}

/** One `[[registry.mirror]]`. */
function mirrorEntry(
  entry: unknown,
  key: string,
  byDigestOnly: boolean | undefined,
): MirrorOptions {
  if (!isTable(entry)) fail(key, "must be a table");
  const location = optionalString(entry.location, `${key}.location`);
  if (location === undefined || location === "") fail(`${key}.location`, "is missing");
  const cleaned = cleanLocation(location, `${key}.location`);
  if (!isMirrorLocation(cleaned)) fail(`${key}.location`, "is not host[:port][/namespace]");
  const insecure = optionalBoolean(entry.insecure, `${key}.insecure`) ?? false;
  const mode = optionalString(entry["pull-from-mirror"], `${key}.pull-from-mirror`);
  if (mode !== undefined && mode !== "" && byDigestOnly !== undefined) {
    fail(`${key}.pull-from-mirror`, "cannot be set where the registry sets mirror-by-digest-only");
  }
  let pullFromMirror: PullFromMirror;
  if (byDigestOnly === true) pullFromMirror = "digest-only";
  else if (mode === undefined || mode === "" || mode === "all") pullFromMirror = "all";
  else if (mode === "digest-only" || mode === "tag-only") pullFromMirror = mode;
  else fail(`${key}.pull-from-mirror`, "must be all, digest-only or tag-only");
  return { location: cleaned, pullFromMirror, plainHttp: false, insecure };
}

/** A location or prefix without trailing slashes; a URL scheme is refused. */
function cleanLocation(value: string, key: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) fail(key, "must not have a URL scheme");
  return value.replace(/\/+$/, "");
}

function optionalString(value: unknown, key: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") fail(key, "must be a string");
  return value;
}

function optionalBoolean(value: unknown, key: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") fail(key, "must be true or false");
  return value;
}
