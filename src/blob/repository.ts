/**
 * The repository a blob operation addresses.
 *
 * @module
 */
import { isRegistryHost, isRepositoryName } from "../registry/reference.ts";

/**
 * A repository on a registry: the host (with an optional port) and the repository path.
 *
 * @example The object form and the string form
 * ```ts
 * import type { Repository } from "@ocipart/ocipart";
 * const repository: Repository = { host: "127.0.0.1:5000", name: "team/model" };
 * // client.exists(repository, digest) equals client.exists("127.0.0.1:5000/team/model", digest)
 * console.log(`${repository.host}/${repository.name}`); // "127.0.0.1:5000/team/model"
 * ```
 */
export interface Repository {
  /** The registry host, optionally with a port: `<host>[:<port>]`. */
  host: string;
  /** The repository path, e.g. `<namespace>/<name>`. */
  name: string;
}

/**
 * Normalizes a repository given as an object or as the string `"<host>[:<port>]/<name>"` (the
 * part before the first `/` is the host) and checks both fields.
 *
 * @throws {TypeError} The host or the name is malformed. The message names the field only.
 *
 * @example Both forms
 * ```ts
 * import { toRepository } from "./repository.ts";
 * console.log(toRepository("127.0.0.1:5000/team/model"));
 * // { host: "127.0.0.1:5000", name: "team/model" }
 * console.log(toRepository({ host: "ghcr.io", name: "org/data" }).name); // "org/data"
 * ```
 */
export function toRepository(repository: Repository | string): Repository {
  let host: unknown;
  let name: unknown;
  if (typeof repository === "string") {
    const slash = repository.indexOf("/");
    if (slash < 0) throw new TypeError("repository: expected <host>/<name>");
    host = repository.slice(0, slash);
    name = repository.slice(slash + 1);
  } else if (typeof repository === "object" && repository !== null) {
    host = repository.host;
    name = repository.name;
  } else {
    throw new TypeError("repository: expected an object or a string");
  }
  if (typeof host !== "string" || !isRegistryHost(host)) {
    throw new TypeError("repository: host is malformed");
  }
  if (typeof name !== "string" || !isRepositoryName(name)) {
    throw new TypeError("repository: name is malformed");
  }
  return { host, name };
}
