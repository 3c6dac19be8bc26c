/**
 * Parses the command line of the reference CLI into a command to run.
 *
 * Each command has one entry in {@linkcode COMMAND_SPECS}: its flags and the function that
 * turns the parsed values into its command object. A new command or flag goes there (and into
 * `usage.ts`); nothing else here changes.
 *
 * @module
 */
import {
  isMirrorLocation,
  isPlainFileName,
  isReservedAnnotation,
  parseReference,
  registryOrigin,
  terminalText,
} from "../../parted/mod.ts";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { parseLimit } from "./duration.ts";
import { parseSize } from "./size.ts";
import { type ByteRange, parseByteRange } from "./byte_range.ts";
import { parseRate } from "../progress/rate.ts";
import { COPY_SIDE_OPTIONS, type CopySides, copySides } from "./copy_sides.ts";
import { type CommandName, type HelpTopic, UsageError } from "./usage_error.ts";
import { type TypedCommand, unknownCommandMessage, unknownFlagMessage } from "./unknown_words.ts";

/** How transfer progress is shown on standard error. */
export type ProgressMode = "auto" | "bar" | "plain" | "json" | "none";

const PROGRESS_MODES: readonly ProgressMode[] = ["auto", "bar", "plain", "json", "none"];

/** The flags of every command that talks to a registry. */
export interface RegistryFlags {
  /** Overall time limit in milliseconds; 0 means none. */
  timeoutMs: number;
  /** The `--timeout` value as typed (trimmed), for messages; "0" when none was given. */
  timeoutText: string;
  /** Milliseconds an exchange may move no bytes; 0 disables; undefined for the default. */
  stallTimeoutMs: number | undefined;
  /** Talk HTTP instead of HTTPS to the registry. */
  plainHttp: boolean;
  /** Talk HTTPS without verifying the registry's certificate. */
  insecure: boolean;
  /** Path of a PEM file with extra CA certificates. */
  caFile: string | undefined;
  /** Path of the docker configuration file to use instead of the default one. */
  registryConfig: string | undefined;
  /** User name of an explicit credential whose password arrives on standard input. */
  username: string | undefined;
  /** Print one line per HTTP exchange on standard error. */
  debug: boolean;
  /** Print the result as JSON on standard output. */
  json: boolean;
}

/** The flags of the commands that read an artifact (`pull`, `inspect`, `verify`, `copy`). */
export interface ReadFlags {
  /** `--mirror` values (`host[:port][/namespace]`), in order; they replace the configured ones. */
  mirrors: string[];
  /** `--registries-conf FILE`: the registries configuration to read mirrors from. */
  registriesConf: string | undefined;
}

/** The flags shared by `push` and `pull`. */
export interface TransferFlags extends RegistryFlags {
  /** Concurrent part transfers, or undefined for the library's default. */
  workers: number | undefined;
  /** How progress is shown. */
  progress: ProgressMode;
  /** One bandwidth cap over the whole transfer, bytes per second; undefined for none. */
  limitRate: number | undefined;
  /** `--hash-threads N`: the most hashing threads; undefined for the library's default. */
  hashThreads: number | undefined;
}

/** A parsed `push` command line. */
export interface PushCommand extends TransferFlags {
  /** Discriminant. */
  kind: "push";
  /** The reference to push to, as typed. */
  reference: string;
  /** The file to push; `-` reads standard input. */
  file: string;
  /** `--name`: the title recorded for standard input (`-`). */
  name?: string | undefined;
  /** `--temp-dir`: where the parts of a push from standard input wait. */
  tempDir?: string | undefined;
  /** Part size in bytes, or undefined for the library's default. */
  partSize: number | undefined;
  /** Extra manifest annotations from `--annotation key=value`. */
  annotations: Record<string, string>;
  /**
   * The arguments after `push`, as typed (aliases spelled as given): after a part-size limit,
   * the failure report repeats them, `--part-size` replaced, as the command to run.
   */
  args: readonly string[];
}

/** A parsed `pull` command line. */
export interface PullCommand extends TransferFlags, ReadFlags {
  /** Discriminant. */
  kind: "pull";
  /** The reference to pull, as typed. */
  reference: string;
  /** The destination file, or a directory to write the file into under its recorded name. */
  destination: string;
  /** Check the whole-file digest annotation while parts land. */
  verifyFileDigest: boolean;
  /** Into a directory: replace a file of the artifact's name. */
  overwrite: boolean;
  /**
   * `--wait[=DURATION]`: how long to wait for another pull of the destination to finish, in
   * milliseconds (0: as long as it takes); undefined without the flag (refused at once).
   */
  waitMs: number | undefined;
  /** `--temp-dir`: where parts of a pull to standard output wait when they do not fit in memory. */
  tempDir?: string | undefined;
  /** `--file NAME`: of an artifact with one file per layer, the file to take. */
  layerFile?: string | undefined;
  /** `--reuse FILE`: a local file whose parts that match are copied instead of fetched. */
  reuse?: string | undefined;
}

