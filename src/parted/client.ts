/**
 * The parted client: push a file to a registry as ordered parts, pull it back.
 *
 * @module
 */
import type { CredentialSource } from "../auth/credential.ts";
import { parseReference } from "../registry/reference.ts";
import type { Descriptor } from "../registry/media_types.ts";
import type { Fetch } from "../transport/fetch.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import { PARTED_RETRY_POLICY, type RetryPolicy, validateRetryPolicy } from "../transport/retry.ts";
import { validateStallTimeout } from "../transport/stall_guard.ts";
import { ClientTransports, connect, type ExplicitCredential } from "./connection.ts";
import { DEFAULT_PART_SIZE, DEFAULT_WORKERS } from "./format.ts";
import type { PullDestination } from "./fs_partial.ts";
import type { PushSource } from "./fs_source.ts";
import type { ProgressCallback } from "./progress.ts";
import { runPull } from "./pull.ts";
import { runPush } from "./push.ts";

/** Options of {@linkcode PartedClient}. */
export interface PartedClientOptions {
  /**
   * The caller's transport, used for every registry request including token exchanges. It must
   * not follow redirects. Default: the package's `HttpTransport`.
   */
  fetch?: Fetch;
  /** Speak plain HTTP to the registry (default HTTPS). */
  plainHttp?: boolean;
  /** Extra PEM root certificates trusted by the default transport. */
  caCerts?: string[];
  /** One explicit credential instead of the docker configuration. */
  credential?: ExplicitCredential;
  /** Where credentials come from; default: the docker configuration and its helpers. */
  credentials?: CredentialSource;
  /**
   * Send cross-host requests (token realms, blob redirects, off-origin upload sessions) through
   * the caller's `fetch`, delegating the destination check to it. Without it, cross-host
   * requests through a caller's `fetch` fail closed.
   */
  unverifiedExternalTransport?: boolean;
  /**
   * Milliseconds an exchange may move no bytes (no request-body chunk taken, no answer, no
   * response-body chunk while one is awaited) before its attempt fails with a retryable
   * `StallError`, so the retry budget applies. `0` disables. Default: 60 000.
   */
  stallTimeoutMs?: number;
  /** Retry budget and backoff of every part, the config blob and the manifest. */
  retryPolicy?: RetryPolicy;
  /** Time source of backoff waits (tests). */
  clock?: Clock;
}

/** Options of {@linkcode PartedClient.push}. */
export interface PushOptions {
  /** Part size in bytes; default 512 MiB. Recorded in the manifest. */
  partSize?: number;
  /** Concurrent part uploads; default 8. */
  workers?: number;
  /** Receives a snapshot on every change, synchronously. */
  onProgress?: ProgressCallback;
  /** Cancels the push. */
  signal?: AbortSignal;
}

/** Options of {@linkcode PartedClient.pull}. */
export interface PullOptions {
  /** Concurrent part fetches and resume hashing; default 8. */
  workers?: number;
  /** Receives a snapshot on every change, synchronously. */
  onProgress?: ProgressCallback;
  /** Cancels the pull. */
  signal?: AbortSignal;
}

/**
 * Pushes one large file to an OCI registry as fixed-size parts (one blob each, listed by an
 * OCI image manifest) and pulls it back with resume and verification.
 *
 * @example Push then pull
 * ```ts ignore
 * import { fromFile, PartedClient, toFile } from "./mod.ts";
 * const client = new PartedClient({ plainHttp: true });
 * const descriptor = await client.push("127.0.0.1:5000/org/weights:v1", fromFile("./w.bin"));
 * await client.pull(`127.0.0.1:5000/org/weights@${descriptor.digest}`, toFile("./copy.bin"));
 * ```
 */
export class PartedClient {
  readonly #options: PartedClientOptions;
  readonly #policy: RetryPolicy;
  readonly #transports: ClientTransports | undefined;
  #closed = false;

