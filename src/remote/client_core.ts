/**
 * What both clients are made of, resolved once: the settings they share (named the same in
 * both), their defaults, the retry policy, the clock, the transport stack and the hashing
 * threads' limit. A client adds only what is its own (the parted client's credentials,
 * registries and mirrors; the blob client's upload and download modes).
 *
 * @module
 */
import type { Clock } from "../transport/clock.ts";
import { systemClock } from "../transport/clock.ts";
import type { ExchangeObserver } from "../transport/exchange_observer.ts";
import type { Fetch } from "../transport/fetch.ts";
import type { RateLimit } from "../transport/rate_limit.ts";
import { validateStallTimeout } from "../transport/stall_guard.ts";
import { coreCount } from "../registry/sha256_threads.ts";
import { ClientStack, type ClientStackOptions } from "./client_stack.ts";
import { resolveRetryPolicy, type RetryPolicy } from "./retry.ts";

/**
 * The settings both clients take, under the same names.
 *
 * @example Settings either client takes
 * ```ts
 * import { BlobClient, type ClientOptions, PartedClient } from "@ocipart/ocipart";
 * const shared: ClientOptions = { plainHttp: true, stallTimeoutMs: 120_000, hashThreads: 1 };
 * using blobs = new BlobClient(shared);
 * using parts = new PartedClient(shared);
 * console.log(shared.hashThreads); // 1
 * ```
 */
export interface ClientOptions {
  /**
   * The caller's transport for the registry origin: every registry request goes through it,
   * token exchanges included for the parted client. It must return redirects unfollowed.
   *
   * @default a library-owned `HttpTransport`
   */
  transport?: Fetch;
  /**
   * The transport for every other origin (blob redirects to storage or a CDN, upload locations
   * elsewhere, token realms on other hosts); it owns the peer-address policy. Requests reach it
   * without `Authorization`, `Proxy-Authorization`, `Cookie` and `Referer`.
   *
   * @default a library-owned transport that refuses loopback, private, link-local and
   * unspecified peers. With a caller's `transport` and no `storageTransport`, the parted client
   * refuses other hosts instead (nothing is sent); the blob client uses that library transport.
   */
  storageTransport?: Fetch;
  /**
   * Speak plain HTTP to the registry.
   *
   * @default false (HTTPS)
   */
  plainHttp?: boolean;
  /**
   * Extra PEM certificates the library's transports trust: a private CA, or a registry's own
   * self-signed certificate (then pinned: exactly that certificate is accepted).
   *
   * @default none (the runtime's roots only)
   */
  caCerts?: string[];
  /**
   * HTTPS without verifying the peer's certificate, on the library's transports; prefer
   * `caCerts`.
   *
   * @default false
   */
  insecureTls?: boolean;
  /**
   * Told of every HTTP exchange of the library's transports (method, registry, mirror or
   * storage, status, bytes, duration; nothing that locates or authenticates).
   *
   * @default none
   */
  onExchange?: ExchangeObserver;
  /**
   * Milliseconds an exchange may move no bytes (no request-body chunk taken, no answer, no
   * response-body chunk while one is awaited) before its attempt fails with a retryable
   * `StallError`, so the retry budget applies. `0` disables.
   *
   * @default 60000
   */
  stallTimeoutMs?: number;
  /**
   * Attempts and backoff of every operation. A given policy takes `maxAttempts` 1 and the
   * client's delays for missing fields, so `{}` means exactly one attempt. `maxAttempts`
   * bounds the whole operation, continuations of broken downloads included.
   *
   * @default 4 attempts, full jitter from 1 s (parted) or 250 ms (blob), 30 s cap
   */
  retryPolicy?: Partial<RetryPolicy>;
  /**
   * One bandwidth cap over every request and response body of the client, both directions,
   * every transfer together.
   *
   * @default none
   */
  rateLimit?: RateLimit;
  /**
   * Most threads that hash: downloads (so receiving and hashing overlap), and for the parted
   * client a push's digests, a pull's resume pass and `verify`. `0` hashes on the calling
   * thread. Small transfers (under 16 MiB) always hash on the calling thread.
   *
   * @default the number of cores
   */
  hashThreads?: number;
  /**
   * Time source of backoff waits; tests pass a fake one.
   *
   * @default the system clock
   */
  clock?: Clock;
}