/** A parsed `copy` command line. */
export interface CopyCommand extends TransferFlags, ReadFlags {
  /** Discriminant. */
  kind: "copy";
  /** The artifact to copy, as typed. */
  source: string;
  /** Where the copy goes, as typed. */
  target: string;
  /** How each registry is reached (`--src-…`/`--dest-…` over the shared flags). */
  sides: CopySides;
}

/** A parsed `inspect` command line. */
export interface InspectCommand extends RegistryFlags, ReadFlags {
  /** Discriminant. */
  kind: "inspect";
  /** The reference to describe, as typed. */
  reference: string;
}

/** A parsed `cat` command line. */
export interface CatCommand extends RegistryFlags, ReadFlags {
  /** Discriminant. */
  kind: "cat";
  /** The reference to read, as typed. */
  reference: string;
  /** `--range`, or undefined for the whole file. */
  range: ByteRange | undefined;
  /** `--range` as typed (for messages). */
  rangeText: string;
  /** `--cache-dir`: where verified parts are kept for later reads. */
  cacheDir: string | undefined;
  /** `--temp-dir`: where fetched parts wait when they do not fit in memory. */
  tempDir?: string | undefined;
  /** `--limit-rate`: the bandwidth cap, bytes per second; undefined for none. */
  limitRate: number | undefined;
}

/** A parsed `verify` command line. */
export interface VerifyCommand extends RegistryFlags, ReadFlags {
  /** Discriminant. */
  kind: "verify";
  /** The reference whose parts the file is compared with, as typed. */
  reference: string;
  /** The local file to check. */
  file: string;
  /** Concurrent hashing threads, or undefined for the library's default. */
  workers: number | undefined;
  /** How the hashing's progress is shown. */
  progress: ProgressMode;
}

/** A parsed `login` command line. */
export interface LoginCommand extends RegistryFlags {
  /** Discriminant. */
  kind: "login";
  /**
   * Without `--password-stdin`, the credential is asked on the terminal: this is the user name
   * given with `--username`, or "" to ask for it too. Undefined with `--password-stdin`.
   */
  prompt: string | undefined;
  /** The registry host (`host[:port]`). */
  registry: string;
}

/** A parsed `logout` command line. */
export interface LogoutCommand extends Pick<RegistryFlags, "timeoutMs" | "timeoutText"> {
  /** Discriminant. */
  kind: "logout";
  /** The registry host (`host[:port]`). */
  registry: string;
  /** Path of the docker configuration file to use instead of the default one. */
  registryConfig: string | undefined;
  /** Print the result as JSON on standard output. */
  json: boolean;
}

/** A request for help (`-h`, `--help`, `help [command]`) or for the version. */
export type InfoCommand =
  | { kind: "help"; command: HelpTopic | undefined }
  | { kind: "version" };

/** Every command that does something. */
export type RunCommand =
  | BlobPullCommand
  | BlobPushCommand
  | BlobExistsCommand
  | BlobMountCommand
  | PushCommand
  | PullCommand
  | CopyCommand
  | InspectCommand
  | CatCommand
  | VerifyCommand
  | LoginCommand
  | LogoutCommand;

/** A parsed `blob pull` command line. */
export interface BlobPullCommand extends TransferFlags, ReadFlags {
  /** Discriminant. */
  kind: "blob-pull";
  /** `<repo@digest>` as typed. */
  reference: string;
  /** The registry and repository. */
  repository: string;
  /** The blob's digest. */
  digest: string;
  /** The file to write, or `-` for standard output. */
  destination: string;
  /** Bytes per ranged read, or undefined for the default. */
  chunkSize: number | undefined;
}

/** A parsed `blob push` command line. */
export interface BlobPushCommand extends TransferFlags {
  /** Discriminant. */
  kind: "blob-push";
  /** `<repo>` as typed. */
  reference: string;
  /** The file to upload. */
  file: string;
  /** Upload in chunks of this many bytes; undefined: one monolithic upload. */
  chunkSize: number | undefined;
}

/** A parsed `blob exists` command line. */
export interface BlobExistsCommand extends RegistryFlags {
  /** Discriminant. */
  kind: "blob-exists";
  /** `<repo@digest>` as typed. */
  reference: string;
  /** The registry and repository. */
  repository: string;
  /** The blob's digest. */
  digest: string;
}

