/**
 * The words for each reason a connection failed (the `cause:` codes of the transport): one
 * sentence naming the registry as typed, and what to do about it. Every reason the transport can
 * give has an entry here.
 *
 * @module
 */
import type { FailureReason } from "../../transport/mod.ts";

/** The first lines of a failure report: what happened, and what to try. */
export interface Words {
  /** One sentence in plain words that names what the user typed. */
  readonly sentence: string;
  /** What to do about it, when there is something to say. */
  readonly hint?: string;
  /**
   * The command line to run, when the hint says to run one: the user's own arguments changed
   * as the hint says, quoted for a shell (`src/cli/words/shell_word.ts`), written on a line of its own.
   */
  readonly command?: string;
}

/** Where a connection went, as the user typed it. */
export interface Place {
  /** The registry (or both of a copy's) as typed: `127.0.0.1:5400`. */
  readonly where: string;
  /** The port dialed, when one registry is concerned. */
  readonly port: string | undefined;
  /** `--plain-http` was given. */
  readonly plainHttp: boolean;
  /** The `--ca-file` path as typed (escaped for the terminal), when one was given. */
  readonly caFile?: string | undefined;
}

const SKIP = "--insecure skips the check, and then anyone on the path can read and change the " +
  "transfer";

const TRUST = `give the registry's CA certificate with --ca-file PEM; ${SKIP}`;

// A self-signed certificate: the registry's own is what to trust, pinned as curl --cacert does.
function selfSignedWords(at: Place): Words {
  if (at.caFile === undefined) {
    return {
      sentence: `${at.where} presents a self-signed certificate, which this machine does not trust`,
      hint: `give --ca-file <the registry's certificate> to trust exactly that one; ${SKIP}`,
    };
  }
  return {
    sentence: `${at.where} presents a self-signed certificate that ${at.caFile} does not hold`,
    hint: "give --ca-file the certificate the registry serves now (a renewed one, if it was " +
      `renewed); ${SKIP}`,
  };
}

const GRANT = (flag: string, what: string) => `run it with ${flag} (${what})`;