/** What a client adds to the shared settings when it makes its core. */
export interface CoreSetup {
  /** The client's name, for the errors of its options. */
  owner: string;
  /** The client's default retry policy. */
  retryPolicy: Readonly<RetryPolicy>;
  /** The client's own stack settings (routing rules, authentication, registries). */
  stack?: Omit<ClientStackOptions, keyof ClientOptions>;
}

/** The most hashing threads a client may ask for. */
const MAX_HASH_THREADS = 256;

/**
 * A client's resolved settings and its transport stack; nothing is opened until a request.
 *
 * @throws {TypeError} A setting has the wrong type.
 * @throws {RangeError} A number is out of range (the message quotes it).
 *
 * @example The core of a client
 * ```ts
 * import { ClientCore } from "./client_core.ts";
 * import { BLOB_RETRY_POLICY } from "./retry.ts";
 * const core = new ClientCore({ hashThreads: 2 }, { owner: "BlobClient", retryPolicy: BLOB_RETRY_POLICY });
 * console.log(core.policy.maxAttempts, core.hashThreads); // 4 2
 * core.close();
 * ```
 */
export class ClientCore {
  /** The resolved retry policy. */
  readonly policy: RetryPolicy;
  /** The time source of backoff waits. */
  readonly clock: Clock;
  /** Plain HTTP to registries without a setting of their own. */
  readonly plainHttp: boolean;
  /** The most hashing threads. */
  readonly hashThreads: number;
  /** The client's transport stack, shared by all its transfers. */
  readonly stack: ClientStack;

  /** Checks and resolves `options`; see the class documentation. */
  constructor(options: ClientOptions, setup: CoreSetup) {
    const { owner } = setup;
    if (typeof options !== "object" || options === null) {
      throw new TypeError(`${owner}: options must be an object`);
    }
    checkShared(options, owner);
    this.policy = resolveRetryPolicy(options.retryPolicy, setup.retryPolicy, owner);
    this.clock = options.clock ?? systemClock;
    this.plainHttp = options.plainHttp === true;
    this.hashThreads = options.hashThreads ?? coreCount();
    this.stack = new ClientStack({
      ...setup.stack,
      transport: options.transport,
      storageTransport: options.storageTransport,
      plainHttp: this.plainHttp,
      caCerts: options.caCerts,
      insecureTls: options.insecureTls === true,
      stallTimeoutMs: validateStallTimeout(options.stallTimeoutMs),
      onExchange: options.onExchange,
      ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
    });
  }

  /** Closes the library's pooled connections (not a caller's transport's). */
  close(): void {
    this.stack.close();
  }
}

/** The type and range checks of the shared settings. */
function checkShared(options: ClientOptions, owner: string): void {
  for (const key of ["transport", "storageTransport"] as const) {
    if (options[key] !== undefined && typeof options[key] !== "function") {
      throw new TypeError(`${owner}: ${key} must be a fetch-shaped function`);
    }
  }
  for (const key of ["plainHttp", "insecureTls"] as const) {
    if (options[key] !== undefined && typeof options[key] !== "boolean") {
      throw new TypeError(`${owner}: ${key} must be a boolean`);
    }
  }
  const { caCerts, hashThreads } = options;
  if (caCerts !== undefined && (!Array.isArray(caCerts) || caCerts.some(notString))) {
    throw new TypeError(`${owner}: caCerts must be an array of PEM strings`);
  }
  if (
    hashThreads !== undefined &&
    (!Number.isSafeInteger(hashThreads) || hashThreads < 0 || hashThreads > MAX_HASH_THREADS)
  ) {
    throw new RangeError(
      `${owner}: hashThreads must be an integer in 0..${MAX_HASH_THREADS}, not ${hashThreads}`,
    );
  }
}

function notString(value: unknown): boolean {
  return typeof value !== "string";
}
