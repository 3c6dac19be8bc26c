/**
 * A client's session, the one place where the engine is put together: it resolves the settings
 * both clients share (named the same in both) against the client's policy, owns the transport
 * stack, the hashing threads, the mirrors and the progress interval, and hands out registry
 * objects (API root, tag list) and repository objects (blobs, uploads, manifests). Nothing
 * else in the library builds a `RemoteRepository`.
 *
 * @module
 */
import type { Clock } from "../transport/clock.ts";
import { systemClock } from "../transport/clock.ts";
import type { ExchangeObserver } from "../transport/exchange_observer.ts";
import type { Fetch } from "../transport/fetch.ts";
import type { RateLimit } from "../transport/layers/rate_limit.ts";
import { validateStallTimeout } from "../transport/layers/stall_guard.ts";
import { Sha256Threads } from "../hashing/sha256_threads.ts";
import { defaultHashThreads, hashesInlineByDefault } from "../hashing/hash_threads_default.ts";
import { registryOrigin } from "../registry/endpoints.ts";
import type { Reference } from "../registry/reference.ts";
import {
  type CredentialSource,
  type ExplicitCredential,
  staticCredentials,
} from "../auth/credential.ts";
import { ClientStack, type RegistryRoute, type RouteSite } from "./client_stack.ts";
import { MirrorSet, type MirrorSource, type MirrorTagListener } from "./mirror_reads.ts";
import { mirrorsOf, type MirrorTable } from "./mirror_table.ts";
import type { EnginePolicy } from "./policy.ts";
import type { RegistrySettings } from "./registry_settings.ts";
import { RemoteRegistry } from "./registry.ts";
import { RemoteRepository } from "./repository.ts";
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
   * One explicit credential for the registry (basic, or a registry token presented verbatim)
   * instead of `credentials`. Pass one of the two, not both.
   *
   * @default none: `credentials` decides
   */
  credential?: ExplicitCredential;
  /**
   * Where the registry's credentials come from: `dockerConfigCredentials()` (the docker
   * configuration and its credential helpers), `staticCredentials(...)`, or a source of the
   * caller's. Requests are authenticated only once the registry asks (a challenge).
   *
   * @default `PartedClient`: the docker configuration and its helpers. `BlobClient`: none, as
   * the blob specification says (docs/protocol.md#blob-operations): requests go as they are,
   * or through an authenticated `transport`.
   */
  credentials?: CredentialSource;
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
   * @default 4 attempts, full jitter from 1 s (the blob client: 250 ms), 30 s cap
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
   * Most threads that hash: local passes over a file (a push's part and file digests, a pull's
   * resume pass, `verify`, a push from a stream: one thread for its two digests) and downloads (so
   * receiving and hashing overlap). `0` hashes on the calling thread. Small transfers (under 16
   * MiB) always hash on the calling thread. Threads start only when work needs them; each costs
   * about 12–25 MiB.
   *
   * @default the number of cores; without this option, where one core hashes sha256 at 600 MB/s
   * or faster (measured once per process, about 7 ms), downloads hash on the receiving thread and
   * a push on the calling thread until a part turns out to be present (then its parts move to
   * threads, one fewer than this number: the file digest keeps the calling thread)
   */
  hashThreads?: number;
  /**
   * Time source of backoff waits; tests pass a fake one.
   *
   * @default the system clock
   */
  clock?: Clock;
}

/**
 * Progress callbacks are called at most once per this many milliseconds, plus once per phase
 * change: often enough for a progress bar, rare enough to cost nothing beside the transfer.
 */
export const PROGRESS_INTERVAL_MS = 100;

/**
 * The registry's credentials that `options` name: the one explicit credential as a source, else
 * `credentials`, else undefined (the client's policy decides).
 *
 * @throws {TypeError} Both `credential` and `credentials` are given.
 *
 * @example An explicit credential as a source
 * ```ts
 * import { credentialSource } from "./session.ts";
 * const credential = { username: "ci", password: "pw" };
 * const source = credentialSource({ credential }, "BlobClient");
 * console.log((await source?.get("registry.example"))?.username); // "ci"
 * ```
 */
