/**
 * The registry operations of one repository, the one request layer under both clients: every
 * request is sent here, its redirects followed under an explicit policy (a bounded number of
 * hops, per-hop routing: the registry origin through the registry transport, every other origin
 * through the storage transport without credential headers, for the rest of a chain once it left
 * the origin; strict rules for redirects of writes), and every transport failure is classified
 * here.
 *
 * @module
 */
import { LocationError, RedirectError } from "../errors/kinds.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import { discard } from "../registry/discard.ts";
import { blobUrl } from "../registry/endpoints.ts";
import { resolveLocation } from "../registry/location.ts";
import { expectStatus } from "../registry/status.ts";
import type { Fetch } from "../transport/fetch.ts";
import type { MirrorSet } from "./mirror_reads.ts";
import { BLOB_SPEC_POLICY, type RedirectPolicy } from "./policy.ts";
import { requestWith } from "../transport/request_signal.ts";

/** The redirect statuses that are followed; every other status is returned as is. */
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** The redirect statuses that preserve the method and body. */
const METHOD_PRESERVING: ReadonlySet<number> = new Set([307, 308]);

/** Methods whose redirect may be followed as a read. */
const READ_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD"]);

/**
 * Headers that carry the caller's credentials or browsing context; never sent to an origin
 * other than the trusted one.
 */
export const CROSS_ORIGIN_STRIPPED_HEADERS: readonly string[] = Object.freeze([
  "authorization",
  "proxy-authorization",
  "cookie",
  "referer",
]);

/** A request the follower may send more than once (one time per hop). */
export interface RedirectableRequest {
  /** The HTTP method, upper case. */
  method: string;
  /** The first target. */
  url: URL;
  /** Request headers; a body's `content-length` belongs here. */
  headers?: HeadersInit;
  /**
   * Creates the body for one hop. Called once for the first hop and once more per write
   * redirect that is followed. Omit for a request without a body.
   */
  body?: () => BodyInit | null;
  /**
   * False when `body` can only be produced once (a one-shot stream): a redirect that would
   * re-send it is then refused. Defaults to true.
   */
  replayable?: boolean;
  /** Aborts the request on any hop. */
  signal?: AbortSignal;
}

/** Options of {@linkcode followRedirects}. */
export interface FollowRedirectsOptions {
  /** The trusted origin: requests to it go through `transport` with their headers intact. */
  origin: URL;
  /** The transport for the trusted origin (it may add credentials). */
  transport: Fetch;
  /**
   * The transport for every other origin. Requests routed to it never carry Authorization,
   * Proxy-Authorization, Cookie or Referer. It owns the policy about which peers are allowed.
   */
  storageTransport: Fetch;
  /** The fixed operation name used in error messages, e.g. `"GET blob"`. */
  operation: string;
  /** How many redirects are followed at most; the next one is refused. Defaults to 10. */
  maxRedirects?: number;
  /**
   * Whether a redirect that re-issues a write (any method but GET and HEAD) may be followed.
   * When false every such redirect is refused before the target is contacted. Defaults to true.
   */
  writeRedirects?: boolean;
}

/** What {@linkcode followRedirects} returns: the final response and where it came from. */
export interface FollowedResponse {
  /** The final, non-redirect response. Its body is unread. */
  response: Response;
  /** The URL that answered with `response`: the base for a relative Location it carries. */
  url: URL;
  /** True when the chain left the trusted origin (the response came through `storageTransport`). */
  offOrigin: boolean;
  /** How many redirects were followed. */
  redirects: number;
}

/**
 * Sends `request` through the transport of its origin and follows redirects:
 *
 * - Hops go through `transport` (which may add credentials) only while the chain has stayed on
 *   the trusted origin. From the first hop to any other origin on, every hop (a hop back to
 *   the trusted origin included) goes through `storageTransport` with the credential-bearing
 *   headers removed: a server outside the origin chose that target, and credentials must not
 *   follow its choice. The routing happens before either transport runs, so an authenticating
 *   transport never sees a request of a chain that left the origin.
 * - Reads (GET, HEAD) follow 301, 302, 303, 307 and 308 with their method kept.
 * - A write follows only 307 or 308, only when `writeRedirects` is not false, and only with a
 *   replayable body; otherwise the chain stops with a `RedirectError` before the target is
 *   contacted.
 * - Targets must be HTTP(S), must not carry credentials and must not downgrade HTTPS to HTTP.
 * - After `maxRedirects` redirects the next one is refused.
 *
 * Every failure of the policy is a terminal `RedirectError` whose message never contains the
 * location; a `LocationError` with the broken rule is its `cause`. Redirect response bodies are
 * cancelled before the next hop.
 *
 * @example Following a storage redirect
 * ```ts
 * import { followRedirects } from "./repository.ts";
 * const registry = (r: Request) =>
 *   Promise.resolve(
 *     new Response(null, { status: 307, headers: { location: "https://cdn.example/blob" } }),
 *   );
 * const storage = (r: Request) =>
 *   Promise.resolve(new Response(`auth=${r.headers.has("authorization")}`));
 * const { response, offOrigin } = await followRedirects(
 *   {
 *     method: "GET",
 *     url: new URL("https://registry.example/v2/a/blobs/sha256:00"),
 *     headers: { authorization: "Bearer t" },
 *   },
 *   {
 *     origin: new URL("https://registry.example"),
 *     transport: registry,
 *     storageTransport: storage,
 *     operation: "GET blob",
 *   },
 * );
 * console.log(offOrigin, await response.text()); // true "auth=false"
 * ```
 */