/** A parsed `blob mount` command line. */
export interface BlobMountCommand extends RegistryFlags {
  /** Discriminant. */
  kind: "blob-mount";
  /** `<from-repo@digest>` as typed. */
  source: string;
  /** The registry and repository the blob is in. */
  from: string;
  /** The blob's digest. */
  digest: string;
  /** `<to-repo>` as typed: the repository to mount the blob into. */
  target: string;
}

/** Everything the command line can ask for. */
export type CliCommand = RunCommand | InfoCommand;

type OptionSpec = { type: "string" | "boolean"; short?: string; multiple?: boolean };

const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const;

// `--format json` is oras's spelling of `--json`.
const JSON_OPTION = { json: { type: "boolean" }, format: { type: "string" } } as const;

const CONFIG_OPTION = { "registry-config": { type: "string" } } as const;

const REGISTRY_OPTIONS = {
  ...HELP_OPTION,
  ...JSON_OPTION,
  ...CONFIG_OPTION,
  timeout: { type: "string" },
  "stall-timeout": { type: "string" },
  "plain-http": { type: "boolean" },
  insecure: { type: "boolean" },
  "ca-file": { type: "string" },
  username: { type: "string", short: "u" },
  "password-stdin": { type: "boolean" },
  debug: { type: "boolean", short: "d" },
} as const;

// `--concurrency` is oras's spelling of `--workers`.
const WORKERS_OPTIONS = { workers: { type: "string" }, concurrency: { type: "string" } } as const;

const TRANSFER_OPTIONS = {
  ...REGISTRY_OPTIONS,
  ...WORKERS_OPTIONS,
  progress: { type: "string" },
  "limit-rate": { type: "string" },
  "hash-threads": { type: "string" },
} as const;

// A copy talks to two registries: one explicit credential would reach both, so each side's
// credential comes from the docker configuration instead.
const { username: _username, "password-stdin": _passwordStdin, ...COPY_ONLY } = TRANSFER_OPTIONS;

const MIRROR_OPTIONS = {
  mirror: { type: "string", multiple: true },
  "registries-conf": { type: "string" },
} as const;

const COPY_OPTIONS = { ...COPY_ONLY, ...MIRROR_OPTIONS } as const;

/** Flag values by long name, as `node:util`'s `parseArgs` returns them. */
type Values = Record<string, string | string[] | boolean | undefined>;

/** The parsed flags and operands of one command line, with checked accessors. */
class Parsed {
  /** The flag each value came from when it was given under another name (`--concurrency`). */
  readonly #spelled = new Map<string, string>();
  /** The flag values, under our names: an alias's value is moved to the flag it stands for. */
  readonly values: Values;

  constructor(
    readonly command: CommandName,
    values: Values,
    readonly operands: readonly string[],
    /** The arguments after the command word, as typed. */
    readonly args: readonly string[],
  ) {
    this.values = { ...values };
    this.#alias("concurrency", "workers");
    this.#format();
  }

