/**
 * The two sides of `copy`: each registry's scheme and TLS settings from the shared flags
 * (`--plain-http`, `--insecure`, `--ca-file`, meaning both sides) and the side's own flags
 * (`--src-…`, `--dest-…`, skopeo's naming), which decide their side where they disagree; and,
 * when a side speaks the other scheme, the words that name that side, its host and its flag.
 *
 * @module
 */
import { parseReference, terminalText } from "../../parted/mod.ts";
import type { RegistryFlags } from "./args.ts";
import type { Words } from "../words/cause_words.ts";
import { UsageError } from "./usage_error.ts";

/** The flags of one side, as `copy` declares them to the parser. */
export const COPY_SIDE_OPTIONS = {
  "src-plain-http": { type: "boolean" },
  "dest-plain-http": { type: "boolean" },
  "src-insecure": { type: "boolean" },
  "dest-insecure": { type: "boolean" },
  "src-ca-file": { type: "string" },
  "dest-ca-file": { type: "string" },
} as const;

/** How one side of a copy is reached. */
export interface CopySide {
  /** `source` or `destination`, for messages. */
  readonly name: "source" | "destination";
  /** The side's flag prefix: `src` or `dest`. */
  readonly prefix: "src" | "dest";
  /** The registry `host[:port]` of the side's reference; undefined when it does not parse. */
  readonly registry: string | undefined;
  /** Plain HTTP instead of HTTPS. */
  readonly plainHttp: boolean;
  /** HTTPS without verifying the certificate. */
  readonly insecure: boolean;
  /** The PEM file of extra roots, if any. */
  readonly caFile: string | undefined;
  /** The flags that decided this side, as typed (`--plain-http`, `--dest-ca-file`, …). */
  readonly flags: readonly string[];
  /** Whether the side has flags of its own (its settings then differ from the shared ones). */
  readonly own: boolean;
}

/** Both sides of a copy. */
export interface CopySides {
  /** Where the artifact comes from. */
  readonly source: CopySide;
  /** Where it goes. */
  readonly target: CopySide;
}

/** Reads parsed flags (the parser's accessors). */
export interface FlagReader {
  /** The value of a boolean flag. */
  bool(name: string): boolean;
  /** The value of a string flag, checked not empty. */
  text(name: string): string | undefined;
}

/**
 * Both sides' settings: a side's own flags over the shared ones (`--dest-insecure` or
 * `--dest-ca-file` make the destination HTTPS even with `--plain-http`; `--src-plain-http` makes
 * the source plain HTTP even with `--insecure`).
 *
 * @throws {UsageError} A side's own plain-HTTP flag with its own TLS flag, or one registry on
 * both sides with settings that differ.
 *
 * @example A plain-HTTP source and an HTTPS destination
 * ```ts
 * import { copySides } from "./copy_sides.ts";
 * const given = new Set(["src-plain-http"]);
 * const flags = { bool: (name: string) => given.has(name), text: () => undefined };
 * const shared = { plainHttp: false, insecure: false, caFile: undefined };
 * const sides = copySides(flags, shared, ["127.0.0.1:5000/a/b:v1", "registry.example/a/b:v1"]);
 * console.log(sides.source.plainHttp, sides.target.plainHttp); // true false
 * ```
 */
export function copySides(
  flags: FlagReader,
  shared: Pick<RegistryFlags, "plainHttp" | "insecure" | "caFile">,
  references: readonly [string, string],
): CopySides {
  const source = side(flags, shared, "src", references[0]);
  const target = side(flags, shared, "dest", references[1]);
  const same = source.registry !== undefined &&
    source.registry.toLowerCase() === target.registry?.toLowerCase();
  const differ = source.plainHttp !== target.plainHttp || source.insecure !== target.insecure ||
    source.caFile !== target.caFile;
  if (same && differ) {
    throw new UsageError(
      "<src-ref> and <dst-ref> are on one registry, so --src-… and --dest-… flags must agree",
      "copy",
    );
  }
  return { source, target };
}

function side(
  flags: FlagReader,
  shared: Pick<RegistryFlags, "plainHttp" | "insecure" | "caFile">,
  prefix: "src" | "dest",
  reference: string,
): CopySide {
  const ownPlain = flags.bool(`${prefix}-plain-http`);
  const ownInsecure = flags.bool(`${prefix}-insecure`);
  const ownCaFile = flags.text(`${prefix}-ca-file`);
  const tlsFlags = [
    ...(ownInsecure ? [`--${prefix}-insecure`] : []),
    ...(ownCaFile !== undefined ? [`--${prefix}-ca-file`] : []),
  ];
  if (ownPlain && tlsFlags.length > 0) {
    throw new UsageError(
      `${tlsFlags[0]} is for HTTPS; it cannot go with --${prefix}-plain-http`,
      "copy",
    );
  }
  const base = {
    name: prefix === "src" ? "source" : "destination",
    prefix,
    registry: registryOf(reference),
    own: ownPlain || tlsFlags.length > 0,
  } as const;
  if (ownPlain) {
    return {
      ...base,
      plainHttp: true,
      insecure: false,
      caFile: undefined,
      flags: [`--${prefix}-plain-http`],
    };
  }
  if (tlsFlags.length > 0) {
    const insecure = ownInsecure || shared.insecure;
    return {
      ...base,
      plainHttp: false,
      insecure,
      caFile: ownCaFile ?? shared.caFile,
      flags: tlsFlags,
    };
  }
  const sharedFlags = [
    ...(shared.plainHttp ? ["--plain-http"] : []),
    ...(shared.insecure ? ["--insecure"] : []),
  ];
  return {
    ...base,
    plainHttp: shared.plainHttp,
    insecure: shared.insecure,
    caFile: shared.caFile,
    flags: sharedFlags,
  };
}

