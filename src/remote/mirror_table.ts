/**
 * The mirrors a client may read from: the table a caller gives (registry or namespace →
 * mirrors), its validation, the rule that picks the mirrors of one reference (the longest
 * matching prefix, as the containers registries configuration chooses its `[[registry]]`), and
 * the one translation of a mirror's `plainHttp`/`insecure` into the per-registry settings of
 * its host ({@linkcode withMirrorHosts}): a mirror host is reached like any registry host, by
 * its settings (`registry_settings.ts`).
 *
 * @module
 */
import { isRegistryHost, isRepositoryName, type Reference } from "../registry/reference.ts";
import { checkRegistrySettings, type RegistrySettings } from "./registry_settings.ts";

/**
 * Which pulls may use a mirror.
 *
 * A tag is always resolved at the registry while the registry answers; the modes say what a
 * mirror may serve besides, and whether it may stand in for the registry's answer to a tag when
 * the registry cannot be reached.
 *
 * - `"digest-only"`: every part, and the manifest of a pull by digest; never a tag.
 * - `"all"`: also answers for a tag when the registry cannot be reached (the client names it).
 * - `"tag-only"`: only pulls by tag use it (answering for the tag as `"all"` does).
 *
 * @example The default mode
 * ```ts
 * import type { PullFromMirror } from "@ocipart/ocipart/parted";
 * const mode: PullFromMirror = "digest-only";
 * console.log(mode); // "digest-only"
 * ```
 */
export type PullFromMirror = "digest-only" | "all" | "tag-only";

/**
 * One mirror of a registry (or of a namespace of it).
 *
 * @example A pull-through cache on the local network, over plain HTTP
 * ```ts
 * import type { MirrorOptions } from "@ocipart/ocipart/parted";
 * const cache: MirrorOptions = { location: "cache.lan:5000", plainHttp: true };
 * console.log(cache.pullFromMirror ?? "digest-only"); // "digest-only"
 * ```
 */
export interface MirrorOptions {
  /**
   * `host[:port]`, optionally followed by a namespace that replaces the matched prefix
   * (`mirror.lan/ghcr`: `ghcr.io/org/model` is read as `mirror.lan/ghcr/org/model`).
   */
  location: string;
  /** Which pulls use the mirror; default `"digest-only"`. */
  pullFromMirror?: PullFromMirror;
  /**
   * Plain HTTP to this mirror's host: the same as `registries: { [host]: { plainHttp: true } }`.
   * Default false: the host is reached as its settings say (its `registries` entry, else the
   * client-wide options).
   */
  plainHttp?: boolean;
  /**
   * As the containers configuration's `insecure`: HTTPS without verifying the certificate of the
   * mirror's host (its `registries` settings become `{ plainHttp: false, insecureTls: true }`),
   * and plain HTTP when it does not speak TLS. Default false.
   */
  insecure?: boolean;
}

/**
 * Mirrors by prefix: a registry host (`ghcr.io`, `host:5000`), a namespace or repository in it
 * (`ghcr.io/acme`), or `*.example.com` for every subdomain. A reference uses the mirrors of its
 * longest matching prefix, tried in order before the registry.
 *
 * @example A registry and one of its namespaces
 * ```ts
 * import type { MirrorTable } from "@ocipart/ocipart/parted";
 * const mirrors: MirrorTable = {
 *   "ghcr.io": [{ location: "cache.lan:5000", plainHttp: true }],
 *   "ghcr.io/acme/models": [{ location: "models-cache.lan", pullFromMirror: "all" }],
 * };
 * console.log(Object.keys(mirrors).length); // 2
 * ```
 */
export type MirrorTable = Readonly<Record<string, readonly MirrorOptions[]>>;

/** One mirror of one reference: where its copy of the repository is, and what it may serve. */
export interface MirrorEndpoint {
  /** The mirror's `host[:port]`. */
  readonly host: string;
  /** The repository path on the mirror. */
  readonly repository: string;
  /** Whether the mirror may answer for the reference's tag when the registry cannot be reached. */
  readonly resolvesTag: boolean;
  /**
   * Whether plain HTTP is tried after HTTPS (`insecure`); the scheme tried first, and the TLS
   * settings, are the host's per-registry settings.
   */
  readonly plainHttpFallback: boolean;
}

const MODES: readonly PullFromMirror[] = ["digest-only", "all", "tag-only"];

/**
 * Checks a table and returns a frozen copy.
 *
 * @throws {TypeError} The table, an entry or a field has the wrong type.
 * @throws {RangeError} A prefix, location or mode is invalid (the value is quoted).
 *
 * @example
 * ```ts
 * import { checkMirrorTable } from "./mirror_table.ts";
 * checkMirrorTable({ "ghcr.io": [{ location: "cache.lan:5000" }] });
 * ```
 */
