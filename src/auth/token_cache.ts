/**
 * The bearer token cache: at most two entries per repository (pull, push), reused while the
 * monotonic time since acquisition is below the lifetime minus a margin.
 *
 * @module
 */
import { type Clock, systemClock } from "../transport/clock.ts";
import type { ScopeAction } from "./scope.ts";

/** The lifetime assumed when the token endpoint states no `expires_in`: 60 s. */
export const DEFAULT_TOKEN_LIFETIME_MS = 60_000;

/** The reuse margin of a token whose lifetime is at least twice as long: 30 s. */
export const TOKEN_REUSE_MARGIN_MS = 30_000;

/** A token held by the cache. */
export interface CachedToken {
  /** The bearer token. */
  readonly token: string;
  /** Monotonic time of acquisition (the clock's `now()`). */
  readonly acquiredAt: number;
  /** The stated lifetime (or the default) in milliseconds. */
  readonly lifetimeMs: number;
  /** True once a request carrying this token was answered with anything but 401 or 403. */
  proven: boolean;
}

/**
 * The reuse margin of a lifetime: 30 s, or half the lifetime when that is shorter.
 *
 * @example
 * ```ts
 * import { reuseMarginMs } from "./token_cache.ts";
 * console.log(reuseMarginMs(300_000), reuseMarginMs(20_000)); // 30000 10000
 * ```
 */
export function reuseMarginMs(lifetimeMs: number): number {
  return Math.min(TOKEN_REUSE_MARGIN_MS, lifetimeMs / 2);
}

/**
 * The lifetime in milliseconds of a token endpoint's `expires_in` (seconds): the stated value
 * when it is a positive finite number, else the 60 s default. `issued_at` is never consulted.
 *
 * @example
 * ```ts
 * import { tokenLifetimeMs } from "./token_cache.ts";
 * console.log(tokenLifetimeMs(300), tokenLifetimeMs(undefined), tokenLifetimeMs("x")); // 300000 60000 60000
 * ```
 */
export function tokenLifetimeMs(expiresIn: unknown): number {
  return typeof expiresIn === "number" && Number.isFinite(expiresIn) && expiresIn > 0
    ? expiresIn * 1000
    : DEFAULT_TOKEN_LIFETIME_MS;
}

/** Options of {@linkcode TokenCache}. */
export interface TokenCacheOptions {
  /** Monotonic time source; tests pass a fake one. */
  clock?: Clock;
  /** Repositories kept before the least recently used is dropped (default 1024). */
  maxRepositories?: number;
}

type Entries = Partial<Record<ScopeAction, CachedToken>>;

/**
 * Bearer tokens per repository and scope entry. A token is usable while
 * `now − acquiredAt < lifetime − margin` (see {@linkcode reuseMarginMs}).
 *
 * @example Reusing a token until its margin
 * ```ts
 * import { TokenCache } from "./token_cache.ts";
 * const cache = new TokenCache();
 * cache.set("org/data", "pull", "t0k3n", 300);
 * console.log(cache.get("org/data", "pull")?.token); // "t0k3n"
 * console.log(cache.get("org/data", "push")); // undefined
 * ```
 */
export class TokenCache {
  readonly #clock: Clock;
  readonly #max: number;
  readonly #repositories = new Map<string, Entries>();

  /** Creates an empty cache. */
  constructor(options: TokenCacheOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#max = options.maxRepositories ?? 1024;
    if (!Number.isSafeInteger(this.#max) || this.#max < 1) {
      throw new RangeError(
        `token cache: maxRepositories must be a positive integer, not ${this.#max}`,
      );
    }
  }

  /** The usable token of an entry, or `undefined` when there is none or it is past its margin. */
  get(repository: string, action: ScopeAction): CachedToken | undefined {
    const entry = this.peek(repository, action);
    return entry !== undefined && this.usable(entry) ? entry : undefined;
  }

  /** The token of an entry whether or not it is still usable. */
  peek(repository: string, action: ScopeAction): CachedToken | undefined {
    const entries = this.#repositories.get(repository);
    if (entries === undefined) return undefined;
    // Refresh recency.
    this.#repositories.delete(repository);
    this.#repositories.set(repository, entries);
    return entries[action];
  }

  /** Stores a token acquired now; `expiresIn` is the endpoint's `expires_in` in seconds. */
  set(repository: string, action: ScopeAction, token: string, expiresIn?: unknown): CachedToken {
    const entry: CachedToken = {
      token,
      acquiredAt: this.#clock.now(),
      lifetimeMs: tokenLifetimeMs(expiresIn),
      proven: false,
    };
    const entries = this.#repositories.get(repository) ?? {};
    entries[action] = entry;
    this.#repositories.delete(repository);
    this.#repositories.set(repository, entries);
    while (this.#repositories.size > this.#max) {
      const oldest = this.#repositories.keys().next().value as string;
      this.#repositories.delete(oldest);
    }
    return entry;
  }

  /** Drops an entry, only if it still holds `token` when one is given. */
  delete(repository: string, action: ScopeAction, token?: string): void {
    const entries = this.#repositories.get(repository);
    if (entries === undefined) return;
    if (token !== undefined && entries[action]?.token !== token) return;
    delete entries[action];
    if (entries.pull === undefined && entries.push === undefined) {
      this.#repositories.delete(repository);
    }
  }

  /** Whether `entry` may still be presented: elapsed < lifetime − margin. */
  usable(entry: CachedToken): boolean {
    return this.#clock.now() - entry.acquiredAt <
      entry.lifetimeMs - reuseMarginMs(entry.lifetimeMs);
  }

  /** Milliseconds until the stated lifetime of `entry` ends (negative once it has). */
  remainingMs(entry: CachedToken): number {
    return entry.acquiredAt + entry.lifetimeMs - this.#clock.now();
  }

  /** How many entries a repository holds (0, 1 or 2). */
  entryCount(repository: string): number {
    const entries = this.#repositories.get(repository);
    return entries === undefined ? 0 : Object.values(entries).filter((e) => e !== undefined).length;
  }

  /** How many repositories hold at least one entry. */
  get repositoryCount(): number {
    return this.#repositories.size;
  }
}
