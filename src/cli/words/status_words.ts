/**
 * The words for a registry's answer: refused credentials (401, 403), a repository or tag it does
 * not know (404, told apart by the registry's error codes), a part too large (413), rate limits
 * and server failures. Only codes on the distribution spec's fixed list are repeated
 * (docs/protocol.md#errors-and-exit-codes).
 *
 * @module
 */
import {
  findError,
  type HttpStatusError,
  PartTooLargeError,
  statusCode,
} from "../../errors/mod.ts";
import {
  type DistributionErrorCode,
  distributionErrorCodes,
  terminalText,
} from "../../parted/mod.ts";
import type { Words } from "./cause_words.ts";
import type { FailureSubject, TypedRegistry } from "./failure_subject.ts";
import { loginCommand } from "./login_command.ts";
import { TOKEN_OPERATION } from "../../auth/mod.ts";

const PHRASES: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  416: "Range Not Satisfiable",
  429: "Too Many Requests",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

// The code that only restates its status adds nothing to the status's own phrase.
const RESTATED: Readonly<Record<number, string>> = {
  401: "UNAUTHORIZED",
  403: "DENIED",
  429: "TOOMANYREQUESTS",
};

/**
 * `404 Not Found, NAME_UNKNOWN`: the status, its phrase, and the listed error codes given
 * (`distributionErrorCodes`, docs/protocol.md#errors-and-exit-codes) that say more than the status.
 *
 * @example
 * ```ts
 * import { statusAnswer } from "./status_words.ts";
 * console.log(statusAnswer(405, ["UNSUPPORTED"])); // "405 Method Not Allowed, UNSUPPORTED"
 * ```
 */
export function statusAnswer(status: number, codes: readonly string[]): string {
  const phrase = PHRASES[status] === undefined ? `${status}` : `${status} ${PHRASES[status]}`;
  const telling = codes.filter((code) => code !== RESTATED[status]);
  return telling.length === 0 ? phrase : `${phrase}, ${telling.join(", ")}`;
}

/** Everything a status sentence needs. */
interface Answer {
  readonly subject: FailureSubject;
  readonly where: string;
  readonly registry: TypedRegistry | undefined;
  readonly status: number;
  readonly codes: readonly DistributionErrorCode[];
  readonly http: HttpStatusError | undefined;
}

/** `command` as the line to run after the hint, when one registry is concerned. */
function withLogin(a: Answer, words: Words, username?: string): Words {
  return a.registry === undefined
    ? words
    : { ...words, command: loginCommand(a.subject, a.registry, username) };
}

function refusedWords(a: Answer): Words {
  const { command, input } = a.subject;
  const said = statusAnswer(a.status, a.codes);
  if (a.status === 403) {
    const repository = a.registry?.reference?.repository;
    const what = repository === undefined ? "" : ` to ${terminalText(repository)}`;
    return withLogin(a, {
      sentence: `${a.where} denied access${what} (${said})`,
      hint: `the credential is accepted but may not ${command} there: ask for access, ` +
        "or log in as another user",
    });
  }
  if (command === "login") {
    return {
      sentence: `${a.where} refused the user name and password (${said})`,
      hint: "check them and try again; nothing was saved",
    };
  }
  if (input.username !== undefined) {
    return withLogin(a, {
      sentence: `${a.where} refused the user name and password given with --username (${said})`,
      hint: "check the password; a login checks a credential before it saves it",
    }, input.username);
  }
  const sentence = `${a.where} needs credentials, and none it accepts were sent (${said})`;
  if (command === "copy") {
    // A copy takes each registry's credential from the docker configuration.
    return a.registry === undefined
      ? { sentence, hint: "log in to each registry first with ocipart login" }
      : withLogin(a, { sentence, hint: `log in to ${a.where} first` });
  }
  return withLogin(a, {
    sentence,
    hint: "give --username with --password-stdin, or log in once and every command uses the " +
      "saved login",
  });
}

function missingWords(a: Answer): Words {
  const reference = a.registry?.reference;
  if (reference === undefined) {
    return {
      sentence: `${a.where} does not answer as a registry (${statusAnswer(404, a.codes)})`,
      hint: "is it the registry's address, not that of a web page in front of it?",
    };
  }
  const repository = terminalText(reference.repository);
  const manifest = reference.digest === undefined
    ? `tag ${terminalText(reference.tag ?? "")}`
    : `manifest ${reference.digest}`;
  const said = statusAnswer(404, a.codes);
  const known = a.subject.repositoryKnown;
  if (a.codes.includes("NAME_UNKNOWN") || known === false) {
    const list = a.codes.includes("NAME_UNKNOWN") ? "" : "; its tag list: NAME_UNKNOWN";
    return {
      sentence: `the repository ${repository} does not exist on ${a.where} (${said}${list})`,
      hint: "check its name (a push creates it)",
    };
  }
  if (known === true) {
    return {
      sentence: `the repository ${repository} on ${a.where} has no ${manifest} (${said})`,
      hint: "the repository exists: check the tag",
    };
  }
  if (a.codes.includes("MANIFEST_UNKNOWN")) {
    return {
      sentence: `${a.where} has no ${manifest} in the repository ${repository} (${said})`,
      hint: "check the tag and the repository's name",
    };
  }
  const blob = a.codes.some((c) => c.includes("BLOB")) || /\bblob\b/.test(a.http?.operation ?? "");
  // A blob command names one blob by its digest: that blob is what is missing.
  if (a.subject.command.startsWith("blob") && reference.digest !== undefined) {
    return {
      sentence:
        `${a.where} has no blob ${reference.digest} in the repository ${repository} (${said})`,
      hint: "check the digest and the repository's name",
    };
  }
  if (blob) {
    return {
      sentence: `a part of ${a.registry?.referenceShown} is missing on ${a.where} (${said})`,
      hint: "the artifact is incomplete on the registry: push it again",
    };
  }
  return {
    sentence:
      `${a.where} has no ${a.registry?.referenceShown}: the repository or its ${manifest} ` +
      `does not exist (${said})`,
  };
}

