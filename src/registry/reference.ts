/**
 * Parsing and formatting of references: `<registry>/<repository>[:<tag>][@<digest>]`.
 *
 * @module
 */
import { InvalidReferenceError } from "../errors/kinds.ts";
import { isSha256Digest } from "./digest.ts";

/**
 * A parsed reference. At least one of `tag` and `digest` is present.
 *
 * @example The parts of a reference
 * ```ts
 * import { parseReference, type Reference } from "@ocipart/ocipart/parted";
 * const ref: Reference = parseReference("ghcr.io/org/model:v1");
 * console.log(ref.registry, ref.repository, ref.tag); // "ghcr.io" "org/model" "v1"
 * ```
 */
export interface Reference {
  /** The registry host, with an optional port, e.g. `ghcr.io` or `[::1]:5000`. */
  registry: string;
  /** The repository path inside the registry, lowercase, e.g. `org/models/llama`. */
  repository: string;
  /** The tag, if the reference names one. */
  tag?: string;
  /** The manifest digest `sha256:<hex>`, if the reference names one. */
  digest?: string;
}

/**
 * The rules {@linkcode parseReference} names when it refuses a reference, for a caller that
 * explains one of them in its own words (`InvalidReferenceError.rule`). A rule is fixed text and
 * never repeats the input.
 *
 * @example Telling a missing repository apart
 * ```ts
 * import { parseReference, REFERENCE_RULES } from "@ocipart/ocipart/parted";
 * try {
 *   parseReference("localhost:5000");
 * } catch (err) {
 *   console.log((err as { rule?: string }).rule === REFERENCE_RULES.missingRepository); // true
 * }
 * ```
 */
export const REFERENCE_RULES = {
  empty: "empty reference",
  scheme: "a reference has no scheme such as http or https",
  missingRegistry: "missing registry",
  invalidRegistry: "invalid registry host",
  missingRepository: "missing repository",
  lowercase: "repository must be lowercase",
  invalidRepository: "invalid repository",
  missingTag: "missing tag or digest",
  invalidTag: "invalid tag",
  invalidDigest: "digest must be sha256 with 64 lowercase hex characters",
  tooLong: "name longer than 255 characters",
} as const;

// A scheme in front of the registry (`http://`, `https://`, `oci://`…).
const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

// Grammar of the distribution reference package and the OCI distribution spec's names
// (docs/protocol.md#references).
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:.]+\\])`;
const REGISTRY = new RegExp(`^${HOST}(?::([0-9]{1,5}))?$`);
const PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const REPOSITORY = new RegExp(`^${PATH_COMPONENT}(?:/${PATH_COMPONENT})*$`);
const TAG = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
// The distribution reference package caps the whole name (registry and repository) at 255.
const NAME_MAX = 255;

/**
 * Reports whether `text` is a valid repository name: lowercase path components separated by
 * `/`, each made of `[a-z0-9]` runs joined by `.`, `_`, `__` or dashes.
 *
 * @example Checking a repository name
 * ```ts
 * import { isRepositoryName } from "./reference.ts";
 * console.log(isRepositoryName("org/models/llama"), isRepositoryName("Org/x")); // true false
 * ```
 */
export function isRepositoryName(text: string): boolean {
  return REPOSITORY.test(text);
}

/**
 * Reports whether `text` is a valid tag: a word character followed by at most 127 word
 * characters, dots or dashes.
 *
 * @example Checking a tag
 * ```ts
 * import { isTag } from "./reference.ts";
 * console.log(isTag("v1.0"), isTag(".hidden")); // true false
 * ```
 */
export function isTag(text: string): boolean {
  return TAG.test(text);
}

/**
 * Reports whether `text` is a valid registry: a host name, an IPv4 address or a bracketed IPv6
 * literal, with an optional port. Upper case is allowed in host names.
 *
 * @example Checking a registry
 * ```ts
 * import { isRegistryHost } from "./reference.ts";
 * console.log(isRegistryHost("[::1]:5000"), isRegistryHost("host:99999")); // true false
 * ```
 */
export function isRegistryHost(text: string): boolean {
  const match = REGISTRY.exec(text);
  if (match === null) return false;
  if (match[1] !== undefined && Number(match[1]) > 65535) return false;
  try {
    // The URL parser has the final word on IPv6 literals such as `[:::]`.
    new URL(`http://${text}/`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses `<registry>/<repository>[:<tag>][@<digest>]`. The first path component must be a host
 * (it contains `.` or `:`, or is `localhost`): there is no default registry, so `ubuntu:1` and
 * `library/ubuntu:1` are rejected (`missing registry`), while `localhost:5000` or `ghcr.io` alone
 * lacks its repository (`missing repository`). A scheme (`http://…`) is refused: a reference
 * has none. The repository must be lowercase; a tag, a sha256 digest or both must be present.
 *
 * @throws {InvalidReferenceError} The reference is malformed. The message names the broken
 * rule only ({@linkcode REFERENCE_RULES}) and never repeats the input.
 *
 * @example Parsing a tagged reference
 * ```ts
 * import { parseReference } from "@ocipart/ocipart/parted";
 * const ref = parseReference("localhost:5000/models/llama:v1");
 * console.log(ref.registry, ref.repository, ref.tag); // "localhost:5000" "models/llama" "v1"
 * ```
 */