  /** The name to quote in a message about `name`'s value: the one typed. */
  #typed(name: string): string {
    return `--${this.#spelled.get(name) ?? name}`;
  }

  /** Moves the value of `alias` to `name`; both given is a usage error. */
  #alias(alias: string, name: string): void {
    if (this.values[alias] === undefined) return;
    if (this.values[name] !== undefined) {
      throw new UsageError(
        `--${alias} is another name for --${name}: give one of them`,
        this.command,
      );
    }
    this.values[name] = this.values[alias];
    this.#spelled.set(name, alias);
    delete this.values[alias];
  }

  /** `--format json` (oras) means `--json`; `--format text` is the default table or line. */
  #format(): void {
    const format = this.values.format;
    delete this.values.format;
    if (format === undefined) return;
    if (format !== "json" && format !== "text") {
      throw new UsageError("--format: must be json or text", this.command);
    }
    if (format === "text" && this.values.json === true) {
      throw new UsageError("--format text contradicts --json", this.command);
    }
    if (format === "json") this.values.json = true;
  }

  /** The value of a boolean flag. */
  bool(name: string): boolean {
    return this.values[name] === true;
  }

  /** Every value of a repeatable string flag, in order. */
  list(name: string): string[] {
    const value = this.values[name];
    return Array.isArray(value) ? value : [];
  }

  /** The value of a string flag that must not be empty when given. */
  text(name: string): string | undefined {
    const value = this.values[name];
    if (typeof value !== "string") return undefined;
    if (value === "") throw new UsageError(`${this.#typed(name)}: must not be empty`, this.command);
    return value;
  }

  /** The value of a flag parsed by `parse`; its error becomes a usage error naming the flag. */
  flag<T>(name: string, parse: (text: string) => T): T | undefined {
    const value = this.values[name];
    if (typeof value !== "string") return undefined;
    try {
      return parse(value);
    } catch (err) {
      const why = err instanceof Error ? err.message : err;
      // The value as typed, escaped: it may hold anything a shell passes.
      const got = JSON.stringify(terminalText(value));
      throw new UsageError(`${this.#typed(name)}: ${why} (got ${got})`, this.command);
    }
  }

  /** The `--timeout` of a command: milliseconds (0 = none) and the text as typed. */
  limit(): Pick<RegistryFlags, "timeoutMs" | "timeoutText"> {
    return {
      timeoutMs: this.flag("timeout", parseLimit) ?? 0,
      timeoutText: typeof this.values.timeout === "string" ? this.values.timeout.trim() : "0",
    };
  }

  /**
   * The flags of a command that talks to a registry, checked together. `login` may name the
   * user without `--password-stdin`: it then asks on the terminal.
   */
  registry(): RegistryFlags {
    const username = this.text("username");
    const passwordStdin = this.bool("password-stdin");
    if (this.values.username !== undefined && !passwordStdin && this.command !== "login") {
      throw new UsageError(
        "--username needs --password-stdin (passwords are never flags)",
        this.command,
      );
    }
    if (passwordStdin && username === undefined) {
      throw new UsageError("--password-stdin needs --username", this.command);
    }
    const plainHttp = this.bool("plain-http");
    const insecure = this.bool("insecure");
    if (plainHttp && insecure) {
      throw new UsageError("--insecure is for HTTPS; it cannot go with --plain-http", this.command);
    }
    return {
      ...this.limit(),
      stallTimeoutMs: this.flag("stall-timeout", parseLimit),
      plainHttp,
      insecure,
      caFile: this.text("ca-file"),
      registryConfig: this.text("registry-config"),
      username,
      debug: this.bool("debug"),
      json: this.bool("json"),
    };
  }

  /** The flags of the commands that read an artifact. */
  reads(): ReadFlags {
    const mirrors = this.list("mirror");
    mirrors.forEach((mirror, i) => {
      if (!isMirrorLocation(mirror)) {
        // The value is not repeated: it may be anything, control characters included.
        const which = mirrors.length > 1 ? ` (the ${ordinal(i + 1)})` : "";
        throw new UsageError(
          `--mirror${which}: expected HOST[:PORT] or HOST[:PORT]/NAMESPACE, without a scheme`,
          this.command,
        );
      }
    });
    return { mirrors, registriesConf: this.text("registries-conf") };
  }

  /** The flags of `push` and `pull`. */
  transfer(): TransferFlags {
    return {
      ...this.registry(),
      workers: this.flag("workers", parseWorkers),
      progress: this.progress(),
      limitRate: this.flag("limit-rate", parseRate),
      hashThreads: this.flag("hash-threads", parseHashThreads),
    };
  }

  /** The `--progress` mode, `auto` when not given. */
  progress(): ProgressMode {
    return this.flag("progress", parseProgressMode) ?? "auto";
  }
}

/** One command: its flags, its operand names, and how its command object is built. */
interface CommandSpec {
  readonly options: Readonly<Record<string, OptionSpec>>;
  readonly operands: readonly string[];
  readonly build: (parsed: Parsed) => RunCommand;
}

const BLOB_SPECS = {
  "blob pull": {
    options: { ...TRANSFER_OPTIONS, ...MIRROR_OPTIONS, "chunk-size": { type: "string" } },
    operands: ["<repo@digest>", "<file>"],
    build: (p: Parsed): RunCommand => ({
      kind: "blob-pull",
      ...p.transfer(),
      ...p.reads(),
      ...blobOperand(p, 0),
      reference: p.operands[0],
      destination: p.operands[1],
      chunkSize: p.flag("chunk-size", parseSize),
    }),
  },
  "blob push": {
    options: { ...TRANSFER_OPTIONS, "chunk-size": { type: "string" } },
    operands: ["<repo>", "<file>"],
    build: (p: Parsed): RunCommand => ({
      kind: "blob-push",
      ...p.transfer(),
      reference: repositoryOperand(p, 0),
      file: p.operands[1],
      chunkSize: p.flag("chunk-size", parseSize),
    }),
  },
  "blob exists": {
    options: REGISTRY_OPTIONS,
    operands: ["<repo@digest>"],
    build: (p: Parsed): RunCommand => ({
      kind: "blob-exists",
      ...p.registry(),
      ...blobOperand(p, 0),
      reference: p.operands[0],
    }),
  },
  "blob mount": {
    options: REGISTRY_OPTIONS,
    operands: ["<from-repo@digest>", "<to-repo>"],
    build: (p: Parsed): RunCommand => {
      const { repository: from, digest } = blobOperand(p, 0);
      const target = repositoryOperand(p, 1);
      if (from.slice(0, from.indexOf("/")) !== target.slice(0, target.indexOf("/"))) {
        throw new UsageError(
          "a mount stays on one registry: <from-repo@digest> and <to-repo> name different ones",
          p.command,
        );
      }
      return { kind: "blob-mount", ...p.registry(), source: p.operands[0], from, digest, target };
    },
  },
} as const satisfies Record<string, CommandSpec>;