export function credentialSource(
  options: ClientOptions,
  owner: string,
): CredentialSource | undefined {
  if (options.credential !== undefined && options.credentials !== undefined) {
    throw new TypeError(`${owner}: pass either credential or credentials, not both`);
  }
  if (options.credential !== undefined) return staticCredentials({ ...options.credential });
  return options.credentials;
}

/**
 * What hashing is for: `"local"`, passes over a file on this machine (as fast as the cores
 * allow); `"download"`, the running hashes of bytes as they arrive; `"push"`, a push's digests
 * of a file, which the link waits for less than a local pass does.
 */
export type HashWork = "local" | "download" | "push";

/** What a client adds to the shared settings when it opens its session. */
export interface SessionSetup {
  /** The client's name, for the errors of its options. */
  owner: string;
  /** The client's policy: the default, or a named preset (see `policy.ts`). */
  policy: EnginePolicy;
  /** The registry's credentials and the mirrors' (default: by the policy's rule). */
  credentials?: { registry?: CredentialSource; mirrors?: CredentialSource };
  /** Settings of single registries, checked (see `checkRegistrySettings`). */
  registries?: ReadonlyMap<string, Readonly<RegistrySettings>>;
  /** Idle keep-alive sockets kept per origin by the library pool. */
  maxIdleSocketsPerOrigin?: number;
  /** Mirrors that reads of a repository try first. */
  mirrors?: MirrorTable;
  /** Told which mirror resolved a tag when the registry could not be reached. */
  onMirrorTag?: MirrorTagListener;
}

/** A repository's operations and the tokens of its registry. */
export interface RepositoryHandle {
  /** The registry operations of the repository (reads try its mirrors first, if asked). */
  readonly repo: RemoteRepository;
  /** The registry's authenticator, when the session authenticates. */
  readonly authenticator: RegistryRoute["authenticator"];
}

/** The most hashing threads a client may ask for. */
const MAX_HASH_THREADS = 256;

/**
 * A client's resolved settings and its engine; nothing is opened until a request.
 *
 * @throws {TypeError} A setting has the wrong type.
 * @throws {RangeError} A number is out of range (the message quotes it).
 *
 * @example The session of a client
 * ```ts
 * import { ClientSession } from "./session.ts";
 * import { BLOB_SPEC_POLICY } from "./policy.ts";
 * const session = new ClientSession({ hashThreads: 2 }, { owner: "BlobClient", policy: BLOB_SPEC_POLICY });
 * const { repo } = session.repository({ registry: "127.0.0.1:5000", repository: "org/data" });
 * console.log(session.policy.retry.maxAttempts, session.hashThreads, repo.name); // 4 2 "org/data"
 * session.close();
 * ```
 */
export class ClientSession {
  /** The client's policy, its retry policy resolved from the options. */
  readonly policy: EnginePolicy;
  /** The time source of backoff waits. */
  readonly clock: Clock;
  /** Plain HTTP to registries without a setting of their own. */
  readonly plainHttp: boolean;
  /** The most hashing threads. */
  readonly hashThreads: number;
  /** Downloads and pushes hash on the calling thread (the default on a fast core). */
  readonly #inlineByDefault: boolean;
  readonly #stack: ClientStack;
  readonly #mirrors: MirrorTable | undefined;
  readonly #onMirrorTag: MirrorTagListener | undefined;

