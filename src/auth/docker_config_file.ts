/**
 * The docker configuration file on disk, for the login and logout that rewrite it.
 *
 * A path that is a symbolic link (a dotfiles setup) is followed to the file it leads to, as
 * docker does: that target is read and replaced, and the link stays a link. A dangling link is
 * created at its target. The new text goes to a temporary file in the target's directory,
 * named `<name>.ocipart-<32 hex digits>.tmp`, created with mode 0600 and then given the mode
 * (and, where permitted, the owner) of the file it replaces; it is synced and renamed onto the
 * target, or removed when anything fails or the write is stopped. A temporary file of exactly
 * that pattern older than {@linkcode LEFTOVER_AGE_MS} can only be what a killed writer left: the
 * next write removes it. No other file is ever removed.
 *
 * @module
 */
import { lstat, mkdir, open, readdir, readlink, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { DockerConfigFileError, parseDockerConfig, unreadableConfig } from "./docker_config.ts";
import { readInputFile } from "./input_file.ts";

/** A temporary file of ours this old belongs to a writer that died (a write takes far less). */
export const LEFTOVER_AGE_MS = 10_000;

/** Symbolic links followed before giving up (a loop). */
const MAX_LINKS = 32;

/** The owner and permission bits of an existing configuration, kept by a rewrite. */
interface FileOwner {
  mode: number;
  uid: number;
  gid: number;
}

/** The configuration as read, and where to write it back. */
export interface ConfigFile {
  /** The file the path leads to through its symbolic links: what is read and replaced. */
  readonly target: string;
  /** The JSON object in the file; `{}` when there is no file. */
  readonly document: Record<string, unknown>;
  /** The existing file's owner and mode; undefined for a new file (mode 0600). */
  readonly owner: FileOwner | undefined;
}

/**
 * Reads the configuration at `path` (through its symbolic links) as a JSON object.
 *
 * @throws {DockerConfigFileError} The file cannot be read, or is not a docker configuration.
 *
 * @example Reading a file that does not exist yet
 * ```ts
 * import { readConfigFile } from "./docker_config_file.ts";
 * const dir = await Deno.makeTempDir();
 * console.log((await readConfigFile(`${dir}/config.json`)).document); // {}
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readConfigFile(path: string, signal?: AbortSignal): Promise<ConfigFile> {
  const target = await linkTarget(path);
  let text: string;
  let owner: FileOwner;
  try {
    text = await readInputFile(target, { signal });
    const info = await stat(target);
    owner = { mode: info.mode & 0o7777, uid: info.uid, gid: info.gid };
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (errorCode(err) === "ENOENT") return { target, document: {}, owner: undefined };
    throw new DockerConfigFileError(unreadableConfig(err), { cause: err });
  }
  parseDockerConfig(text); // refuses a malformed file before anything is written
  return { target, document: documentOf(text), owner };
}

type RawJson = (source: string) => unknown;

/**
 * The file's JSON object (an empty file is an empty object, as docker reads it), each number
 * kept as its source text where the runtime can (`JSON.rawJSON`): a rewrite must not turn
 * `1e400` into `null` or round a large integer in keys this code never reads.
 */
function documentOf(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  const rawJson = (JSON as unknown as { rawJSON?: RawJson }).rawJSON;
  if (rawJson === undefined) return JSON.parse(text) as Record<string, unknown>;
  return JSON.parse(
    text,
    (_key, value: unknown, context?: { source?: string }) =>
      typeof value === "number" && context?.source !== undefined ? rawJson(context.source) : value,
  ) as Record<string, unknown>;
}

/**
 * Replaces the file `file` was read from with `text`, atomically (see the module doc). An
 * aborted `signal` before the rename leaves the file as it was and rejects with its reason.
 *
 * @throws {DockerConfigFileError} The directory or the file cannot be written.
 *
 * @example Writing a new configuration
 * ```ts
 * import { readConfigFile, writeConfigFile } from "./docker_config_file.ts";
 * const dir = await Deno.makeTempDir();
 * const file = await readConfigFile(`${dir}/config.json`);
 * await writeConfigFile(file, '{"auths":{}}\n');
 * console.log((await Deno.stat(`${dir}/config.json`)).mode! & 0o777); // 384 (0600)
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeConfigFile(
  file: ConfigFile,
  text: string,
  signal?: AbortSignal,
): Promise<void> {
  const dir = dirname(file.target);
  const name = basename(file.target);
  const temporary = join(dir, `${name}.ocipart-${randomHex()}.tmp`);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await removeLeftovers(dir, name);
    await writeSynced(temporary, text, file.owner);
    signal?.throwIfAborted();
    await rename(temporary, file.target);
  } catch (err) {
    await rm(temporary, { force: true }).catch(() => {});
    if (signal?.aborted) throw signal.reason;
    throw new DockerConfigFileError("docker config could not be written", { cause: err });
  }
}

/** Follows the symbolic links of `path` to the file they lead to (which may not exist). */
async function linkTarget(path: string): Promise<string> {
  let current = resolve(path);
  for (let hop = 0; hop < MAX_LINKS; hop++) {
    let next: string;
    try {
      next = await readlink(current);
    } catch (err) {
      const code = errorCode(err);
      if (code === "EINVAL" || code === "ENOENT") return current; // not a link, or nothing
      throw new DockerConfigFileError("docker config could not be read", { cause: err });
    }
    current = resolve(dirname(current), next);
  }
  throw new DockerConfigFileError("docker config: too many symbolic links");
}

/** Creates `path` (0600), gives it the replaced file's mode and owner, writes and syncs it. */
async function writeSynced(path: string, text: string, owner: FileOwner | undefined) {
  const handle = await open(path, "wx", 0o600);
  try {
    if (owner !== undefined) {
      await handle.chmod(owner.mode);
      // Only a privileged user can give a file away; otherwise it stays the writer's.
      await handle.chown(owner.uid, owner.gid).catch(() => {});
    }
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Removes temporary files of our pattern for `name` in `dir` that a dead writer left. */
async function removeLeftovers(dir: string, name: string): Promise<void> {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const ours = new RegExp(`^${escaped}\\.ocipart-[0-9a-f]{32}\\.tmp$`);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return; // not listable: the write itself will say what is wrong
  }
  for (const candidate of names.filter((entry) => ours.test(entry))) {
    const path = join(dir, candidate);
    try {
      const info = await lstat(path);
      if (info.isFile() && Date.now() - info.mtimeMs > LEFTOVER_AGE_MS) await rm(path);
    } catch {
      // Removed meanwhile by another writer.
    }
  }
}

function randomHex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function errorCode(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}