/** The words of each reason, by the reason's code. */
const WORDS: Readonly<Record<FailureReason, (at: Place) => Words>> = {
  ECONNREFUSED: (at) => ({
    sentence: `nothing is listening at ${at.where}: the connection was refused`,
    hint: at.port === undefined
      ? "is the registry running, and is its port right?"
      : `is the registry running, and is ${at.port} its port?`,
  }),
  ECONNRESET: (at) => ({
    sentence: `${at.where} dropped the connection in the middle of a request`,
    hint: "try again; if it keeps happening, look at the registry's log or a proxy in between",
  }),
  ETIMEDOUT: (at) => ({
    sentence: `${at.where} did not answer in time`,
    hint: "is the host up and reachable from here (a firewall, a VPN, a proxy)?",
  }),
  ENOTFOUND: (at) => ({
    sentence: `the host name of ${at.where} does not resolve (no such host)`,
    hint: "check the spelling of the registry in the reference",
  }),
  EAI_AGAIN: (at) => ({
    sentence: `the host name of ${at.where} could not be looked up (the name service did not ` +
      "answer)",
    hint: "check this machine's network and name service (or VPN), then try again",
  }),
  EHOSTUNREACH: (at) => ({
    sentence: `there is no route to ${at.where}`,
    hint: "is the host up, and the network between you and it?",
  }),
  ENETUNREACH: (at) => ({
    sentence: `the network of ${at.where} is unreachable from this machine`,
    hint: "is this machine online (or on the VPN the registry needs)?",
  }),
  EPIPE: (at) => ({
    sentence: `${at.where} closed the connection while a request was still being sent`,
    hint: "the registry or a proxy in front of it may limit request sizes: try a smaller " +
      "--part-size, or try again",
  }),
  TLS_UNKNOWN_AUTHORITY: (at) => ({
    sentence:
      `the certificate of ${at.where} is signed by an authority this machine does not trust`,
    hint: TRUST,
  }),
  TLS_SELF_SIGNED: selfSignedWords,
  TLS_NAME_MISMATCH: (at) => ({
    sentence: `the certificate of ${at.where} is made out to another host name`,
    hint: "the registry's name in the reference must be one the certificate names; --insecure " +
      "skips the check",
  }),
  TLS_EXPIRED: (at) => ({
    sentence: `the certificate of ${at.where} has expired or is not valid yet`,
    hint: "renew it on the registry, or check this machine's clock",
  }),
  TLS_CERTIFICATE: (at) => ({
    sentence: `the certificate of ${at.where} was rejected (a bad signature or a wrong use)`,
    hint: "check the certificate the registry serves; --insecure skips the check",
  }),
  PLAIN_HTTP_SERVER: (at) => ({
    sentence: `${at.where} speaks plain HTTP, not HTTPS`,
    hint: "add --plain-http (nothing is encrypted then: only for a registry on a network you " +
      "trust)",
  }),
  TLS_SERVER: (at) => ({
    sentence: `${at.where} speaks HTTPS, not plain HTTP`,
    hint: "drop --plain-http (and add --ca-file PEM if its certificate comes from your own CA)",
  }),
  BAD_RESPONSE: (at) => ({
    sentence: `the answer of ${at.where} is not valid HTTP`,
    hint: at.plainHttp
      ? "if that port speaks HTTPS, drop --plain-http; otherwise something other than a " +
        "registry answers there, or a proxy in between is broken"
      : "something other than a registry answers there, or the registry or a proxy in " +
        "between is broken: look at its log",
  }),
  NET_PERMISSION: (at) => ({
    sentence: `Deno's permissions do not allow connecting to ${at.where} ` +
      "(or to its token service or storage)",
    hint: GRANT(
      "--allow-net",
      "or --allow-net=<host> for the registry and the hosts it sends you to",
    ),
  }),
  READ_PERMISSION: () => ({
    sentence: "Deno's permissions do not allow reading a file ocipart needs " +
      "(the source, --ca-file or the docker configuration)",
    hint: GRANT("--allow-read", "or --allow-read=<path> for that file"),
  }),
  WRITE_PERMISSION: () => ({
    sentence: "Deno's permissions do not allow writing where ocipart needs to " +
      "(the destination's directory, the temporary directory of a pipe or of cat " +
      "(--temp-dir), or the docker configuration's)",
    hint: GRANT("--allow-write", "or --allow-write=<directory>"),
  }),
  ENV_PERMISSION: () => ({
    sentence: "Deno's permissions do not allow reading the environment ocipart needs",
    hint: GRANT("--allow-env=HOME,DOCKER_CONFIG", "and the proxy variables when you use a proxy"),
  }),
  SYS_PERMISSION: () => ({
    sentence: "Deno's permissions do not allow a system query ocipart needs",
    hint: GRANT("--allow-sys=statfs", "to compare a pull's size with the free space"),
  }),
  RUN_PERMISSION: () => ({
    sentence: "Deno's permissions do not allow running the credential helper the docker " +
      "configuration names",
    hint: GRANT("--allow-run=docker-credential-<name>", "and the whole --allow-env"),
  }),
  FFI_PERMISSION: () => ({
    sentence: "Deno's permissions refused a foreign-function call",
    hint: GRANT("--allow-ffi", "if you trust what asks for it"),
  }),
  IMPORT_PERMISSION: () => ({
    sentence: "Deno's permissions refused loading a module",
    hint: GRANT("--allow-import", "for the module's host"),
  }),
  ALL_PERMISSION: () => ({
    sentence: "Deno allows this path only with every permission (as for /proc, /sys and /dev)",
    hint: "choose a path outside /proc, /sys and /dev, or run with --allow-all",
  }),
  PERMISSION: () => ({
    sentence: "Deno's permissions refused something ocipart needs",
    hint: "the error below names it; grant the matching --allow-* flag",
  }),
  EACCES: () => ({
    sentence: "the system refused access to a file (permission denied)",
    hint: "check the permissions of the file and of its directory",
  }),
  EPERM: () => ({
    sentence: "the system did not permit an operation on a file",
    hint: "check the file's owner and attributes (chattr, a mount option)",
  }),
  EROFS: () => ({
    sentence: "the file system is mounted read-only",
    hint: "write somewhere else, or remount it read-write",
  }),
};