  /** Checks and resolves `options`; see the class documentation. */
  constructor(options: ClientOptions, setup: SessionSetup) {
    const { owner } = setup;
    if (typeof options !== "object" || options === null) {
      throw new TypeError(`${owner}: options must be an object`);
    }
    checkShared(options, owner);
    const retry = resolveRetryPolicy(options.retryPolicy, setup.policy.retry, owner);
    this.policy = Object.freeze({ ...setup.policy, retry });
    this.clock = options.clock ?? systemClock;
    this.plainHttp = options.plainHttp === true;
    this.hashThreads = options.hashThreads ?? defaultHashThreads();
    this.#inlineByDefault = options.hashThreads === undefined && hashesInlineByDefault();
    this.#mirrors = setup.mirrors;
    this.#onMirrorTag = setup.onMirrorTag;
    const { credentials } = setup;
    this.#stack = new ClientStack({
      policy: this.policy,
      ...(credentials?.registry ? { credentials: credentials.registry } : {}),
      ...(credentials?.mirrors ? { mirrorCredentials: credentials.mirrors } : {}),
      ...(setup.registries === undefined ? {} : { registries: setup.registries }),
      ...(setup.maxIdleSocketsPerOrigin === undefined
        ? {}
        : { maxIdleSocketsPerOrigin: setup.maxIdleSocketsPerOrigin }),
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

  /**
   * The operations of `reference`'s repository, in the scheme the settings give its registry;
   * with `reads`, its reads try the mirrors the session's table gives the reference first (each
   * on a mirror route of its own), writes never do.
   */
  repository(reference: Reference, reads = false): RepositoryHandle {
    const { registry } = reference;
    const origin = this.#stack.origin(registry);
    const route = this.#stack.route(origin, registry);
    const sources = reads && this.#mirrors !== undefined
      ? this.#mirrorSources(reference, this.#mirrors)
      : [];
    const mirrors = sources.length === 0
      ? undefined
      : new MirrorSet(sources, this.#onMirrorTag === undefined ? {} : { onTag: this.#onMirrorTag });
    return {
      repo: this.#repository(origin, reference.repository, route, this.policy.redirects, mirrors),
      authenticator: route.authenticator,
    };
  }

  /** The operations of `registry` (`host[:port]`) itself: API root, tag lists. */
  registry(registry: string): RemoteRegistry {
    const origin = this.#stack.origin(registry);
    const route = this.#stack.route(origin, registry);
    // The API root is the registry's own answer: no redirect is followed.
    const root = this.#repository(origin, "", route, {
      ...this.policy.redirects,
      readHops: 0,
      writes: "refuse",
    });
    return new RemoteRegistry(root, (repository) => this.repository({ registry, repository }).repo);
  }

  /**
   * The one place hashing threads are made: at most `count` of them (capped by the session's
   * `hashThreads`; `0` hashes on the calling thread), started as work needs them, for `work`:
   * where the default says so (see `hash_threads_default.ts`), a download's running hashes stay
   * on the calling thread, and so does all of a push's hashing (the push asks for threads of
   * its own once hashing is what it waits for). The caller closes them.
   */
  hashing(count: number = this.hashThreads, work: HashWork = "local"): Sha256Threads {
    const inline = work === "push" && this.#inlineByDefault;
    return new Sha256Threads(inline ? 0 : Math.min(count, this.hashThreads), {
      inlineRunning: work === "download" && this.#inlineByDefault,
    });
  }

  /** Closes the library's pooled connections (not a caller's transport's). */
  close(): void {
    this.#stack.close();
  }

  /** Each way to reach each mirror of `reference`, in order. */
  #mirrorSources(reference: Reference, table: MirrorTable): MirrorSource[] {
    const stack = this.#stack;
    const site: RouteSite = "mirror";
    return mirrorsOf(table, reference).flatMap((mirror) => {
      const origin = stack.origin(mirror.host);
      // An `insecure` mirror that does not speak TLS is asked again in plain HTTP.
      const origins = mirror.plainHttpFallback && origin.protocol === "https:"
        ? [origin, registryOrigin(mirror.host, { plainHttp: true })]
        : [origin];
      return origins.map((at) => ({
        repo: this.#repository(
          at,
          mirror.repository,
          stack.route(at, mirror.host, site),
          this.policy.redirects,
        ),
        resolvesTag: mirror.resolvesTag,
        host: mirror.host,
      }));
    });
  }

  /** The one place a repository is built. */
  #repository(
    origin: URL,
    name: string,
    route: RegistryRoute,
    redirects: EnginePolicy["redirects"],
    mirrors?: MirrorSet,
  ): RemoteRepository {
    return new RemoteRepository({
      origin,
      name,
      transport: route.transport,
      storageTransport: route.storageTransport,
      redirects,
      ...(mirrors === undefined ? {} : { mirrors }),
    });
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
