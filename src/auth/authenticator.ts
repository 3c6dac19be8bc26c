/**
 * The per-registry authenticator: decides a request's `Authorization` before the request is
 * built, answers challenges, and keeps the token cache.
 *
 * @module
 */
import { AuthChallengeError, CredentialError } from "../errors/kinds.ts";
import { isAbortError } from "../errors/find_error.ts";
import { discard } from "../registry/discard.ts";
import { registryOrigin } from "../registry/endpoints.ts";
import { parseRegistryPath } from "../registry/endpoints.ts";
import { type Clock, systemClock } from "../transport/clock.ts";
import type { Fetch } from "../transport/fetch.ts";
import {
  type Authorize,
  authorizedFetch,
  type AuthorizedRound,
} from "../transport/layers/layered_fetch.ts";
import { AuthRetryError } from "./auth_retry_error.ts";
import { type Challenge, parseChallenges } from "./challenge.ts";
import type { Credential, CredentialSource } from "./credential.ts";
import { dockerConfigCredentials } from "./docker_config.ts";
import { mergeScopes, repositoryScope, type ScopeAction, scopeActionOf } from "./scope.ts";
import { type CachedToken, TokenCache } from "./token_cache.ts";
import { basicAuthorization, requestToken } from "./token_exchange.ts";
import { requestWith, signalOf } from "../transport/request_signal.ts";

/**
 * Options of {@linkcode RegistryAuthenticator}.
 *
 * @example Token realms on other hosts through the guarded transport
 * ```ts
 * import { createAuthFetch, type RegistryAuthenticatorOptions } from "@ocipart/ocipart";
 * import { guardedExternalTransport, HttpTransport } from "@ocipart/ocipart/transport";
 * const transport = new HttpTransport();
 * const external = guardedExternalTransport(transport); // refuses private peer addresses
 * const options: RegistryAuthenticatorOptions = {
 *   registry: "ghcr.io",
 *   fetch: transport.fetch,
 *   externalFetch: external.fetch,
 * };
 * const authFetch = createAuthFetch(options);
 * external.close();
 * transport.close();
 * ```
 */
export interface RegistryAuthenticatorOptions {
  /** The registry `host[:port]` that is dialed; credentials are looked up for this host. */
  registry: string;
  /** Use `http://` for the registry origin instead of `https://`. */
  plainHttp?: boolean;
  /** The transport for the registry origin (and for a token realm on the registry's host). */
  fetch: Fetch;
  /**
   * The transport for requests to other hosts: a token realm elsewhere, and any request that
   * is not for the registry origin (sent with no credential). Default: `fetch`.
   */
  externalFetch?: Fetch;
  /** Where credentials come from. Default: the docker configuration and its helpers. */
  credentials?: CredentialSource;
  /** Monotonic time for token lifetimes; tests pass a fake one. */
  clock?: Clock;
}

/** Counters of what an authenticator did, for progress reports and tests. */
export interface AuthenticatorStats {
  /** Requests made to token endpoints. */
  tokenRequests: number;
  /** Bodyless requests re-issued with a renewed credential inside the same call. */
  reissued: number;
  /** Requests with a body refused and returned as worth repeating ({@linkcode AuthRetryError}). */
  retriesRequested: number;
  /**
   * Tokens renewed by {@linkcode RegistryAuthenticator.ensureFresh} while the cache would still
   * have presented them: each is an upload attempt saved when the registry, or a proxy that
   * buffers request bodies in front of it, checks the token only after the body has arrived.
   */
  earlyRefreshes: number;
}

interface BearerChallenge {
  kind: "bearer";
  realm: URL;
  service: string | undefined;
}

type KnownChallenge = { kind: "basic" } | BearerChallenge;

/** The token an exchange asks for, and with which credential. */
interface WantedToken {
  repository: string;
  action: ScopeAction;
  challenge: BearerChallenge;
  extraScopes: readonly string[];
  credential: Credential;
}

/** What a request presents: an `Authorization` value and, for a cached token, its entry. */
interface Presented {
  header?: string;
  token?: CachedToken;
}

/** The request an exchange is about, and the token entry it is filed under. */
interface Target {
  request: Request;
  repository: string;
  action: ScopeAction;
}

const MAX_ROUNDS = 4;
const NOTHING_MORE: Promise<undefined> = Promise.resolve(undefined);