export function checkMirrorTable(table: unknown, owner = "mirrors"): MirrorTable {
  if (typeof table !== "object" || table === null || Array.isArray(table)) {
    throw new TypeError(`${owner}: must be an object of prefix -> mirror list`);
  }
  const out: Record<string, readonly MirrorOptions[]> = {};
  for (const [prefix, list] of Object.entries(table)) {
    checkPrefix(prefix, owner);
    if (!Array.isArray(list)) throw new TypeError(`${owner}["${prefix}"]: must be an array`);
    out[prefix] = Object.freeze(
      list.map((entry, i) => checkMirror(entry, `${owner}["${prefix}"][${i}]`)),
    );
  }
  return Object.freeze(out);
}

/**
 * Whether `text` is a mirror's location: `host[:port]`, optionally with a namespace.
 *
 * @example A host with a namespace, and a URL
 * ```ts
 * import { isMirrorLocation } from "@ocipart/ocipart/parted";
 * console.log(isMirrorLocation("cache.lan:5000/gh"), isMirrorLocation("http://cache.lan")); // true false
 * ```
 */
export function isMirrorLocation(text: string): boolean {
  return splitLocation(text) !== undefined;
}

/**
 * Whether `text` is a prefix of the table: a location, or `*.domain`.
 *
 * @example
 * ```ts
 * import { isMirrorPrefix } from "./mirror_table.ts";
 * console.log(isMirrorPrefix("*.example.com"), isMirrorPrefix("ghcr.io/acme:v1")); // true false
 * ```
 */
export function isMirrorPrefix(text: string): boolean {
  return text.startsWith("*.")
    ? isRegistryHost(text.slice(2)) && !text.includes(":")
    : isMirrorLocation(text);
}

function checkPrefix(prefix: string, owner: string): void {
  if (!isMirrorPrefix(prefix)) {
    throw new RangeError(
      `${owner}: "${prefix}" is not a prefix (host[:port][/namespace] or *.domain)`,
    );
  }
}

function checkMirror(entry: unknown, owner: string): MirrorOptions {
  if (typeof entry !== "object" || entry === null) {
    throw new TypeError(`${owner}: must be an object`);
  }
  const { location, pullFromMirror, plainHttp, insecure } = entry as Record<string, unknown>;
  if (typeof location !== "string" || !isMirrorLocation(location)) {
    throw new RangeError(`${owner}.location: "${String(location)}" is not host[:port][/namespace]`);
  }
  if (pullFromMirror !== undefined && !MODES.includes(pullFromMirror as PullFromMirror)) {
    throw new RangeError(
      `${owner}.pullFromMirror: "${String(pullFromMirror)}" is not one of ${MODES.join(", ")}`,
    );
  }
  for (const [name, value] of [["plainHttp", plainHttp], ["insecure", insecure]] as const) {
    if (value !== undefined && typeof value !== "boolean") {
      throw new TypeError(`${owner}.${name}: must be a boolean`);
    }
  }
  if (plainHttp === true && insecure === true) {
    throw new TypeError(`${owner}: plainHttp and insecure exclude each other`);
  }
  return Object.freeze({
    location,
    pullFromMirror: (pullFromMirror ?? "digest-only") as PullFromMirror,
    plainHttp: plainHttp === true,
    insecure: insecure === true,
  });
}

/** `host[:port][/namespace]` split in two, or undefined when it is not that. */
function splitLocation(location: string): { host: string; path: string } | undefined {
  const slash = location.indexOf("/");
  const host = slash < 0 ? location : location.slice(0, slash);
  const path = slash < 0 ? "" : location.slice(slash + 1);
  if (!isRegistryHost(host)) return undefined;
  if (slash >= 0 && !isRepositoryName(path)) return undefined;
  return { host: host.toLowerCase(), path };
}

/**
 * The length of the part of `name` (`host[:port]/repository`) that `prefix` matches, or -1: a
 * prefix matches up to a `/` boundary (or the whole name); `*.domain` matches the host's
 * subdomains of `domain`, with or without a port.
 */
function matchLength(name: string, prefix: string): number {
  const slash = name.indexOf("/");
  const host = name.slice(0, slash);
  if (prefix.startsWith("*.")) {
    const hostname = host.replace(/:\d+$/, "").toLowerCase();
    return hostname.endsWith(prefix.slice(1).toLowerCase()) ? slash : -1;
  }
  const lowered = `${host.toLowerCase()}${name.slice(slash)}`;
  const wanted = prefix.replace(/^[^/]+/, (h) => h.toLowerCase());
  if (lowered === wanted) return name.length;
  return lowered.startsWith(wanted) && lowered[wanted.length] === "/" ? wanted.length : -1;
}

