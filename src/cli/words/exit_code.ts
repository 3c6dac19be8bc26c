/**
 * Maps the outcome of a transfer to the exit-code contract of the reference CLI.
 *
 * @module
 */
import {
  DigestMismatchError,
  type ErrorClass,
  findError,
  NotFoundError,
  NotPartedArtifactError,
  PartTooLargeError,
  TooLargeError,
  UnauthorizedError,
} from "../../errors/mod.ts";
import { terminalText } from "../../parted/mod.ts";

/**
 * The exit codes of the reference CLI. Scripts depend on these numbers; they never change.
 *
 * @example
 * ```ts
 * import { EXIT_CODES } from "./exit_code.ts";
 * console.log(EXIT_CODES.notFound); // 3
 * ```
 */
export const EXIT_CODES: Readonly<{
  success: 0;
  failure: 1;
  usage: 2;
  notFound: 3;
  notPartedArtifact: 4;
  digestMismatch: 5;
  unauthorized: 6;
  partTooLarge: 7;
  sigint: 130;
  sigterm: 143;
}> = Object.freeze({
  success: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  notPartedArtifact: 4,
  digestMismatch: 5,
  unauthorized: 6,
  partTooLarge: 7,
  sigint: 130,
  sigterm: 143,
});

/** The signals the CLI turns into an orderly stop. */
export type StopSignal = "SIGINT" | "SIGTERM";

/** What happened around a failure besides the error itself. */
export interface FailureContext {
  /** The first SIGINT or SIGTERM delivered during the transfer, if any. */
  signal?: StopSignal;
  /** The `--timeout` text when that limit expired during the transfer. */
  timeout?: string;
  /**
   * The reason the CLI aborted the work with when a signal came: a failure that is only this
   * abort says nothing of its own (the line naming the signal follows).
   */
  stopReason?: unknown;
}

/** The exit code of a failure and the line that explains it. */
export interface ExitOutcome {
  /** The process exit code. */
  code: number;
  /** One line naming the signal, the expired timeout, the matched class, or no match. */
  explanation: string;
}

// The exit-code table, tested in this order (docs/protocol.md#errors-and-exit-codes).
// TooLargeError follows PartTooLargeError because a 413 on the manifest write reports the same
// way: the mapping is from the status alone.
const SENTINEL_TABLE: ReadonlyArray<readonly [ErrorClass<Error>, number]> = [
  [NotFoundError, EXIT_CODES.notFound],
  [NotPartedArtifactError, EXIT_CODES.notPartedArtifact],
  [DigestMismatchError, EXIT_CODES.digestMismatch],
  [UnauthorizedError, EXIT_CODES.unauthorized],
  [PartTooLargeError, EXIT_CODES.partTooLarge],
  [TooLargeError, EXIT_CODES.partTooLarge],
];

/**
 * Classifies a failed transfer. A delivered signal outranks everything (130 for SIGINT, 143 for
 * SIGTERM), then an expired `--timeout` (1), because after either the error's shape is not
 * reliable (it may be a closed file, a reset socket or even a sentinel). Otherwise the
 * sentinels are tested in the table's order (docs/protocol.md#errors-and-exit-codes); no match
 * exits 1.
 *
 * @example A sentinel under wrapping
 * ```ts
 * import { exitOutcome } from "./exit_code.ts";
 * import { NotFoundError } from "../../errors/sentinels.ts";
 * const err = new Error("pull", { cause: new NotFoundError("GET manifest: status 404") });
 * console.log(exitOutcome(err).code); // 3
 * console.log(exitOutcome(err, { signal: "SIGTERM" }).code); // 143
 * ```
 */
export function exitOutcome(err: unknown, context: FailureContext = {}): ExitOutcome {
  if (context.signal === "SIGINT") {
    return { code: EXIT_CODES.sigint, explanation: "interrupted by SIGINT (exit 130)" };
  }
  if (context.signal === "SIGTERM") {
    return { code: EXIT_CODES.sigterm, explanation: "terminated by SIGTERM (exit 143)" };
  }
  if (context.timeout !== undefined) {
    return {
      code: EXIT_CODES.failure,
      explanation: `--timeout ${context.timeout} expired; no sentinel applies (exit 1)`,
    };
  }
  const matched = matchedSentinel(err);
  if (matched !== undefined) {
    const { error, code, className } = matched;
    const stable = (error as { code?: unknown }).code;
    const name = typeof stable === "string" ? `${className} (${stable})` : className;
    return { code, explanation: `matched ${name} (exit ${code})` };
  }
  return { code: EXIT_CODES.failure, explanation: "no sentinel matched (exit 1)" };
}

/**
 * The first sentinel of the exit-code table found in `err`'s chain, its exit code and the
 * table's class name.
 *
 * @example
 * ```ts
 * import { matchedSentinel } from "./exit_code.ts";
 * import { UnauthorizedError } from "../../errors/sentinels.ts";
 * console.log(matchedSentinel(new UnauthorizedError("GET manifest"))?.code); // 6
 * ```
 */
export function matchedSentinel(
  err: unknown,
): { error: Error; code: number; className: string } | undefined {
  for (const [cls, code] of SENTINEL_TABLE) {
    const found = findError(err, cls);
    if (found !== undefined) return { error: found, code, className: cls.name };
  }
  return undefined;
}

/**
 * Renders an error as one line for standard error: its message with line breaks collapsed and
 * any other control or bidirectional character escaped (`terminalText`). Library messages are
 * already safe (no URLs, bodies, tokens or digests); other errors are not promised to be.
 *
 * @example
 * ```ts
 * import { errorLine } from "./exit_code.ts";
 * console.log(errorLine(new Error("a\nb"))); // "a b"
 * ```
 */
export function errorLine(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : String(err);
  return terminalText(text.replace(/\s*[\r\n]+\s*/g, " ").trim());
}
