/**
 * Per-registry connection settings: how one registry (`host[:port]`) is reached, overriding the
 * client-wide settings for that registry only. Checked once, when a client is created; looked up
 * by the stack each time it composes a registry's route (`client_stack.ts`).
 *
 * @module
 */
import { isRegistryHost } from "../registry/reference.ts";

/**
 * How one registry is reached; a field that is left out keeps the client-wide setting.
 *
 * @example A plain-HTTP mirror beside an HTTPS registry with a private CA
 * ```ts
 * import { PartedClient, type RegistrySettings } from "@ocipart/ocipart";
 * const mirror: RegistrySettings = { plainHttp: true };
 * const corp: RegistrySettings = { caCerts: ["-----BEGIN CERTIFICATE-----\n…"] };
 * using client = new PartedClient({
 *   registries: { "localhost:5000": mirror, "registry.corp.example": corp },
 * });
 * ```
 */
export interface RegistrySettings {
  /** Speak plain HTTP to this registry (true) or HTTPS (false). */
  plainHttp?: boolean;
  /** HTTPS without verifying this registry's certificate (nor its storage redirects'). */
  insecureTls?: boolean;
  /**
   * Extra PEM roots trusted for this registry and its storage redirects, instead of the
   * client-wide `caCerts`.
   */
  caCerts?: string[];
}

/** A registry's settings with the client-wide ones filled in. */
export interface ResolvedSettings {
  /** Plain HTTP instead of HTTPS. */
  readonly plainHttp: boolean;
  /** HTTPS without certificate verification. */
  readonly insecureTls: boolean;
  /** Extra PEM roots, if any. */
  readonly caCerts: readonly string[] | undefined;
}

const FIELDS: ReadonlySet<string> = new Set(["plainHttp", "insecureTls", "caCerts"]);

/**
 * Checks a `registries` option and returns it keyed by lower-case `host[:port]`, with copies of
 * the settings. `owner` prefixes the messages (e.g. `PartedClient`).
 *
 * @throws {TypeError} The option, an entry or a field has the wrong type, or a field is unknown.
 * @throws {RangeError} A key is not a registry `host[:port]`, two keys name one registry, or an
 * entry asks for plain HTTP together with a TLS setting.
 *
 * @example
 * ```ts
 * import { checkRegistrySettings } from "./registry_settings.ts";
 * const table = checkRegistrySettings({ "Mirror.Example:5000": { plainHttp: true } }, "client");
 * console.log([...table.keys()]); // [ "mirror.example:5000" ]
 * ```
 */
export function checkRegistrySettings(
  value: unknown,
  owner: string,
): ReadonlyMap<string, Readonly<RegistrySettings>> {
  const table = new Map<string, Readonly<RegistrySettings>>();
  if (value === undefined) return table;
  if (!isPlainObject(value)) {
    throw new TypeError(`${owner}: registries must be an object keyed by registry host[:port]`);
  }
  for (const [key, entry] of Object.entries(value)) {
    if (!isRegistryHost(key)) throw new RangeError(notAHostMessage(owner, key));
    const where = `${owner}: registries[${JSON.stringify(key)}]`;
    const host = key.toLowerCase();
    if (table.has(host)) throw new RangeError(`${where}: names a registry already listed`);
    table.set(host, checkEntry(entry, where));
  }
  return table;
}

/**
 * The key is not echoed: it may be a URL carrying a user name or a token. When it parses as a
 * URL the host alone is suggested, which is what the key should have been.
 */
function notAHostMessage(owner: string, key: string): string {
  const host = hostOfUrl(key);
  const hint = host ? `; write ${JSON.stringify(host)}` : "";
  return `${owner}: a registries key is not a registry host[:port] (no scheme, path or user)${hint}`;
}

function hostOfUrl(text: string): string | undefined {
  try {
    const host = new URL(text).host;
    return isRegistryHost(host) ? host : undefined;
  } catch {
    return undefined;
  }
}

function checkEntry(entry: unknown, where: string): Readonly<RegistrySettings> {
  if (!isPlainObject(entry)) throw new TypeError(`${where}: must be an object of settings`);
  for (const [field, value] of Object.entries(entry)) {
    if (!FIELDS.has(field)) {
      throw new TypeError(`${where}: unknown setting ${JSON.stringify(field)}`);
    }
    if (value === undefined) continue;
    if (field !== "caCerts" && typeof value !== "boolean") {
      throw new TypeError(`${where}.${field}: must be a boolean, not ${JSON.stringify(value)}`);
    }
    if (
      field === "caCerts" && !(Array.isArray(value) && value.every((c) => typeof c === "string"))
    ) {
      throw new TypeError(`${where}.caCerts: must be an array of PEM strings`);
    }
  }
  const { plainHttp, insecureTls, caCerts } = entry as RegistrySettings;
  if (plainHttp === true && (insecureTls === true || caCerts !== undefined)) {
    throw new RangeError(
      `${where}: plainHttp cannot go with insecureTls or caCerts (TLS settings)`,
    );
  }
  return Object.freeze({
    ...(plainHttp === undefined ? {} : { plainHttp }),
    ...(insecureTls === undefined ? {} : { insecureTls }),
    ...(caCerts === undefined ? {} : { caCerts: Object.freeze([...caCerts]) as string[] }),
  });
}

/**
 * The settings of `registry`: its entry of `table` over the client-wide `defaults`.
 *
 * @example
 * ```ts
 * import { checkRegistrySettings, settingsOf } from "./registry_settings.ts";
 * const table = checkRegistrySettings({ "mirror.example": { plainHttp: true } }, "client");
 * const defaults = { plainHttp: false, insecureTls: false, caCerts: undefined };
 * console.log(settingsOf("Mirror.example", defaults, table).plainHttp); // true
 * console.log(settingsOf("ghcr.io", defaults, table).plainHttp); // false
 * ```
 */
export function settingsOf(
  registry: string,
  defaults: ResolvedSettings,
  table: ReadonlyMap<string, Readonly<RegistrySettings>>,
): ResolvedSettings {
  const own = table.get(registry.toLowerCase());
  if (own === undefined) return defaults;
  return {
    plainHttp: own.plainHttp ?? defaults.plainHttp,
    insecureTls: own.insecureTls ?? defaults.insecureTls,
    caCerts: own.caCerts ?? defaults.caCerts,
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