/** Every command's flags and operands, in one place. */
const COMMAND_SPECS: Readonly<Record<CommandName, CommandSpec>> = {
  push: {
    options: {
      ...TRANSFER_OPTIONS,
      "part-size": { type: "string" },
      annotation: { type: "string", multiple: true },
      name: { type: "string" },
      "temp-dir": { type: "string" },
    },
    operands: ["<ref>", "<file>"],
    build: (p) => ({
      kind: "push",
      ...p.transfer(),
      reference: p.operands[0],
      file: p.operands[1],
      ...stdinPush(p),
      partSize: p.flag("part-size", parseSize),
      annotations: parseAnnotations(p.list("annotation"), "push"),
      args: p.args,
    }),
  },
  pull: {
    options: {
      ...TRANSFER_OPTIONS,
      ...MIRROR_OPTIONS,
      "verify-file-digest": { type: "boolean" },
      overwrite: { type: "boolean" },
      "temp-dir": { type: "string" },
      wait: { type: "string" },
      file: { type: "string" },
      reuse: { type: "string" },
    },
    operands: ["<ref>", "<dest>"],
    build: (p) => ({
      kind: "pull",
      ...p.transfer(),
      ...p.reads(),
      reference: p.operands[0],
      destination: p.operands[1],
      verifyFileDigest: p.bool("verify-file-digest"),
      overwrite: p.bool("overwrite"),
      ...tempDirFlag(p),
      waitMs: p.flag("wait", parseLimit),
      ...optional("layerFile", p.text("file")),
      ...optional("reuse", p.text("reuse")),
    }),
  },
  copy: {
    options: { ...COPY_OPTIONS, ...COPY_SIDE_OPTIONS },
    operands: ["<src-ref>", "<dst-ref>"],
    build: (p) => {
      const flags = p.transfer();
      const [source, target] = p.operands;
      return {
        kind: "copy",
        ...flags,
        ...p.reads(),
        source,
        target,
        sides: copySides(p, flags, [source, target]),
      };
    },
  },
  inspect: {
    options: { ...REGISTRY_OPTIONS, ...MIRROR_OPTIONS },
    operands: ["<ref>"],
    build: (p) => ({ kind: "inspect", ...p.registry(), ...p.reads(), reference: p.operands[0] }),
  },
  cat: {
    options: {
      ...REGISTRY_OPTIONS,
      ...MIRROR_OPTIONS,
      range: { type: "string" },
      "cache-dir": { type: "string" },
      "temp-dir": { type: "string" },
      "limit-rate": { type: "string" },
    },
    operands: ["<ref>"],
    build: (p) => ({
      kind: "cat",
      ...p.registry(),
      ...p.reads(),
      reference: p.operands[0],
      range: p.flag("range", parseByteRange),
      rangeText: typeof p.values.range === "string" ? p.values.range.trim() : "",
      cacheDir: p.text("cache-dir"),
      ...catTempDir(p),
      limitRate: p.flag("limit-rate", parseRate),
    }),
  },
  verify: {
    options: {
      ...REGISTRY_OPTIONS,
      ...MIRROR_OPTIONS,
      ...WORKERS_OPTIONS,
      progress: { type: "string" },
    },
    operands: ["<ref>", "<file>"],
    build: (p) => ({
      kind: "verify",
      ...p.registry(),
      ...p.reads(),
      reference: p.operands[0],
      file: p.operands[1],
      workers: p.flag("workers", parseWorkers),
      progress: p.progress(),
    }),
  },
  login: {
    options: REGISTRY_OPTIONS,
    operands: ["<registry>"],
    build: (p) => {
      const flags = p.registry();
      const registry = registryOperand(p);
      if (p.bool("password-stdin")) return { kind: "login", ...flags, registry, prompt: undefined };
      // No password on standard input: the terminal is asked, for the user name too if missing.
      return {
        kind: "login",
        ...flags,
        username: undefined,
        registry,
        prompt: flags.username ?? "",
      };
    },
  },
  logout: {
    options: { ...HELP_OPTION, ...JSON_OPTION, ...CONFIG_OPTION, timeout: { type: "string" } },
    operands: ["<registry>"],
    build: (p) => ({
      kind: "logout",
      ...p.limit(),
      registry: registryOperand(p),
      registryConfig: p.text("registry-config"),
      json: p.bool("json"),
    }),
  },
  ...BLOB_SPECS,
};