/**
 * A storage redirect target's answer (a presigned link): the registry's login played no part
 * (no credential goes to storage), so the words name the link, never a login.
 */
function storageWords(a: Answer): Words {
  const said = statusAnswer(a.status, a.codes);
  const storage = `the storage behind ${a.where}`;
  if (a.status === 401 || a.status === 403) {
    return {
      sentence: `${storage} refused the link the registry gave (${said})`,
      hint: "try again: the registry gives a fresh link each time, and this one may have " +
        "expired (a clock far off expires links early); storage never receives your credential",
    };
  }
  if (a.status === 404 || a.status === 410) {
    return {
      sentence: `${storage} has nothing at the link the registry gave (${said})`,
      hint: "try again: the link may have expired; if it keeps failing, the registry's storage " +
        "lost the part",
    };
  }
  return {
    sentence: `${storage} answered ${said}`,
    hint: "try again: a storage link may have expired",
  };
}

function otherWords(a: Answer, err: unknown): Words {
  const said = statusAnswer(a.status, a.codes);
  if (a.status === 413) {
    const what = findError(err, PartTooLargeError) ? "a part" : "a request";
    return {
      sentence: `${a.where} refused ${what} as too large (${said})`,
      hint: "push with a smaller --part-size, e.g. --part-size 100MiB: the registry or a " +
        "proxy in front of it limits the size of a request",
    };
  }
  if (a.status === 429) {
    return {
      sentence: `${a.where} is limiting the rate of requests (${said})`,
      hint: "wait and try again, or use fewer --workers",
    };
  }
  if (a.status >= 500) {
    return {
      sentence: `${a.where} kept failing (${said})`,
      hint: "the registry may be overloaded or restarting: try again later, and look at its log",
    };
  }
  // A HEAD's 400 has no body to say why; a TLS port behind some servers answers just that.
  const head = a.http?.operation.startsWith("HEAD ") === true;
  if (a.status === 400 && head && a.codes.length === 0 && a.subject.input.plainHttp) {
    return {
      sentence: `${a.where} answered ${said} to a plain-HTTP request`,
      hint: "if it speaks HTTPS on that port, drop --plain-http",
    };
  }
  return { sentence: `${a.where} refused a request (${said})` };
}

/**
 * The words of a registry's answer that failed the command; `registries` are those the failure
 * concerns, as typed.
 *
 * @example An unknown tag on Distribution
 * ```ts
 * import { statusWords } from "./status_words.ts";
 * import { HttpStatusError } from "../../errors/kinds.ts";
 * import { parseReference } from "../../registry/reference.ts";
 * const body = new TextEncoder().encode('{"errors":[{"code":"MANIFEST_UNKNOWN"}]}');
 * const err = new HttpStatusError("GET manifest", { status: 404, body });
 * const reference = parseReference("127.0.0.1:5000/a/b:v2");
 * const registry = { shown: "127.0.0.1:5000", host: "127.0.0.1:5000", port: "5000", reference };
 * const subject = { command: "pull", input: {} };
 * console.log(statusWords(subject, [registry], err, err).sentence);
 * // "the repository a/b on 127.0.0.1:5000 has no tag v2 (404 Not Found, MANIFEST_UNKNOWN)"
 * ```
 */
export function statusWords(
  subject: FailureSubject,
  registries: readonly TypedRegistry[],
  err: unknown,
  http: HttpStatusError | undefined,
): Words {
  const a: Answer = {
    subject,
    where: registries.map((r) => r.shown).join(" or ") || "the registry",
    registry: registries.length === 1 ? registries[0] : undefined,
    status: http?.status ?? statusCode(err) ?? 0,
    codes: http === undefined ? [] : distributionErrorCodes(http),
    http,
  };
  // Off the registry's origin: storage, unless it is the token service (the login's own refusal).
  if (http?.offOrigin === true && http.operation !== TOKEN_OPERATION) return storageWords(a);
  if (a.status === 401 || a.status === 403) return refusedWords(a);
  if (a.status === 404) return missingWords(a);
  return otherWords(a, err);
}
