/**
 * The push token of a parted push: renewed before a part when it would expire before the part
 * has arrived, and its stated lifetime for the advice of a part refused after it arrived.
 *
 * @module
 */
import type { Clock } from "../transport/clock.ts";

/** Below this many bytes sent, the push's speed is not known well enough to plan by. */
/**
 * What renews and tells the lifetime of a repository's tokens: the registry's authenticator,
 * as the connection hands it over (never reached around the request path).
 */
export interface TokenSource {
  /** Renews the token of `action` on `repository` unless it lives `minRemainingMs` more. */
  ensureFresh(
    repository: string,
    action: "push",
    minRemainingMs: number,
    signal: AbortSignal,
  ): Promise<unknown>;
  /** The cached tokens. */
  readonly tokenCache: {
    peek(repository: string, action: "push"): { lifetimeMs?: number } | undefined;
  };
}

const MIN_MEASURED_BYTES = 1024 * 1024;

/** A part is planned to take this many times what the measured speed says. */
const UPLOAD_TIME_MARGIN = 2;

/**
 * The push token of one push to `repository`, with `uploads` parts uploading at once.
 *
 * @example
 * ```ts ignore
 * const tokens = new PushTokens(connection.tokens, "org/data", systemClock, 8);
 * await tokens.renewFor(part.size, progress.snapshot.wireBytes, signal); // before a part PUT
 * ```
 */
export class PushTokens {
  readonly #authenticator: TokenSource;
  readonly #repository: string;
  readonly #clock: Clock;
  readonly #uploads: number;
  readonly #started: number;

  /** Starts measuring the push's speed now. */
  constructor(
    authenticator: TokenSource,
    repository: string,
    clock: Clock,
    uploads: number,
  ) {
    this.#authenticator = authenticator;
    this.#repository = repository;
    this.#clock = clock;
    this.#uploads = Math.max(1, uploads);
    this.#started = clock.now();
  }

  /**
   * Before a part of `partBytes` is sent, with `sentBytes` on the wire so far: renews the token
   * when it would expire within twice the time the part takes at the speed of one upload (the
   * push's throughput shared by its concurrent uploads). A registry, or a proxy that reads
   * whole bodies before passing them on, may check the token only once the body is in.
   */
  async renewFor(partBytes: number, sentBytes: number, signal: AbortSignal): Promise<void> {
    const elapsed = this.#clock.now() - this.#started;
    if (sentBytes < MIN_MEASURED_BYTES || elapsed <= 0) return;
    const oneUpload = sentBytes / elapsed / this.#uploads;
    const expectedMs = (partBytes / oneUpload) * UPLOAD_TIME_MARGIN;
    await this.#authenticator.ensureFresh(this.#repository, "push", expectedMs, signal);
  }

  /** The stated lifetime (ms) of the cached push token, if there is one. */
  lifetimeMs(): number | undefined {
    return this.#authenticator.tokenCache.peek(this.#repository, "push")?.lifetimeMs;
  }
}