export async function followRedirects(
  request: RedirectableRequest,
  options: FollowRedirectsOptions,
): Promise<FollowedResponse> {
  const maxRedirects = options.maxRedirects ?? BLOB_SPEC_POLICY.redirects.readHops;
  if (!Number.isSafeInteger(maxRedirects) || maxRedirects < 0) {
    throw new RangeError(
      `follow redirects: maxRedirects must be a non-negative integer, not ${maxRedirects}`,
    );
  }
  const operation = options.operation;
  const method = request.method.toUpperCase();
  const isRead = READ_METHODS.has(method);
  const origin = options.origin.origin;
  const headers = new Headers(request.headers);
  let url = new URL(request.url);
  // Once the chain has left the trusted origin it never gets credentials back.
  let leftOrigin = false;
  let bodiesMade = 0;

  for (let redirects = 0;; redirects++) {
    const offOrigin = url.origin !== origin;
    if (offOrigin && !leftOrigin) {
      for (const name of CROSS_ORIGIN_STRIPPED_HEADERS) headers.delete(name);
      leftOrigin = true;
    }
    let body: BodyInit | null = null;
    if (request.body !== undefined) {
      body = request.body();
      bodiesMade++;
    }
    const init: RequestInit & { duplex?: "half" } = {
      method,
      headers,
      body,
      redirect: "manual",
      signal: request.signal,
    };
    if (body instanceof ReadableStream) init.duplex = "half";
    const transport = leftOrigin ? options.storageTransport : options.transport;
    const response = await transport(requestWith(url, init));
    if (!REDIRECT_STATUSES.has(response.status)) {
      return { response, url, offOrigin: leftOrigin, redirects };
    }
    // A redirect: decide everything before the target is contacted.
    await discard(response);
    if (redirects >= maxRedirects) {
      throw new RedirectError(`${operation}: too many redirects`, { status: response.status });
    }
    if (!isRead) {
      if (options.writeRedirects === false) {
        throw new RedirectError(`${operation}: write redirects are disabled`, {
          status: response.status,
        });
      }
      if (!METHOD_PRESERVING.has(response.status)) {
        throw new RedirectError(
          `${operation}: write redirect with status ${response.status} would change the method`,
          { status: response.status },
        );
      }
      if (request.body !== undefined && request.replayable === false && bodiesMade > 0) {
        throw new RedirectError(`${operation}: write redirect needs a replayable body`, {
          status: response.status,
        });
      }
    }
    let next: URL;
    try {
      next = resolveLocation(response.headers.get("location"), url, `${operation} redirect`);
    } catch (err) {
      if (!(err instanceof LocationError)) throw err;
      throw new RedirectError(`${operation}: redirect target rejected (${err.rule})`, {
        cause: err,
        status: response.status,
      });
    }
    url = next;
  }
}

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
  /** How redirects are followed (the client's policy). */
  redirects: RedirectPolicy;
  /** Mirrors that blob and manifest reads try first (see `mirror_reads.ts`). Default: none. */
  mirrors?: MirrorSet;
}

/** A response and where it came from. */
export interface RoutedResponse {
  /** The final, non-redirect response; its body is unread. */
  response: Response;
  /** The URL that answered: the base of a relative Location it carries. */
  url: URL;
  /** True when the answer is classified like storage (see the redirect policy). */
  offOrigin: boolean;
}

/**
 * One repository of a registry: blob existence, reads, uploads, mounts and manifests (see
 * `blob_reader.ts`, `uploads.ts` and `manifests.ts`), all sent through {@linkcode send}.
 *
 * @example Checking whether a blob exists
 * ```ts
 * import { RemoteRepository } from "./repository.ts";
 * import { DEFAULT_POLICY } from "./policy.ts";
 * const repo = new RemoteRepository({
 *   origin: new URL("http://127.0.0.1:5000/"),
 *   name: "org/data",
 *   redirects: DEFAULT_POLICY.redirects,
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
        writeRedirects: options.redirects.writes === "follow",
        maxRedirects: read ? options.redirects.readHops : undefined,
      });
    } catch (err) {
      throw asNetworkFailure(operation, err, request.signal);
    }
    const storageLike = read && options.redirects.targetsAreStorage &&
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
