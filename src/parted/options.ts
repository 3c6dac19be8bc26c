/**
 * The options of `PartedClient`, apart from the client so that the layer that builds its
 * transport stack can name them without importing the client.
 *
 * @module
 */
import type { CredentialSource } from "../auth/credential.ts";
import type { Clock } from "../transport/clock.ts";
import type { ExchangeObserver } from "../transport/exchange_observer.ts";
import type { Fetch } from "../transport/fetch.ts";
import type { RateLimit } from "../transport/rate_limit.ts";
import type { RetryPolicy } from "../remote/retry.ts";
import type { MirrorTable } from "../remote/mirror_table.ts";
import type { RegistrySettings } from "../remote/registry_settings.ts";

/**
 * One explicit credential: basic, or a registry token presented verbatim.
 *
 * @example A robot account, or a registry token
 * ```ts
 * import { type ExplicitCredential, PartedClient } from "@ocipart/ocipart";
 * const basic: ExplicitCredential = { username: "ci", password: "secret" };
 * const token: ExplicitCredential = { registryToken: "eyJ…" };
 * using client = new PartedClient({ credential: basic });
 * console.log("registryToken" in token); // true
 * ```
 */
export type ExplicitCredential = { username: string; password: string } | {
  registryToken: string;
};

/**
 * Options of {@linkcode PartedClient}.
 *
 * @example Plain HTTP with one explicit credential
 * ```ts
 * import { PartedClient, type PartedClientOptions } from "@ocipart/ocipart";
 * const options: PartedClientOptions = {
 *   plainHttp: true,
 *   credential: { username: "ci", password: "secret" },
 *   retryPolicy: { maxAttempts: 6, baseDelayMs: 500, maxDelayMs: 30_000 },
 *   stallTimeoutMs: 120_000,
 * };
 * using client = new PartedClient(options);
 * ```
 */
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
  /**
   * HTTPS without verifying the registry's (or storage's) certificate, on the default
   * transports: for a registry with a self-signed certificate; prefer `caCerts`. Default: false.
   */
  insecureTls?: boolean;
  /**
   * Called once per HTTP exchange of the default transports (method, registry or storage,
   * status, bytes, duration; nothing that locates or authenticates), e.g. for a debug log.
   */
  onExchange?: ExchangeObserver;
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
  /**
   * Retry budget and backoff of every part, the config blob and the manifest. Omitted: 4
   * attempts, full jitter from 1 s, 30 s cap. A given policy takes `maxAttempts` 1 and the
   * default delays for missing fields, so `{}` means exactly one attempt (the rule both
   * clients share).
   */
  retryPolicy?: Partial<RetryPolicy>;
  /**
   * One bandwidth cap over every request and response body of this client: uploads, downloads
   * and copies, all workers together. Default: none.
   */
  rateLimit?: RateLimit;
  /**
   * Settings of single registries, keyed by `host[:port]` as references write it (the host
   * matched without regard to case, the port exactly): `plainHttp`, `insecureTls` and
   * `caCerts` there override the client-wide options for that registry and the storage its
   * blob reads are redirected to. E.g. a copy from a plain-HTTP registry to an HTTPS one, or a
   * mirror with its own CA. Checked when the client is created (`TypeError`, `RangeError`).
   */
  registries?: Record<string, RegistrySettings>;
  /**
   * Mirrors (pull-through caches, local copies) that pulls, inspections, verifications and the
   * source side of copies read from before the registry, by registry or namespace prefix (the
   * longest matching prefix wins; see `MirrorTable`). Each request is tried on the mirrors in
   * order, then on the registry, which also takes over whenever a mirror fails, lacks the
   * content or sends bytes that do not match their digest: every byte is verified as usual.
   * Tags are resolved on a mirror only when its `pullFromMirror` is `"all"` or `"tag-only"`.
   * Pushes never go to mirrors. A mirror host is reached like any registry host: as its
   * `registries` entry says, else as the client-wide options say; a mirror's own `plainHttp` or
   * `insecure` is that entry's `plainHttp` or `insecureTls` (a contradiction is a `RangeError`).
   * A mirror never receives the registry's credential: it is asked with its own, from
   * `credentials` or else the docker configuration. `readRegistriesConf()` builds this table
   * from the containers registries configuration. Default: none.
   */
  mirrors?: MirrorTable;
  /** Time source of backoff waits (tests). */
  clock?: Clock;
}