/** `--name` of a push from standard input; standard input cannot also carry a password. */
function stdinPush(p: Parsed): { name?: string } {
  const name = p.text("name");
  if (p.operands[1] !== "-") {
    tempDirFlag(p);
    if (name !== undefined) {
      throw new UsageError("--name is for a push from standard input (<file> is -)", p.command);
    }
    return {};
  }
  if (p.bool("password-stdin")) {
    throw new UsageError(
      "--password-stdin cannot go with - (standard input carries the file)",
      p.command,
    );
  }
  // The title recorded is the name's base name, when a pull into a directory could use it: a
  // name typed that gives none is a mistake to say now, not a title silently missing later.
  if (name !== undefined && !isPlainFileName(basename(name).normalize("NFC"))) {
    throw new UsageError(
      "--name: not a plain file name, so no title could be recorded (hidden, blank-looking, " +
        "look-alike or reserved characters, or a leading - or ~)",
      p.command,
    );
  }
  return { ...(name === undefined ? {} : { name }), ...tempDirFlag(p) };
}

/** `cat --temp-dir`: parts kept in `--cache-dir` never wait anywhere else. */
function catTempDir(p: Parsed): { tempDir?: string } {
  const tempDir = p.text("temp-dir");
  if (tempDir === undefined) return {};
  if (p.text("cache-dir") !== undefined) {
    throw new UsageError(
      "--temp-dir and --cache-dir: parts kept in the cache directory wait nowhere else",
      p.command,
    );
  }
  return { tempDir };
}

/** `--temp-dir`, which only a transfer through a pipe (`-`) uses. */
function tempDirFlag(p: Parsed): { tempDir?: string } {
  if (p.command === "pull" && p.operands[1] === "-") {
    for (const flag of ["verify-file-digest", "overwrite", "wait"]) {
      if (p.values[flag] !== undefined) {
        throw new UsageError(
          `--${flag} is for a pull into a file; with - the file goes to standard output`,
          p.command,
        );
      }
    }
  }
  const tempDir = p.text("temp-dir");
  if (tempDir === undefined) return {};
  if (p.operands[1] !== "-") {
    throw new UsageError("--temp-dir is for a transfer through a pipe (-)", p.command);
  }
  return { tempDir };
}

/** `{ [key]: value }` when `value` was given, else nothing: a flag not typed adds no field. */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** The words after `blob`. */
const BLOB_SUBCOMMANDS = ["pull", "push", "exists", "mount"] as const;

/** `<repo@digest>`: the repository and a `sha256:` digest of 64 lowercase hex digits. */
function blobOperand(p: Parsed, index: number): { repository: string; digest: string } {
  const text = p.operands[index];
  const at = text.lastIndexOf("@");
  const digest = at < 0 ? "" : text.slice(at + 1);
  const name = p.command === "blob mount" ? "<from-repo@digest>" : "<repo@digest>";
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) {
    throw new UsageError(
      `${name}: expected REGISTRY/REPOSITORY@sha256:<64 lowercase hex digits>`,
      p.command,
    );
  }
  const repository = at < 0 ? text : text.slice(0, at);
  checkRepository(p, repository, name);
  return { repository, digest };
}

/** `<repo>`: `REGISTRY/REPOSITORY`, without a tag or digest. */
function repositoryOperand(p: Parsed, index: number): string {
  const text = p.operands[index];
  const name = p.command === "blob mount" ? "<to-repo>" : "<repo>";
  checkRepository(p, text, name);
  return text;
}

function checkRepository(p: Parsed, text: string, name: string): void {
  // REGISTRY/REPOSITORY as a reference spells it, the registry named (no default registry).
  let named = false;
  try {
    const reference = parseReference(`${text}:latest`);
    named = `${reference.registry}/${reference.repository}` === text;
  } catch {
    named = false;
  }
  if (!named) {
    throw new UsageError(
      `${name}: expected REGISTRY/REPOSITORY such as registry.example:5000/team/data`,
      p.command,
    );
  }
}

/** The command names, in the order the usage lists them. */
export const COMMAND_NAMES: readonly CommandName[] = Object.keys(COMMAND_SPECS) as CommandName[];