/**
 * Authenticates requests to one registry origin (docs/protocol.md#authentication):
 *
 * - The first request carries no credential; a registry that never challenges is never
 *   authenticated against and sees no extra request. Once a challenge is known, what a request
 *   must carry is worked out first (a cached or freshly acquired token, or Basic credentials)
 *   and set as the request is built.
 * - Scope follows the method: `pull` for GET and HEAD, `pull,push` otherwise; a challenge's own
 *   scope widens the token request but the token is filed under the method's entry.
 * - A 401, or a 403 with a challenge, is acted on only when acting changes what the next request
 *   presents; a token that never carried a success has had its chance. A bodyless request is
 *   re-issued inside the same call; a request with a body is never replayed: the call rejects
 *   with a retryable {@linkcode AuthRetryError} and the rebuilt request carries the renewal.
 * - A 403 without a challenge, and a refusal not worth acting on, are returned to the caller
 *   unchanged (its own status handling reports them as unauthorized).
 * - The credential is resolved once, lazily, for the dialed host; never for the challenge's
 *   `service`. Token requests go to the realm through `fetch` when the realm is on the
 *   registry's host, else through `externalFetch`.
 * - Requests for other origins pass through `externalFetch` with no credential added.
 *
 * @example An authenticated fetch for a registry
 * ```ts ignore
 * import { RegistryAuthenticator } from "./authenticator.ts";
 * import { staticCredentials } from "./credential.ts";
 * const auth = new RegistryAuthenticator({
 *   registry: "registry.example",
 *   fetch: (r) => fetch(r, { redirect: "manual" }),
 *   credentials: staticCredentials({ username: "ci", password: "secret" }),
 * });
 * const response = await auth.fetch(new Request("https://registry.example/v2/org/data/tags/list"));
 * ```
 */
