/**
 * The registry operations of one repository, the one request layer under both clients: every
 * request is routed here (registry origin through the registry transport, every other origin
 * through the storage transport without credential headers), and every transport failure is
 * classified here.
 *
 * @module
 */
import { asNetworkFailure } from "../errors/network_failure.ts";
import { discard } from "../registry/discard.ts";
import { blobUrl } from "../registry/endpoints.ts";
import { expectStatus } from "../registry/status.ts";
import type { Fetch } from "../transport/fetch.ts";
import {
  DEFAULT_MAX_REDIRECTS,
  type FollowedResponse,
  followRedirects,
  type RedirectableRequest,
} from "./follow_redirects.ts";
import type { MirrorSet } from "./mirror_reads.ts";

/** Where a repository is and how its requests travel. */
export interface RemoteRepositoryOptions {
  /** The registry origin, e.g. `https://ghcr.io/`. */
  origin: URL;
  /** The repository path inside the registry. */
  name: string;
  /** Transport for the registry origin; it may authenticate. */
  transport: Fetch;
  /** Transport for every other origin; it owns the peer policy. */
  storageTransport: Fetch;
  /** Whether a 307/308 redirect of a write may be followed. Default: true. */
  writeRedirects?: boolean;
  /** How many redirects a blob read follows at most. Default: 10. */
  readRedirects?: number;
  /**
   * Classify every redirect target of a blob read like storage (its 401/403/404/410 is
   * retryable and matches no sentinel), even one on the registry's origin. Default: false
   * (only other origins).
   */
  redirectTargetsAreStorage?: boolean;
  /** Mirrors that blob and manifest reads try first (see `mirror_reads.ts`). Default: none. */
  mirrors?: MirrorSet;
}

/** A response and where it came from. */
export interface RoutedResponse {
  /** The final, non-redirect response; its body is unread. */
  response: Response;
  /** The URL that answered: the base of a relative Location it carries. */
  url: URL;
  /** True when the answer is classified like storage (see the options). */
  offOrigin: boolean;
}

/**
 * One repository of a registry: blob existence, reads, uploads, mounts and manifests (see
 * `blob_reads.ts`, `uploads.ts` and `manifests.ts`), all sent through {@linkcode send}.
 *
 * @example Checking whether a blob exists
 * ```ts
 * import { RemoteRepository } from "./repository.ts";
 * const repo = new RemoteRepository({
 *   origin: new URL("http://127.0.0.1:5000/"),
 *   name: "org/data",
 *   transport: () => Promise.resolve(new Response(null, { status: 404 })),
 *   storageTransport: () => Promise.reject(new TypeError("unused")),
 * });
 * console.log(await repo.exists("sha256:" + "0".repeat(64))); // false
 * ```
 */
export class RemoteRepository {
  /** The registry origin. */
  readonly origin: URL;
  /** The repository path. */
  readonly name: string;
  /** The mirrors reads try before this repository, if any. */
  readonly mirrors: MirrorSet | undefined;
  readonly #options: RemoteRepositoryOptions;

  /** Creates the operations of one repository; nothing is sent until a method is called. */
  constructor(options: RemoteRepositoryOptions) {
    this.origin = options.origin;
    this.name = options.name;
    this.mirrors = options.mirrors;
    this.#options = options;
  }

  /**
   * Sends one request of `operation`, following redirects by the client's rules: reads (GET,
   * HEAD) up to the read limit, writes only when write redirects are allowed. A failure that
   * no layer classified becomes a retryable `NetworkError`; an abort, the signal's reason.
   */
  async send(request: RedirectableRequest, operation: string): Promise<RoutedResponse> {
    const read = request.method === "GET" || request.method === "HEAD";
    const options = this.#options;
    let followed: FollowedResponse;
    try {
      followed = await followRedirects(request, {
        origin: this.origin,
        transport: options.transport,
        storageTransport: options.storageTransport,
        operation,
        writeRedirects: options.writeRedirects ?? true,
        maxRedirects: read ? options.readRedirects ?? DEFAULT_MAX_REDIRECTS : undefined,
      });
    } catch (err) {
      throw asNetworkFailure(operation, err, request.signal);
    }
    const storageLike = read && options.redirectTargetsAreStorage === true &&
      followed.redirects > 0;
    return {
      response: followed.response,
      url: followed.url,
      offOrigin: followed.offOrigin || storageLike,
    };
  }

  /**
   * HEAD blob: true when present (200), false when the registry origin answers 404. Redirects
   * are followed; an off-origin 404 is an error (retryable).
   */
  async exists(digest: string, signal?: AbortSignal): Promise<boolean> {
    const operation = "HEAD blob";
    const { response, offOrigin } = await this.send({
      method: "HEAD",
      url: blobUrl(this.origin, this.name, digest),
      headers: { "accept-encoding": "identity" },
      signal,
    }, operation);
    if (response.status === 404 && !offOrigin) {
      await discard(response);
      return false;
    }
    await expectStatus(response, [200], operation, { offOrigin });
    await discard(response);
    return true;
  }
}