function isCommandName(text: string | undefined): text is CommandName {
  return text !== undefined && Object.hasOwn(COMMAND_SPECS, text);
}

/**
 * Whether the command named `command` (as a failure report names it: `pull`, `blob pull`)
 * takes the long flag `flag` (without dashes), so that advice names only flags it has.
 *
 * @example
 * ```ts
 * import { takesFlag } from "./args.ts";
 * console.log(takesFlag("pull", "workers"), takesFlag("cat", "workers")); // true false
 * ```
 */
export function takesFlag(command: string, flag: string): boolean {
  return isCommandName(command) && Object.hasOwn(COMMAND_SPECS[command].options, flag);
}

/**
 * Parses `args` (without the program name). The first argument selects the command (see
 * {@linkcode COMMAND_NAMES}), `help [command]`, or the global flags `-h`/`--help` and
 * `--version`. Every flag value is checked here, so a command that parses only fails for reasons
 * outside the command line.
 *
 * @throws {UsageError} For an unknown command or flag, a missing or unparseable value, a
 * negative duration or one past 8760h, a non-positive worker count or part size, `--username`
 * without `--password-stdin` (or the reverse), `--insecure` with `--plain-http`, or a wrong
 * operand count.
 *
 * @example
 * ```ts
 * import { parseCommandLine } from "./args.ts";
 * const command = parseCommandLine(["pull", "--workers", "4", "127.0.0.1:5000/a/b:v1", "out.bin"]);
 * if (command.kind === "pull") console.log(command.workers, command.destination); // 4 "out.bin"
 * ```
 */
export function parseCommandLine(args: readonly string[]): CliCommand {
  const [first, ...rest] = args;
  if (first === undefined) throw new UsageError("missing command");
  if (first === "-h" || first === "--help") return { kind: "help", command: undefined };
  if (first === "--version") return { kind: "version" };
  if (first === "help") {
    if (rest.length === 0) return { kind: "help", command: undefined };
    if (rest.length === 1 && isCommandName(rest[0])) return { kind: "help", command: rest[0] };
    if (rest.length === 1 && rest[0] === "blob") return { kind: "help", command: "blob" };
    throw new UsageError(`help takes at most one command: ${COMMAND_NAMES.join(", ")}`);
  }
  if (first === "blob") return parseBlobCommand(rest);
  if (!isCommandName(first)) {
    throw new UsageError(
      unknownCommandMessage(first, COMMAND_NAMES, flagOwners(), typedLater(rest)),
    );
  }
  return parseCommand(first, rest);
}

/** `blob <subcommand> …`: the subcommand word picks the command. */
function parseBlobCommand(rest: readonly string[]): CliCommand {
  const [word, ...args] = rest;
  if (word === undefined) {
    throw new UsageError(`blob needs a subcommand: ${BLOB_SUBCOMMANDS.join(", ")}`);
  }
  if (word === "-h" || word === "--help") return { kind: "help", command: "blob" };
  const command = `blob ${word}`;
  if (!isCommandName(command)) {
    // The word typed is not repeated: it may be anything a shell passes.
    throw new UsageError(`blob takes one of: ${BLOB_SUBCOMMANDS.join(", ")}`);
  }
  return parseCommand(command, [...args]);
}

/**
 * Throws a usage error naming the first flag of `args` that `command` does not take, with a hint
 * or a suggestion, before the strict parse, whose own message names the flag only.
 */
function refuseUnknownFlags(command: CommandName, args: string[]): void {
  const { options } = COMMAND_SPECS[command];
  const { tokens } = parseArgs({
    args,
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== "option" || Object.hasOwn(options, token.name)) continue;
    const flag = { raw: token.rawName, value: token.value };
    const owners = new Map([...flagOwners()].filter(([name]) => !Object.hasOwn(options, name)));
    throw new UsageError(
      unknownFlagMessage(flag, command, Object.keys(options), owners),
      command,
    );
  }
}

/** The first command named among `args` (after a flag typed first), with its long flags. */
function typedLater(args: readonly string[]): TypedCommand | undefined {
  const command = args.find(isCommandName);
  return command === undefined
    ? undefined
    : { command, flags: Object.keys(COMMAND_SPECS[command].options) };
}

/** Every long flag name, mapped to the first command (in usage order) that takes it. */
function flagOwners(): Map<string, CommandName> {
  const owners = new Map<string, CommandName>();
  for (const command of COMMAND_NAMES) {
    for (const name of Object.keys(COMMAND_SPECS[command].options)) {
      if (!owners.has(name)) owners.set(name, command);
    }
  }
  return owners;
}