export class RegistryAuthenticator {
  /** The authenticated transport; bound, so it can be passed around on its own. */
  readonly fetch: Fetch;
  /**
   * The credential step alone, for a transport that applies it as one of its layers
   * (`layeredFetch`); bound. Requests for other origins are left as they are.
   */
  readonly authorize: Authorize;
  readonly #origin: URL;
  readonly #registryHost: string;
  readonly #fetch: Fetch;
  readonly #external: Fetch;
  readonly #credentials: CredentialSource;
  readonly #clock: Clock;
  readonly #cache: TokenCache;
  readonly #inflight = new Map<string, Promise<CachedToken>>();
  #challenge: KnownChallenge | undefined;
  #credential: Promise<Credential> | undefined;
  readonly #stats: AuthenticatorStats = {
    tokenRequests: 0,
    reissued: 0,
    retriesRequested: 0,
    earlyRefreshes: 0,
  };

  /**
   * Creates the authenticator; nothing is read or sent until the first request.
   *
   * @throws {TypeError} `registry` is not a host with an optional port, or `fetch` is missing.
   */
  constructor(options: RegistryAuthenticatorOptions) {
    if (typeof options?.fetch !== "function") {
      throw new TypeError("RegistryAuthenticator: fetch must be a function");
    }
    this.#origin = registryOrigin(
      options.registry,
      options.plainHttp === undefined ? {} : { plainHttp: options.plainHttp },
    );
    this.#registryHost = options.registry.toLowerCase();
    this.#fetch = options.fetch;
    this.#external = options.externalFetch ?? options.fetch;
    this.#credentials = options.credentials ?? dockerConfigCredentials();
    this.#clock = options.clock ?? systemClock;
    this.#cache = new TokenCache({ clock: this.#clock });
    this.authorize = (request) => this.#authorize(request);
    const authorized = authorizedFetch(this.#fetch, this.authorize);
    this.fetch = (request: Request) =>
      new URL(request.url).origin === this.#origin.origin
        ? authorized(request)
        : this.#external(request);
  }

  /** A snapshot of the counters. */
  get stats(): AuthenticatorStats {
    return { ...this.#stats };
  }

  /** The token cache, for inspection. */
  get tokenCache(): TokenCache {
    return this.#cache;
  }

  /**
   * Before a long request (a part PUT), renews the cached token of `repository`'s `action` entry
   * when its stated lifetime ends within `minRemainingMs` (the time the body plausibly needs at
   * the measured throughput). Nothing happens when no Bearer challenge is known, when no token
   * is cached, or when a fresh token would not last noticeably longer. Returns whether a token
   * was renewed.
   *
   * @example Before uploading a part
   * ```ts ignore
   * const sendMs = (partBytes / bytesPerSecond) * 1000 * 2;
   * await auth.ensureFresh("org/data", "push", sendMs, signal);
   * ```
   */
  async ensureFresh(
    repository: string,
    action: ScopeAction,
    minRemainingMs: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const challenge = this.#challenge;
    if (challenge?.kind !== "bearer") return false;
    const entry = this.#cache.peek(repository, action);
    if (entry === undefined) return false;
    const remaining = this.#cache.remainingMs(entry);
    if (remaining >= minRemainingMs) return false;
    const elapsed = entry.lifetimeMs - remaining;
    // A fresh token adds `elapsed`; skip when it would not cover the need and adds little.
    if (entry.lifetimeMs < minRemainingMs && elapsed < entry.lifetimeMs / 2) return false;
    const credential = await this.#credentialFor(signal);
    if (credential.registryToken) return false;
    const wouldReuse = this.#cache.usable(entry);
    const fresh = await this.#acquire({
      repository,
      action,
      challenge,
      extraScopes: [],
      credential,
    }, signal);
    if (fresh.token === entry.token) return false;
    if (wouldReuse) this.#stats.earlyRefreshes++;
    return true;
  }

  /**
   * The first round of a request to the registry origin: the credential it presents, and what
   * to do with a refusal (a request for another origin goes as it is).
   */
  async #authorize(request: Request): Promise<AuthorizedRound> {
    const url = new URL(request.url);
    if (url.origin !== this.#origin.origin) return { request, next: () => NOTHING_MORE };
    const target: Target = {
      request,
      repository: parseRegistryPath(url.pathname)?.repository ?? "",
      action: scopeActionOf(request.method),
    };
    const presented = await this.#presentation(target.repository, target.action, signalOf(request));
    return this.#round(target, presented, 1);
  }

  #round(target: Target, presented: Presented, round: number): AuthorizedRound {
    const { request } = target;
    const headers = new Headers(request.headers);
    if (presented.header === undefined) headers.delete("authorization");
    else headers.set("authorization", presented.header);
    // The body is passed on as the same stream so that transports still recognise it (a file
    // range is sent from the file directly).
    const init = request.body === null
      ? { headers }
      : { headers, body: request.body, duplex: "half" } as RequestInit;
    return {
      request: requestWith(request, init),
      next: (response) => this.#afterAnswer(target, presented, round, response),
    };
  }

  /** The next round after `response`, or undefined to hand it back. */
  async #afterAnswer(
    target: Target,
    presented: Presented,
    round: number,
    response: Response,
  ): Promise<AuthorizedRound | undefined> {
    if (response.status !== 401 && response.status !== 403) {
      if (presented.token !== undefined) presented.token.proven = true;
      return undefined;
    }
    if (round >= MAX_ROUNDS) return undefined;
    const { request, repository, action } = target;
    let next: Presented | undefined;
    try {
      next = await this.#answer(response, repository, action, presented, signalOf(request));
    } catch (err) {
      discard(response);
      throw err;
    }
    if (next === undefined) return undefined;
    discard(response);
    if (request.body !== null) {
      this.#stats.retriesRequested++;
      throw new AuthRetryError(request.method, { status: response.status });
    }
    this.#stats.reissued++;
    return this.#round(target, next, round + 1);
  }

  /** What a request presents before it is built, from what is already known. */
  async #presentation(
    repository: string,
    action: ScopeAction,
    signal: AbortSignal,
  ): Promise<Presented> {
    const challenge = this.#challenge;
    if (challenge === undefined) return {};
    const credential = await this.#credentialFor(signal);
    if (challenge.kind === "basic") {
      return hasBasic(credential)
        ? { header: basicAuthorization(credential.username ?? "", credential.password ?? "") }
        : {};
    }
    if (credential.registryToken) return { header: `Bearer ${credential.registryToken}` };
    const cached = this.#cache.get(repository, action);
    const token = cached ??
      await this.#acquire({ repository, action, challenge, extraScopes: [], credential }, signal);
    return { header: `Bearer ${token.token}`, token };
  }

  /**
   * Decides what the next request presents after a refusal, or `undefined` when acting would
   * not change it (the refusal is final and goes back to the caller).
   */
  async #answer(
    response: Response,
    repository: string,
    action: ScopeAction,
    presented: Presented,
    signal: AbortSignal,
  ): Promise<Presented | undefined> {
    const status = response.status;
    const value = response.headers.get("www-authenticate");
    if (value === null || value.trim() === "") {
      if (status === 403) return undefined; // a permission answer, or a proxy in front
      throw new AuthChallengeError("refusal carries no challenge", { status });
    }
    let challenges: Challenge[];
    try {
      challenges = parseChallenges(value);
    } catch {
      throw new AuthChallengeError("challenge could not be read", { status });
    }
    const bearer = challenges.find((c) => c.scheme === "bearer");
    const basic = challenges.find((c) => c.scheme === "basic");
    if (bearer !== undefined) {
      const known = this.#bearerChallenge(bearer, status);
      this.#challenge = known;
      const credential = await this.#credentialFor(signal);
      if (credential.registryToken) {
        const header = `Bearer ${credential.registryToken}`;
        return header === presented.header ? undefined : { header };
      }
      const current = this.#cache.peek(repository, action);
      if (
        current !== undefined && current.token !== presented.token?.token &&
        this.#cache.usable(current)
      ) {
        // Another request renewed the entry meanwhile: present that one.
        return { header: `Bearer ${current.token}`, token: current };
      }
      const scopes = bearer.params.scope === undefined ? [] : [bearer.params.scope];
      // A fresh token refused is final, unless the challenge asks for access to another
      // repository too (a cross-repository mount needs pull on its source).
      if (
        presented.token !== undefined && !presented.token.proven &&
        !reachesOtherRepositories(scopes, repository)
      ) {
        return undefined;
      }
      const token = await this.#acquire({
        repository,
        action,
        challenge: known,
        extraScopes: scopes,
        credential,
      }, signal);
      const header = `Bearer ${token.token}`;
      return header === presented.header ? undefined : { header, token };
    }
    if (basic !== undefined) {
      this.#challenge = { kind: "basic" };
      const credential = await this.#credentialFor(signal);
      if (!hasBasic(credential)) return undefined; // anonymous refused
      const header = basicAuthorization(credential.username ?? "", credential.password ?? "");
      return header === presented.header ? undefined : { header };
    }
    throw new AuthChallengeError("no supported challenge", { status });
  }

  #bearerChallenge(challenge: Challenge, status: number): BearerChallenge {
    const realmText = challenge.params.realm;
    let realm: URL;
    try {
      if (realmText === undefined || realmText === "") throw new TypeError("no realm");
      realm = new URL(realmText);
    } catch {
      throw new AuthChallengeError("challenge has no usable realm", { status });
    }
    if (realm.protocol !== "https:" && realm.protocol !== "http:") {
      throw new AuthChallengeError("token realm scheme is not HTTP(S)", { status });
    }
    if (realm.username !== "" || realm.password !== "") {
      throw new AuthChallengeError("token realm carries credentials", { status });
    }
    if (this.#origin.protocol === "https:" && realm.protocol === "http:") {
      throw new AuthChallengeError("token realm downgrades HTTPS to HTTP", { status });
    }
    return { kind: "bearer", realm, service: challenge.params.service };
  }

  /** Resolves the dialed host's credential once; a failure is not remembered. */
  async #credentialFor(signal: AbortSignal | undefined): Promise<Credential> {
    if (this.#credential === undefined) {
      const pending = this.#credentials.get(this.#registryHost, signal);
      this.#credential = pending;
      pending.catch(() => {
        if (this.#credential === pending) this.#credential = undefined;
      });
    }
    const credential = await this.#credential;
    if (credential.identityToken) {
      throw new CredentialError(
        "identity tokens are not supported; log in with a password or token",
      );
    }
    return credential;
  }

  /**
   * Gets a new token for an entry; concurrent callers share one token request. A shared
   * request aborted by its first caller is started again for a caller that is still running.
   */
  async #acquire(wanted: WantedToken, signal: AbortSignal | undefined): Promise<CachedToken> {
    const key = [wanted.action, wanted.repository, ...wanted.extraScopes].join("\u0000");
    while (true) {
      let pending = this.#inflight.get(key);
      if (pending === undefined) {
        pending = this.#exchange(wanted, signal);
        this.#inflight.set(key, pending);
        const clear = () => {
          if (this.#inflight.get(key) === pending) this.#inflight.delete(key);
        };
        pending.then(clear, clear);
      }
      try {
        return await pending;
      } catch (err) {
        if (isAbortError(err) && signal?.aborted !== true) continue;
        throw err;
      }
    }
  }

  async #exchange(wanted: WantedToken, signal: AbortSignal | undefined): Promise<CachedToken> {
    const { repository, action, challenge, extraScopes, credential } = wanted;
    const own = repository === "" ? [] : [repositoryScope(repository, action)];
    const scopes = mergeScopes([...own, ...extraScopes]);
    const sameHost = challenge.realm.hostname === this.#origin.hostname;
    this.#stats.tokenRequests++;
    const answer = await requestToken({
      fetch: sameHost ? this.#fetch : this.#external,
      realm: challenge.realm,
      ...(challenge.service === undefined ? {} : { service: challenge.service }),
      scopes,
      credential,
      access: action === "pull" ? "pull" : "pull,push",
      offOrigin: challenge.realm.origin !== this.#origin.origin,
      ...(signal === undefined ? {} : { signal }),
    });
    return this.#cache.set(repository, action, answer.token, answer.expiresIn);
  }
}

/** True when `scopes` name a repository other than `repository`. */
function reachesOtherRepositories(scopes: readonly string[], repository: string): boolean {
  const own = repositoryScope(repository, "pull").replace(/pull$/, "");
  return mergeScopes(scopes).some((scope) =>
    scope.startsWith("repository:") && !scope.startsWith(own)
  );
}

function hasBasic(credential: Credential): boolean {
  return Boolean(credential.username || credential.password);
}
