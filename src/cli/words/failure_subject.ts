/**
 * What the user typed that a failure report may repeat: the references, the registry, the local
 * path and the flags that change the advice. The CLI may say these back (they are the user's own
 * input, shown with control characters escaped); it never repeats text a registry sent.
 *
 * @module
 */
import { findError, HttpStatusError } from "../../errors/mod.ts";
import { parseReference, type Reference, terminalText } from "../../parted/mod.ts";

/**
 * The parts of a parsed command line a failure report uses; each command object has the ones
 * that apply to it.
 */
export interface TypedInput {
  /** The reference of push, pull, inspect and verify. */
  readonly reference?: string;
  /** The source reference of copy. */
  readonly source?: string;
  /** The target reference of copy. */
  readonly target?: string;
  /** The registry of login and logout. */
  readonly registry?: string;
  /** The local file of push and verify. */
  readonly file?: string;
  /** The destination of pull. */
  readonly destination?: string;
  /** Pull's destination is a directory: the file in it is named by the artifact. */
  readonly intoDirectory?: boolean;
  /** `--temp-dir` of a pipe or of cat. */
  readonly tempDir?: string | undefined;
  /** `--cache-dir` of cat. */
  readonly cacheDir?: string | undefined;
  /** `--plain-http`. */
  readonly plainHttp?: boolean;
  /** `--insecure`. */
  readonly insecure?: boolean;
  /** `--ca-file`. */
  readonly caFile?: string | undefined;
  /** `--registry-config`. */
  readonly registryConfig?: string | undefined;
  /** How each side of a copy is reached (its own flags over the shared ones). */
  readonly sides?: {
    readonly source: SideReach;
    readonly target: SideReach;
  };
  /** `--username`. */
  readonly username?: string | undefined;
  /** The arguments after the command's name, as typed: push's, to say what to run again. */
  readonly args?: readonly string[];
}

/** How one side of a copy is reached, as `copy_sides.ts` decided from the flags typed. */
export interface SideReach {
  /** Plain HTTP. */
  readonly plainHttp: boolean;
  /** HTTPS without verifying the certificate. */
  readonly insecure: boolean;
  /** The PEM file of extra roots, as typed. */
  readonly caFile: string | undefined;
}

/** A failed command: its name, what was typed, and what was learnt after the failure. */
export interface FailureSubject {
  /** The command: `push`, `pull`, …. */
  readonly command: string;
  /** What the user typed. */
  readonly input: TypedInput;
  /**
   * After a missing manifest: whether the registry knows the repository (true), says it does
   * not (false), or did not tell (undefined).
   */
  readonly repositoryKnown?: boolean | undefined;
  /**
   * The file a pull writes, once its progress named it (inside a directory, the artifact's,
   * named by the registry): its bytes are in `<file>.parted-partial` until the commit.
   */
  readonly pulledFile?: string | undefined;
}

/** One registry as the user typed it, with the port the CLI dialed. */
export interface TypedRegistry {
  /** `host[:port]` as typed, escaped for the terminal. */
  readonly shown: string;
  /** `host[:port]` as typed, raw: for a command line, where it is quoted for a shell. */
  readonly host: string;
  /** The side of a copy this registry is (`source` or `target`); undefined for other commands. */
  readonly side?: "source" | "target";
  /** The port: the typed one, or 443 (80 with `--plain-http`). */
  readonly port: string;
  /** The reference this registry was typed in, if any. */
  readonly reference?: Reference;
  /** The reference as typed, escaped for the terminal. */
  readonly referenceShown?: string;
}

function typedRegistry(
  subject: FailureSubject,
  text: string,
  isReference: boolean,
  side?: "source" | "target",
): TypedRegistry {
  let reference: Reference | undefined;
  if (isReference) {
    try {
      reference = parseReference(text);
    } catch {
      // Not a reference: the report names the text itself.
    }
  }
  const host = reference?.registry ?? text;
  const port = /:(\d+)$/.exec(host)?.[1] ?? (subject.input.plainHttp ? "80" : "443");
  return {
    shown: terminalText(host),
    host,
    ...(side === undefined ? {} : { side }),
    port,
    ...(reference === undefined ? {} : { reference }),
    ...(isReference ? { referenceShown: terminalText(text) } : {}),
  };
}

/**
 * The registries a failure may concern, as typed: one, or for a copy between two registries
 * the side the failed request went to, or both when the error does not tell (a failed
 * connection of a copy names no side). Empty when the command names no registry.
 *
 * @example
 * ```ts
 * import { registriesOf } from "./failure_subject.ts";
 * const subject = { command: "pull", input: { reference: "127.0.0.1:5400/a/b:v1" } };
 * console.log(registriesOf(subject, new Error("x")).map((r) => r.shown)); // [ "127.0.0.1:5400" ]
 * ```
 */
export function registriesOf(subject: FailureSubject, err: unknown): TypedRegistry[] {
  const { input } = subject;
  if (input.registry !== undefined) return [typedRegistry(subject, input.registry, false)];
  if (input.reference !== undefined) return [typedRegistry(subject, input.reference, true)];
  if (input.source === undefined || input.target === undefined) return [];
  const source = typedRegistry(subject, input.source, true, "source");
  const target = typedRegistry(subject, input.target, true, "target");
  // A copy reads the source (GET) and writes the target (HEAD, POST, PUT, PATCH).
  const operation = findError(err, HttpStatusError)?.operation;
  if (operation !== undefined) return [operation.startsWith("GET ") ? source : target];
  return source.shown === target.shown ? [source] : [source, target];
}

/**
 * What the command was doing, in words that name what was typed: `pull 127.0.0.1:5000/a/b:v1
 * into out.bin`.
 *
 * @example
 * ```ts
 * import { subjectPhrase } from "./failure_subject.ts";
 * const input = { reference: "ghcr.io/acme/w:v1", file: "w.bin" };
 * console.log(subjectPhrase({ command: "push", input })); // "push w.bin to ghcr.io/acme/w:v1"
 * ```
 */
export function subjectPhrase(subject: FailureSubject): string {
  const { input } = subject;
  const shown = (text: string | undefined) => terminalText(text ?? "");
  switch (subject.command) {
    case "push":
      return `push ${shown(input.file)} to ${shown(input.reference)}`;
    case "pull":
      return `pull ${shown(input.reference)} into ${shown(input.destination)}`;
    case "copy":
      return `copy ${shown(input.source)} to ${shown(input.target)}`;
    case "inspect":
      return `inspect ${shown(input.reference)}`;
    case "cat":
      return `read ${shown(input.reference)}`;
    case "blob pull":
      return `pull the blob ${shown(input.reference)} into ${shown(input.destination)}`;
    case "blob push":
      return `push ${shown(input.file)} as a blob to ${shown(input.reference)}`;
    case "blob exists":
      return `look for the blob ${shown(input.reference)}`;
    case "blob mount":
      return `mount the blob ${shown(input.source)} into ${shown(input.target)}`;
    case "verify":
      return `verify ${shown(input.file)} against ${shown(input.reference)}`;
    case "login":
      return `log in to ${shown(input.registry)}`;
    case "logout":
      return input.registry === undefined ? "log out" : `log out of ${shown(input.registry)}`;
    default:
      return subject.command;
  }
}
