/**
 * The first lines of a failure report: one sentence in plain words that names what the user
 * typed (the reference, the registry's host and port, the file), a hint for the common cases,
 * and, when the hint says to run a command, that command (after a part-size limit,
 * `part_size_words.ts`). The library's own line, the cause codes and the exit-code line follow
 * them unchanged.
 *
 * Only the user's input and fixed words are written here, plus the registry's error codes that
 * are on the distribution spec's fixed list (docs/protocol.md#errors-and-exit-codes); nothing
 * else a registry sent is repeated.
 *
 * @module
 */
import {
  AuthChallengeError,
  CredentialError,
  DigestMismatchError,
  findError,
  HttpStatusError,
  InvalidManifestError,
  InvalidReferenceError,
  LocalFileError,
  NotFoundError,
  NotPartedArtifactError,
  PartTooLargeError,
  RetriesExhaustedError,
  SourceChangedError,
  StallError,
  TooLargeError,
  UnauthorizedError,
} from "../../errors/mod.ts";
import { NoFileNameError, terminalText, TooManyPartsError } from "../../parted/mod.ts";
import { TokenServiceError } from "../../auth/mod.ts";
import { ExchangeError, failureReason } from "../../transport/mod.ts";
import {
  type Place,
  type ProxyPlace,
  proxyWords,
  reasonWords,
  tokenServiceWords,
  type Words,
} from "./cause_words.ts";
import { SchemeMismatchError, schemeMismatchWords } from "../arguments/copy_sides.ts";
import { takesFlag } from "../arguments/args.ts";
import type { FailureContext } from "./exit_code.ts";
import { type FailureSubject, registriesOf, subjectPhrase } from "./failure_subject.ts";
import { OutputError } from "../session/io.ts";
import {
  destinationWords,
  localFileWords,
  outputWords,
  restrictedPathWords,
  temporaryDirectoryWords,
} from "./local_file_words.ts";
import { partSizeWords } from "./part_size_words.ts";
import { referenceWords } from "./reference_words.ts";
import { statusWords } from "./status_words.ts";

export type { Words } from "./cause_words.ts";

/**
 * The proxy the environment names for the registry's scheme, as the user set it: the variable
 * read (the lowercase one wins, as the transport reads them) and the host and port, never the
 * user name or password the setting may hold.
 */