/**
 * `args` with `--flag -5s` written `--flag=-5s` for a flag that takes a value: node:util calls a
 * value that starts with `-` ambiguous, when what the user needs is the flag's own sentence
 * (a negative duration, count or rate).
 */
function joinNegativeValues(command: CommandName, args: readonly string[]): string[] {
  const options: Record<string, { type: string }> = COMMAND_SPECS[command].options;
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--") return [...out, ...args.slice(i)];
    const name = /^--([^=]+)$/.exec(args[i])?.[1];
    const takesValue = name !== undefined && options[name]?.type === "string";
    if (takesValue && /^-\d/.test(args[i + 1] ?? "")) {
      out.push(`${args[i]}=${args[++i]}`);
    } else {
      out.push(args[i]);
    }
  }
  return out;
}

/** `--wait` alone is `--wait=0` (no limit): only `--wait=DURATION` takes a value. */
function bareWait(command: CommandName, args: string[]): string[] {
  if (command !== "pull") return args;
  const end = args.indexOf("--");
  return args.map((arg, i) => arg === "--wait" && (end < 0 || i < end) ? "--wait=0" : arg);
}

function parseCommand(command: CommandName, typed: string[]): CliCommand {
  const spec = COMMAND_SPECS[command];
  const args = bareWait(command, joinNegativeValues(command, typed));
  refuseUnknownFlags(command, args);
  let parsed;
  try {
    parsed = parseArgs({ args, options: spec.options, strict: true, allowPositionals: true });
  } catch (err) {
    // node:util appends multi-line hints; the first sentence names the flag and the problem.
    const text = err instanceof Error ? err.message.split("\n")[0].split(". ")[0] : String(err);
    throw new UsageError(text.replace(/\.$/, ""), command);
  }
  const values = parsed.values as Record<string, string | string[] | boolean | undefined>;
  if (values.help) return { kind: "help", command };

  const operands = parsed.positionals;
  if (operands.length !== spec.operands.length) {
    const names = spec.operands.join(" and ");
    const expected = spec.operands.length === 1 ? "1 operand" : `${spec.operands.length} operands`;
    throw new UsageError(`expected ${expected}, ${names}; got ${operands.length}`, command);
  }
  operands.forEach((operand, i) => {
    if (operand === "") throw new UsageError(`${spec.operands[i]} must not be empty`, command);
  });
  return spec.build(new Parsed(command, values, operands, Object.freeze([...typed])));
}

/** The `<registry>` operand: a registry host, `host[:port]`, without scheme or path. */
function registryOperand(p: Parsed): string {
  const registry = p.operands[0];
  try {
    registryOrigin(registry);
  } catch {
    throw new UsageError(
      "<registry> must be a registry host such as ghcr.io or host:5000",
      p.command,
    );
  }
  return registry;
}

function ordinal(n: number): string {
  const suffix = n % 10 === 1 && n % 100 !== 11
    ? "st"
    : n % 10 === 2 && n % 100 !== 12
    ? "nd"
    : n % 10 === 3 && n % 100 !== 13
    ? "rd"
    : "th";
  return `${n}${suffix}`;
}

function parseWorkers(text: string): number {
  if (!/^\d+$/.test(text.trim())) throw new RangeError("must be a positive integer");
  const workers = Number(text.trim());
  if (!Number.isSafeInteger(workers) || workers < 1) {
    throw new RangeError("must be a positive integer");
  }
  return workers;
}

function parseHashThreads(text: string): number {
  const count = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!(count >= 0 && count <= 256)) throw new RangeError("must be an integer from 0 to 256");
  return count;
}

function parseProgressMode(text: string): ProgressMode {
  const mode = PROGRESS_MODES.find((m) => m === text);
  if (mode === undefined) throw new RangeError(`must be one of ${PROGRESS_MODES.join(", ")}`);
  return mode;
}

/** `--annotation key=value` flags: split at the first `=`; reserved and repeated keys refused. */
function parseAnnotations(
  flags: readonly string[],
  command: CommandName,
): Record<string, string> {
  const annotations: Record<string, string> = {};
  for (const flag of flags) {
    const at = flag.indexOf("=");
    const key = at < 0 ? "" : flag.slice(0, at);
    if (key === "") throw new UsageError("--annotation: expected key=value", command);
    if (isReservedAnnotation(key)) {
      throw new UsageError(`--annotation: the key ${key} is reserved by the format`, command);
    }
    if (Object.hasOwn(annotations, key)) {
      throw new UsageError(`--annotation: the key ${key} is given twice`, command);
    }
    annotations[key] = flag.slice(at + 1);
  }
  return annotations;
}
