/**
 * The CA certificates the CLI trusts without `--ca-file`, found where the container tools keep
 * them: per registry, every `*.crt` file of `<root>/<host[:port]>/` under each `certs.d` root
 * (`/etc/containers/certs.d`, `~/.config/containers/certs.d`, `/etc/docker/certs.d`, or the
 * roots `OCIPART_CERTS_DIRS` lists, colon-separated); for every registry, the files
 * `SSL_CERT_FILE` and `DENO_CERT` name. All of them add to the runtime's roots, as `--ca-file`
 * does. A root or file that cannot be read (missing, not permitted) is passed over.
 *
 * @module
 */
import { parseReference, terminalText } from "../../parted/mod.ts";

/** The certificates found, and which file each came from (for `--debug`). */
export interface FoundTrust {
  /** PEM text of `SSL_CERT_FILE` and `DENO_CERT`: trusted for every registry. */
  readonly shared: { readonly path: string; readonly pem: string }[];
  /** Per lower-case `host[:port]`: the `certs.d` files of that registry. */
  readonly registries: Map<string, { readonly path: string; readonly pem: string }[]>;
}

/** Where the container tools look, in their order: podman's system and user roots, docker's. */
function defaultRoots(home: string | undefined): string[] {
  return [
    "/etc/containers/certs.d",
    ...(home === undefined ? [] : [`${home}/.config/containers/certs.d`]),
    "/etc/docker/certs.d",
  ];
}

/** The variable's value when this process may read it without asking. */
function permittedEnv(name: string): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") {
    return undefined;
  }
  return Deno.env.get(name) || undefined;
}

/**
 * The `certs.d` roots: those `OCIPART_CERTS_DIRS` lists, else the container tools' own.
 *
 * @example
 * ```ts
 * import { certsDirRoots } from "./registry_trust.ts";
 * console.log(certsDirRoots().length > 0); // true
 * ```
 */
export function certsDirRoots(): string[] {
  const listed = permittedEnv("OCIPART_CERTS_DIRS");
  if (listed !== undefined) return listed.split(":").filter((root) => root !== "");
  return defaultRoots(permittedEnv("HOME"));
}

async function readPem(path: string): Promise<{ path: string; pem: string } | undefined> {
  try {
    return { path, pem: await Deno.readTextFile(path) };
  } catch {
    return undefined; // unreadable: passed over, as the container tools do
  }
}

/** The `*.crt` files of one registry's directory under `root`, in name order. */
async function crtFiles(root: string, host: string): Promise<string[]> {
  const dir = `${root}/${host}`;
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && entry.name.endsWith(".crt")) names.push(entry.name);
    }
  } catch {
    return []; // no such directory, or not permitted
  }
  return names.sort().map((name) => `${dir}/${name}`);
}

/**
 * The registry `host[:port]` of each reference or registry typed, lower-case, once each; what
 * does not parse is left to the command to refuse.
 *
 * @example
 * ```ts
 * import { typedRegistries } from "./registry_trust.ts";
 * console.log(typedRegistries(["Reg.example:5000/a/b:v1", "reg.example:5000"]));
 * // [ "reg.example:5000" ]
 * ```
 */
export function typedRegistries(typed: readonly (string | undefined)[]): string[] {
  const hosts = new Set<string>();
  for (const text of typed) {
    if (text === undefined) continue;
    try {
      hosts.add((text.includes("/") ? parseReference(text).registry : text).toLowerCase());
    } catch {
      // A malformed reference fails the command with its own words.
    }
  }
  return [...hosts];
}

/**
 * Finds the certificates trusted for `hosts` besides `--ca-file`.
 *
 * @example
 * ```ts
 * import { findTrust } from "./registry_trust.ts";
 * const trust = await findTrust(["registry.example:5000"]);
 * console.log(trust.registries.size >= 0); // true
 * ```
 */
export async function findTrust(hosts: readonly string[]): Promise<FoundTrust> {
  const shared = [];
  for (const name of ["SSL_CERT_FILE", "DENO_CERT"]) {
    const path = permittedEnv(name);
    const found = path === undefined ? undefined : await readPem(path);
    if (found !== undefined) shared.push(found);
  }
  const registries = new Map<string, { path: string; pem: string }[]>();
  const roots = certsDirRoots();
  for (const host of hosts) {
    const files = [];
    for (const root of roots) {
      for (const path of await crtFiles(root, host)) {
        const found = await readPem(path);
        if (found !== undefined) files.push(found);
      }
    }
    if (files.length > 0) registries.set(host, files);
  }
  return { shared, registries };
}

/**
 * The `--debug` lines that say which files make which registry trusted.
 *
 * @example
 * ```ts
 * import { trustLines } from "./registry_trust.ts";
 * const registries = new Map([["r.lan:5000", [{ path: "/etc/docker/certs.d/r.lan:5000/ca.crt", pem: "" }]]]);
 * console.log(trustLines({ shared: [], registries })[0]);
 * // debug: TLS roots for r.lan:5000 from /etc/docker/certs.d/r.lan:5000/ca.crt
 * ```
 */
export function trustLines(trust: FoundTrust): string[] {
  const lines = trust.shared.map((file) => `debug: TLS roots for every registry from ${file.path}`);
  for (const [host, files] of trust.registries) {
    for (const file of files) lines.push(`debug: TLS roots for ${host} from ${file.path}`);
  }
  return lines.map((line) => terminalText(line));
}