function proxyOf(plainHttp: boolean): ProxyPlace | undefined {
  const upper = plainHttp ? "HTTP_PROXY" : "HTTPS_PROXY";
  for (const variable of [upper.toLowerCase(), upper]) {
    let value: string | undefined;
    try {
      value = Deno.env.get(variable);
    } catch {
      continue;
    }
    if (value === undefined || value === "") continue;
    try {
      const url = new URL(value.includes("://") ? value : `http://${value}`);
      const address = url.port === "" ? url.hostname : `${url.hostname}:${url.port}`;
      return { variable, address: terminalText(address) };
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Where the failure happened: the registries it may concern, as typed. */
function placeOf(subject: FailureSubject, err: unknown): Place {
  const registries = registriesOf(subject, err);
  const { caFile } = subject.input;
  return {
    where: registries.map((r) => r.shown).join(" or ") || "the registry",
    port: registries.length === 1 ? registries[0].port : undefined,
    plainHttp: subject.input.plainHttp === true,
    caFile: caFile === undefined ? undefined : terminalText(caFile),
  };
}

/**
 * A pull's partial file: the file its progress named (inside a directory, the artifact's), else
 * the destination typed, or undefined for a directory whose file was not known yet.
 */
function partialOf(subject: FailureSubject): string | undefined {
  const { destination } = subject.input;
  const file = subject.pulledFile ??
    (destination === undefined || subject.input.intoDirectory ? undefined : destination);
  return file === undefined ? undefined : `${terminalText(file)}.parted-partial`;
}

function timeoutWords(subject: FailureSubject, timeout: string): Words {
  const sentence = `could not ${subjectPhrase(subject)} within --timeout ${terminalText(timeout)}`;
  if (subject.command === "pull") {
    const partial = partialOf(subject);
    const from = partial === undefined ? "where it stopped" : `from ${partial}`;
    return { sentence, hint: `run it again (with a longer --timeout): it resumes ${from}` };
  }
  if (subject.command === "push" || subject.command === "copy") {
    return { sentence, hint: "run it again: parts already on the registry are skipped" };
  }
  return { sentence, hint: "run it again with a longer --timeout" };
}

/** A push source that changed while it was pushed: the user's file, never the registry. */
function sourceChangedWords(subject: FailureSubject): Words {
  return {
    sentence: `${terminalText(subject.input.file ?? "the file")} changed while it was pushed`,
    hint: "push it again once nothing writes to it",
  };
}

/** The words of the sentinel and library errors that are not about a connection or a status. */
function kindWords(subject: FailureSubject, err: unknown, place: Place): Words | undefined {
  const ref = terminalText(subject.input.reference ?? subject.input.source ?? "the artifact");
  if (findError(err, NotPartedArtifactError)) {
    return {
      sentence: `${ref} is not a parted artifact (an image, or an artifact of another tool)`,
      hint: "ocipart pulls what ocipart push wrote; skopeo or oras move other artifacts",
    };
  }
  if (findError(err, DigestMismatchError)) return mismatchWords(subject, ref);
  const unnamed = findError(err, NoFileNameError);
  if (unnamed !== undefined) return noFileNameWords(subject, ref, unnamed);
  if (findError(err, InvalidManifestError)) {
    return { sentence: `${ref} is a broken parted artifact: its manifest breaks the format` };
  }
  if (findError(err, TooManyPartsError)) {
    return {
      sentence: `${terminalText(subject.input.file ?? "the file")} needs too many parts`,
      hint: "push it with a larger --part-size (the line below names the smallest that fits)",
    };
  }
  if (findError(err, StallError)) {
    return {
      sentence: `${place.where} stopped moving data for longer than the stall timeout`,
      hint: takesFlag(subject.command, "workers")
        ? "on a slow or busy link, raise --stall-timeout or lower --workers"
        : "on a slow or busy link, raise --stall-timeout",
    };
  }
  const exhausted = findError(err, RetriesExhaustedError);
  if (
    exhausted !== undefined &&
    /: body read failed$/.test(findError(err, ExchangeError)?.message ?? "")
  ) {
    return {
      sentence: `${place.where} broke off its answer partway, ${exhausted.attempts} times in a row`,
      hint: "try again later; if it keeps happening, something between you and the registry " +
        "(a proxy, a load balancer) may cut long answers",
    };
  }
  if (findError(err, CredentialError) && subject.command === "logout") {
    return {
      sentence: "the login could not be erased",
      hint: "the line below names what was removed and what may still hold the login",
    };
  }
  const challenge = findError(err, AuthChallengeError);
  if (challenge !== undefined) return authServiceWords(challenge, place);
  if (findError(err, CredentialError)) {
    return {
      sentence: `the credentials for ${place.where} could not be used`,
      hint: "check the docker configuration (--registry-config) and its credential helper",
    };
  }
  return undefined;
}

/**
 * The registry's authentication answered in a way no login can fix (a challenge that cannot be
 * used, a token response without a usable token): the registry's side, not the user's docker
 * configuration.
 */
function authServiceWords(err: AuthChallengeError, place: Place): Words {
  const hint = "the registry's authentication service is misconfigured or failing, not your " +
    "docker configuration: try again later, or ask the registry's operators";
  if (/^authentication: token response/.test(err.message)) {
    return {
      sentence: `${place.where} answered, but its token service sent no usable token`,
      hint,
    };
  }
  return { sentence: `${place.where} asks for a login in a way that cannot be answered`, hint };
}

/**
 * A pull into a directory whose manifest names no file it may write. The title is never
 * repeated: a registry chose it (`inspect` shows it escaped).
 */
function noFileNameWords(subject: FailureSubject, ref: string, err: NoFileNameError): Words {
  const directory = terminalText(subject.input.destination ?? "the directory");
  const hint = `pull it into a file you name (ocipart pull ${ref} ${directory}/<name>)`;
  if (err.reason === "no-title") {
    return { sentence: `${ref} has no title to name a file in ${directory}`, hint };
  }
  return {
    sentence: `the title of ${ref} is not a plain file name (hidden, blank-looking, ` +
      `look-alike or reserved characters, or a leading - or ~), so nothing was written to ` +
      directory,
    hint: `${hint}; ocipart inspect ${ref} shows the title escaped`,
  };
}

/**
 * Bytes that did not match their digest. A pull writes nothing where the file goes, but the
 * partial file keeps what landed, the failed part's bytes included: a rerun reuses from it only
 * what matches its part's digest (the resume rules), so the partial stays, and the words say so.
 * On standard output, a part goes out only once verified (`pull -`, `cat`), but a blob's bytes
 * go out as they arrive and are checked at the end (`blob pull -`).
 */
function mismatchWords(subject: FailureSubject, ref: string): Words {
  const damaged = "if it keeps happening, the registry's copy is damaged";
  const toStdout = subject.input.destination === "-" || subject.command === "cat";
  if (toStdout && subject.command === "blob pull") {
    return {
      sentence: `bytes of ${ref} did not match their digest after they went to standard output: ` +
        "that output is not the blob, discard it",
      hint: `try again; ${damaged}`,
    };
  }
  if (toStdout) {
    return {
      sentence: `bytes of ${ref} did not match their digest; standard output ends with the ` +
        "last part that verified, and nothing of the part that failed was written",
      hint: `try again; ${damaged}`,
    };
  }
  if (subject.command !== "pull") {
    return {
      sentence: `bytes of ${ref} did not match their digest; nothing unverified was kept`,
      hint: `try again; ${damaged}`,
    };
  }
  const { destination } = subject.input;
  const file = terminalText(subject.pulledFile ?? destination ?? "the destination");
  const sentence = `bytes of ${ref} did not match their digest; ${file} was not written`;
  // Without a progress report, the parts were never reached (the manifest did not match).
  if (subject.pulledFile === undefined) return { sentence, hint: `try again; ${damaged}` };
  return {
    sentence,
    hint: `try again: a rerun reuses from ${partialOf(subject)} only what matches its digest; ` +
      damaged,
  };
}

/** The sentences of an answer's status: refusals, missing content, sizes, server failures. */
function answerWords(subject: FailureSubject, err: unknown): Words | undefined {
  const http = findError(err, HttpStatusError);
  const sentinel = findError(err, UnauthorizedError) ?? findError(err, NotFoundError) ??
    findError(err, PartTooLargeError) ?? findError(err, TooLargeError);
  if (http === undefined && sentinel === undefined) return undefined;
  const registries = registriesOf(subject, err);
  return statusWords(subject, registries, err, http);
}

/**
 * The first lines of the report of `err`: a sentence naming what was typed and, when there is
 * one, a hint. Undefined after a stop signal (the signal line says it all).
 *
 * @example A connection refused
 * ```ts
 * import { failureWords } from "./failure_words.ts";
 * const raw = Object.assign(new Error("connect"), { code: "ECONNREFUSED" });
 * const subject = { command: "pull", input: { reference: "127.0.0.1:5400/a/b:v1" } };
 * console.log(failureWords(raw, subject)?.sentence);
 * // "nothing is listening at 127.0.0.1:5400: the connection was refused"
 * ```
 */
export function failureWords(
  err: unknown,
  subject: FailureSubject,
  context: FailureContext = {},
): Words | undefined {
  if (context.signal !== undefined) return undefined;
  if (context.timeout !== undefined) return timeoutWords(subject, context.timeout);
  if (findError(err, OutputError)) return outputWords(err);
  const invalid = findError(err, InvalidReferenceError);
  if (invalid !== undefined) return referenceWords(subject.input, invalid);
  // The file changed under the push: whatever the registry then answered (a 400
  // DIGEST_INVALID for bytes that no longer match their digest) follows from that.
  if (findError(err, SourceChangedError)) return sourceChangedWords(subject);
  const place = placeOf(subject, err);
  // Before the cause and the status: a cut connection, a 413 or a refused token that the part
  // size caused is told as that limit, with the size that fits.
  const limit = partSizeWords(subject, err, place);
  if (limit !== undefined) return limit;
  const mismatch = findError(err, SchemeMismatchError);
  const sides = mismatch === undefined ? undefined : schemeMismatchWords(mismatch);
  if (sides !== undefined) return sides;
  const reason = failureReason(err);
  if (reason === "ALL_PERMISSION") return restrictedPathWords(subject);
  const tokenService = findError(err, TokenServiceError) === undefined
    ? undefined
    : tokenServiceWords(reason, place);
  if (tokenService !== undefined) return tokenService;
  if (findError(err, ExchangeError)?.atProxy === true) {
    return proxyWords(reason, place, proxyOf(place.plainHttp));
  }
  // Where parts wait, when the system refused it; a permission of Deno's keeps its own words.
  const temporary = reason?.endsWith("_PERMISSION")
    ? undefined
    : temporaryDirectoryWords(subject, err);
  if (temporary !== undefined) return temporary;
  if (reason !== undefined) return reasonWords(reason, place);
  return answerWords(subject, err) ?? kindWords(subject, err, place) ??
    destinationWords(subject, err) ??
    (findError(err, LocalFileError) ? localFileWords(subject, err) : undefined) ??
    { sentence: `could not ${subjectPhrase(subject)}` };
}