export function parseReference(text: string): Reference {
  const registry = registryPart(text);
  let rest = text.slice(registry.length + 1);
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!isSha256Digest(digest)) throw new InvalidReferenceError(REFERENCE_RULES.invalidDigest);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!isTag(tag)) throw new InvalidReferenceError(REFERENCE_RULES.invalidTag);
  }
  const repository = rest;
  if (repository === "") throw new InvalidReferenceError(REFERENCE_RULES.missingRepository);
  if (repository !== repository.toLowerCase()) {
    throw new InvalidReferenceError(REFERENCE_RULES.lowercase);
  }
  if (!isRepositoryName(repository)) {
    throw new InvalidReferenceError(REFERENCE_RULES.invalidRepository);
  }
  if (registry.length + 1 + repository.length > NAME_MAX) {
    throw new InvalidReferenceError(REFERENCE_RULES.tooLong);
  }
  if (tag === undefined && digest === undefined) {
    throw new InvalidReferenceError(REFERENCE_RULES.missingTag);
  }
  const reference: Reference = { registry, repository };
  if (tag !== undefined) reference.tag = tag;
  if (digest !== undefined) reference.digest = digest;
  return reference;
}

/**
 * The registry in front of the first `/`, checked. Text without a `/` that would pass as a
 * registry (`localhost:5000`, `ghcr.io`) lacks its repository, not its registry.
 */
function registryPart(text: string): string {
  if (text === "") throw new InvalidReferenceError(REFERENCE_RULES.empty);
  if (SCHEME.test(text)) throw new InvalidReferenceError(REFERENCE_RULES.scheme);
  const slash = text.indexOf("/");
  if (slash < 0) {
    const hostLike = /^(localhost|\[|[^:]*\.)/.test(text) && isRegistryHost(text);
    throw new InvalidReferenceError(
      hostLike ? REFERENCE_RULES.missingRepository : REFERENCE_RULES.missingRegistry,
    );
  }
  const registry = text.slice(0, slash);
  if (!(registry.includes(".") || registry.includes(":") || registry === "localhost")) {
    throw new InvalidReferenceError(REFERENCE_RULES.missingRegistry);
  }
  if (!isRegistryHost(registry)) throw new InvalidReferenceError(REFERENCE_RULES.invalidRegistry);
  return registry;
}

/**
 * Formats a reference back into `<registry>/<repository>[:<tag>][@<digest>]`. Does not
 * validate; {@linkcode parseReference} of the result gives the same fields back for any
 * reference it produced.
 *
 * @example Round trip
 * ```ts
 * import { formatReference, parseReference } from "./reference.ts";
 * console.log(formatReference(parseReference("ghcr.io/org/data:v2"))); // "ghcr.io/org/data:v2"
 * ```
 */
export function formatReference(ref: Reference): string {
  let text = `${ref.registry}/${ref.repository}`;
  if (ref.tag !== undefined) text += `:${ref.tag}`;
  if (ref.digest !== undefined) text += `@${ref.digest}`;
  return text;
}