function registryOf(reference: string): string | undefined {
  try {
    return parseReference(reference).registry;
  } catch {
    // The library reports a malformed reference when the copy starts.
    return undefined;
  }
}

/** Which scheme a registry answered in when the copy spoke the other one (the cause codes). */
export type SchemeAnswer = "TLS_SERVER" | "PLAIN_HTTP_SERVER";

/**
 * A copy failed because one side (or both) speaks the other scheme: which sides, and the flags
 * that fix it (`fix`, also the message: `use --src-plain-http instead of --plain-http`).
 *
 * @example
 * ```ts
 * import { copySides, SchemeMismatchError } from "./copy_sides.ts";
 * const flags = { bool: () => false, text: () => undefined };
 * const shared = { plainHttp: true, insecure: false, caFile: undefined };
 * const sides = copySides(flags, shared, ["127.0.0.1:5000/a/b:v1", "r.example/a/b:v1"]);
 * const err = new SchemeMismatchError("TLS_SERVER", [sides.target], sides, "use --src-plain-http instead of --plain-http");
 * console.log(err.message);
 * // "the destination registry speaks TLS, not plain HTTP: use --src-plain-http instead of --plain-http"
 * ```
 */
export class SchemeMismatchError extends Error {
  /** What the wrong sides answered. */
  readonly answer: SchemeAnswer;
  /** The sides that speak the other scheme. */
  readonly wrong: readonly CopySide[];
  /** Both sides of the copy. */
  readonly sides: CopySides;
  /** The flags to use instead, in words. */
  readonly fix: string;

  /** Creates the error; `cause` is the failure of the copy. */
  constructor(
    answer: SchemeAnswer,
    wrong: readonly CopySide[],
    sides: CopySides,
    fix: string,
    options?: ErrorOptions,
  ) {
    const both = wrong.length === 2 || sameRegistry(sides);
    const where = both ? "both registries speak" : `the ${wrong[0].name} registry speaks`;
    const scheme = answer === "TLS_SERVER" ? "TLS, not plain HTTP" : "plain HTTP, not TLS";
    super(`${where} ${scheme}: ${fix}`, options);
    this.name = "SchemeMismatchError";
    this.answer = answer;
    this.wrong = wrong;
    this.sides = sides;
    this.fix = fix;
  }
}

/**
 * The first lines of the report of a {@linkcode SchemeMismatchError} between two registries:
 * the side and its host as typed, and the side's flag as the hint. Undefined when both sides are
 * one registry (the general words of the cause name it).
 *
 * @example One --plain-http for a plain-HTTP source and an HTTPS destination
 * ```ts
 * import { copySides, SchemeMismatchError, schemeMismatchWords } from "./copy_sides.ts";
 * const flags = { bool: () => false, text: () => undefined };
 * const shared = { plainHttp: true, insecure: false, caFile: "ca.pem" };
 * const sides = copySides(flags, shared, ["127.0.0.1:5000/a/b:v1", "r.example/a/b:v1"]);
 * const fix = "use --src-plain-http instead of --plain-http";
 * const words = schemeMismatchWords(new SchemeMismatchError("TLS_SERVER", [sides.target], sides, fix));
 * console.log(words?.sentence); // "the destination registry r.example speaks HTTPS, not plain HTTP"
 * console.log(words?.hint); // "use --src-plain-http instead of --plain-http"
 * ```
 */
export function schemeMismatchWords(err: SchemeMismatchError): Words | undefined {
  if (sameRegistry(err.sides)) return undefined;
  const tls = err.answer === "TLS_SERVER";
  const scheme = tls ? "HTTPS, not plain HTTP" : "plain HTTP, not HTTPS";
  const hosts = err.wrong.map((side) => terminalText(side.registry ?? "the registry"));
  const sentence = err.wrong.length === 2
    ? `both registries, ${hosts[0]} and ${hosts[1]}, speak ${scheme}`
    : `the ${err.wrong[0].name} registry ${hosts[0]} speaks ${scheme}`;
  return { sentence, hint: `${err.fix}${tls ? caNote(err) : PLAIN_NOTE}` };
}

const PLAIN_NOTE = " (nothing is encrypted then: only for a registry on a network you trust)";

/** For a side that goes to HTTPS without roots of its own: where a private CA is given. */
function caNote(err: SchemeMismatchError): string {
  const side = err.wrong.length === 1 ? err.wrong[0] : undefined;
  if (side === undefined || side.caFile !== undefined || side.insecure) return "";
  return ` (and add --${side.prefix}-ca-file PEM if its certificate comes from your own CA)`;
}

function sameRegistry(sides: CopySides): boolean {
  const { source, target } = sides;
  return source.registry !== undefined &&
    source.registry.toLowerCase() === target.registry?.toLowerCase();
}