// What went wrong on the way to a token service, by reason; a reason not listed here (a
// permission) keeps its own words, which name the token service already.
const TOKEN_SERVICE_FAILURES: Partial<Record<FailureReason, string>> = {
  ECONNREFUSED: "the connection was refused",
  ECONNRESET: "it dropped the connection",
  ETIMEDOUT: "it did not answer in time",
  ENOTFOUND: "its host name does not resolve",
  EAI_AGAIN: "its host name could not be looked up",
  EHOSTUNREACH: "there is no route to it",
  ENETUNREACH: "its network is unreachable from here",
  EPIPE: "it closed the connection",
  TLS_UNKNOWN_AUTHORITY: "its certificate is not trusted",
  TLS_SELF_SIGNED: "its certificate is not trusted",
  TLS_NAME_MISMATCH: "its certificate is not trusted",
  TLS_EXPIRED: "its certificate is not trusted",
  TLS_CERTIFICATE: "its certificate is not trusted",
  PLAIN_HTTP_SERVER: "it does not speak the protocol its address names",
  TLS_SERVER: "it does not speak the protocol its address names",
  BAD_RESPONSE: "its answer is not valid HTTP",
};

/**
 * The words of a token service that could not be reached, for the registry at `at` whose
 * challenge named it: never its host (text the registry chose). Undefined for a reason whose own
 * words fit better (a permission).
 *
 * @example
 * ```ts
 * import { tokenServiceWords } from "./cause_words.ts";
 * const at = { where: "127.0.0.1:5400", port: "5400", plainHttp: true };
 * console.log(tokenServiceWords("ENOTFOUND", at)?.sentence);
 * // "127.0.0.1:5400 answered, but the token service it names could not be reached: its host name does not resolve"
 * ```
 */
export function tokenServiceWords(reason: FailureReason | undefined, at: Place): Words | undefined {
  const what = reason === undefined ? "" : TOKEN_SERVICE_FAILURES[reason];
  if (what === undefined) return undefined;
  return {
    sentence: `${at.where} answered, but the token service it names could not be reached` +
      (what === "" ? "" : `: ${what}`),
    hint: "the registry's authentication service is down or misconfigured (or not reachable " +
      "from this network): ask the registry's operators",
  };
}

/** A proxy of the environment, as the user set it: its address without credentials. */
export interface ProxyPlace {
  /** The variable that names it (`HTTPS_PROXY`, `http_proxy`, …). */
  readonly variable: string;
  /** Its host and port as written (escaped for the terminal), never its user or password. */
  readonly address: string;
}

/**
 * The words of a proxy that could not be reached on the way to the registry at `at`: the proxy
 * is the party that failed, named by its address (never its credentials) and its variable.
 *
 * @example
 * ```ts
 * import { proxyWords } from "./cause_words.ts";
 * const at = { where: "registry.lan:5000", port: "5000", plainHttp: false };
 * const proxy = { variable: "HTTPS_PROXY", address: "127.0.0.1:3128" };
 * console.log(proxyWords("ECONNREFUSED", at, proxy).sentence);
 * // "the proxy 127.0.0.1:3128 (HTTPS_PROXY) could not be reached: the connection was refused; registry.lan:5000 was not asked"
 * ```
 */
export function proxyWords(
  reason: FailureReason | undefined,
  at: Place,
  proxy: ProxyPlace | undefined,
): Words {
  const what = reason === undefined ? undefined : TOKEN_SERVICE_FAILURES[reason];
  const named = proxy === undefined
    ? "the proxy"
    : `the proxy ${proxy.address} (${proxy.variable})`;
  const variable = proxy?.variable ?? "the proxy variable";
  return {
    sentence: `${named} could not be reached` + (what ? `: ${what}` : "") +
      `; ${at.where} was not asked`,
    hint: `is the proxy running at that address? To reach ${at.where} directly instead, unset ` +
      `${variable} or list the registry in NO_PROXY`,
  };
}

/**
 * The words of a failed connection's `reason` at `at`.
 *
 * @example
 * ```ts
 * import { reasonWords } from "./cause_words.ts";
 * const words = reasonWords("ECONNREFUSED", { where: "127.0.0.1:5400", port: "5400", plainHttp: true });
 * console.log(words.sentence); // "nothing is listening at 127.0.0.1:5400: the connection was refused"
 * console.log(words.hint); // "is the registry running, and is 5400 its port?"
 * ```
 */
export function reasonWords(reason: FailureReason, at: Place): Words {
  return WORDS[reason](at);
}