  /** Creates a client; nothing is opened until a transfer starts. */
  constructor(options: PartedClientOptions = {}) {
    if (options.fetch !== undefined && typeof options.fetch !== "function") {
      throw new TypeError("PartedClient: fetch must be a function");
    }
    if (options.credential !== undefined && options.credentials !== undefined) {
      throw new TypeError("PartedClient: pass either credential or credentials, not both");
    }
    this.#policy = options.retryPolicy ?? PARTED_RETRY_POLICY;
    validateRetryPolicy(this.#policy);
    validateStallTimeout(options.stallTimeoutMs);
    this.#options = { ...options };
    // The default transports serve every transfer of this client (keep-alive connections are
    // reused); a caller's fetch is the caller's to manage.
    if (options.fetch === undefined) this.#transports = new ClientTransports(options.caCerts);
  }

  /**
   * Closes the pooled keep-alive connections of the default transports, which every push and
   * pull of this client shares. Call it once its transfers have settled (a transfer still
   * running loses its connections). The client is usable until closed; afterwards `push` and
   * `pull` reject with a `TypeError`. Idle connections never keep a process alive, but a
   * long-lived program should close the clients it no longer needs.
   *
   * @example
   * ```ts
   * import { PartedClient } from "./client.ts";
   * const client = new PartedClient({ plainHttp: true });
   * client.close();
   * ```
   */
  close(): void {
    this.#closed = true;
    this.#transports?.close();
  }

  /**
   * {@linkcode PartedClient.close}, for `using client = new PartedClient(…)`.
   *
   * @example
   * ```ts
   * import { PartedClient } from "./client.ts";
   * using client = new PartedClient({ plainHttp: true });
   * ```
   */
  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Pushes the file of `source` to `ref` (`registry/repository:tag`, or `@digest` to write the
   * manifest untagged by its own digest) and returns the manifest's descriptor.
   *
   * @throws {RangeError} A part size or worker count that is not a positive integer, before
   * anything is opened.
   */
  async push(ref: string, source: PushSource, options: PushOptions = {}): Promise<Descriptor> {
    const partSize = positive(options.partSize, DEFAULT_PART_SIZE, "part size");
    const workers = positive(options.workers, DEFAULT_WORKERS, "worker count");
    if (source?.kind !== "file") throw new TypeError("push: source must come from fromFile()");
    this.#checkOpen();
    const reference = parseReference(ref);
    return await runPush({
      reference,
      path: source.path,
      partSize,
      workers,
      onProgress: options.onProgress,
      signal: options.signal,
      policy: this.#policy,
      clock: this.#options.clock ?? systemClock,
    }, () => connect(reference, this.#options, this.#transports));
  }

  /**
   * Pulls the artifact `ref` into `destination`: verified part by part, resumed from
   * `<dest>.parted-partial` when a previous pull left one of the full length, and renamed onto
   * the destination only when complete. The partial is locked for the whole pull (a second pull
   * of the same destination rejects at once with a `LocalFileError`; Deno's `flock`, absent on
   * runtimes without file locks), never opened through a link, and sized only when the file system has room (measured with `statfs`; Deno asks for
   * `--allow-sys=statfs`, and without it the check is skipped).
   *
   * @throws {RangeError} A worker count that is not a positive integer, before anything is
   * opened.
   */
  async pull(ref: string, destination: PullDestination, options: PullOptions = {}): Promise<void> {
    const workers = positive(options.workers, DEFAULT_WORKERS, "worker count");
    if (destination?.kind !== "file") {
      throw new TypeError("pull: destination must come from toFile()");
    }
    this.#checkOpen();
    const reference = parseReference(ref);
    await runPull({
      reference,
      destination: destination.path,
      workers,
      onProgress: options.onProgress,
      signal: options.signal,
      policy: this.#policy,
      clock: this.#options.clock ?? systemClock,
    }, () => connect(reference, this.#options, this.#transports));
  }

  #checkOpen(): void {
    if (this.#closed) throw new TypeError("PartedClient: the client is closed");
  }
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer`);
  }
  return value;
}