/**
 * The mirrors of `reference`, in order: those of the longest prefix of `table` that matches
 * it (none when no prefix does). Each keeps the part of the name after the prefix under its own
 * location, and says whether it may resolve the reference's tag. A mirror whose mode leaves it
 * out of this pull (`tag-only` for a pull by digest) is not listed.
 *
 * @example
 * ```ts
 * import { mirrorsOf } from "./mirror_table.ts";
 * const table = { "ghcr.io/acme": [{ location: "cache.lan/gh" }] };
 * const [mirror] = mirrorsOf(table, { registry: "ghcr.io", repository: "acme/m", tag: "v1" });
 * console.log(mirror.host, mirror.repository, mirror.resolvesTag); // "cache.lan" "gh/m" false
 * ```
 */
export function mirrorsOf(table: MirrorTable, reference: Reference): MirrorEndpoint[] {
  const name = `${reference.registry}/${reference.repository}`;
  let best: { length: number; list: readonly MirrorOptions[] } | undefined;
  for (const [prefix, list] of Object.entries(table)) {
    const length = matchLength(name, prefix);
    if (length >= 0 && (best === undefined || length > best.length)) best = { length, list };
  }
  if (best === undefined) return [];
  const rest = name.slice(best.length).replace(/^\//, "");
  const byTag = reference.digest === undefined;
  const endpoints: MirrorEndpoint[] = [];
  for (const mirror of best.list) {
    const mode = mirror.pullFromMirror ?? "digest-only";
    if (mode === "tag-only" && !byTag) continue;
    const { host, path } = splitLocation(mirror.location)!;
    const repository = [path, rest].filter((p) => p !== "").join("/");
    if (repository === "" || !isRepositoryName(repository)) continue;
    endpoints.push({
      host,
      repository,
      resolvesTag: byTag && mode !== "digest-only",
      plainHttpFallback: mirror.insecure === true,
    });
  }
  return endpoints;
}

/**
 * The host (`host[:port]`, lower case) of a mirror's location, or undefined when `location` is
 * not one.
 *
 * @example The host of a location
 * ```ts
 * import { mirrorHost } from "@ocipart/ocipart/parted";
 * console.log(mirrorHost("Cache.LAN:5000/gh")); // "cache.lan:5000"
 * ```
 */
export function mirrorHost(location: string): string | undefined {
  return splitLocation(location)?.host;
}

/** The per-registry settings a mirror asks of its host; undefined when it asks none. */
function askedSettings(mirror: MirrorOptions): RegistrySettings | undefined {
  if (mirror.plainHttp === true) return { plainHttp: true };
  if (mirror.insecure === true) return { plainHttp: false, insecureTls: true };
  return undefined;
}

/**
 * `registries` (checked per-registry settings) with each mirror's `plainHttp` or `insecure`
 * added to its host's entry: the one place where a mirror's own fields become settings, so a
 * mirror host is reached like any registry host. A field the host's entry already sets to the
 * other value, or two mirrors of one host that ask for different things, are refused.
 *
 * @throws {RangeError} A mirror's field contradicts its host's settings (quoting the mirror
 * and the host), or the resulting entry mixes plain HTTP with TLS settings.
 *
 * @example A plain-HTTP cache
 * ```ts
 * import { withMirrorHosts } from "./mirror_table.ts";
 * const table = { "ghcr.io": [{ location: "Cache.lan:5000", plainHttp: true }] };
 * const settings = withMirrorHosts(new Map(), table, "client: mirrors");
 * console.log(settings.get("cache.lan:5000")); // { plainHttp: true }
 * ```
 */
export function withMirrorHosts(
  registries: ReadonlyMap<string, Readonly<RegistrySettings>>,
  table: MirrorTable,
  owner: string,
): ReadonlyMap<string, Readonly<RegistrySettings>> {
  const out = new Map(registries);
  for (const [prefix, list] of Object.entries(table)) {
    list.forEach((mirror, i) => {
      const asked = askedSettings(mirror);
      if (asked === undefined) return;
      const host = mirrorHost(mirror.location)!;
      const where = `${owner}[${JSON.stringify(prefix)}][${i}]`;
      const merged: Record<string, unknown> = { ...out.get(host) };
      for (const [field, value] of Object.entries(asked)) {
        if (merged[field] !== undefined && merged[field] !== value) {
          throw new RangeError(
            `${where}: ${mirror.plainHttp ? "plainHttp" : "insecure"} contradicts the ` +
              `${field} setting of ${JSON.stringify(host)}`,
          );
        }
        merged[field] = value;
      }
      // The settings' own rules (plain HTTP with a TLS setting) hold for the merged entry.
      out.set(host, checkRegistrySettings({ [host]: merged }, where).get(host)!);
    });
  }
  return out;
}
