/**
 * The runtime's own HTTP client as the download path of `HttpTransport`, where the runtime
 * offers a closable HTTP/1.1 client (Deno; elsewhere there is none and `node:http` carries
 * everything), and one exchange on it: the answer's body relayed with mapped errors, and the
 * request's signal wired to it by a listener of our own, so an abort reaches a body in flight
 * however long ago the runtime's request and response objects were collected.
 *
 * @module
 */
import { relayBody } from "../byob_body.ts";
import { withBody } from "../response_body.ts";
import { connectError, readError } from "../failure.ts";
import { signalOf } from "../request_signal.ts";

/**
 * Sends a body-less `request` through `platform` with `headers` (identity encoding forced) and
 * resolves with its answer, whose body errors with the signal's reason when the signal fires.
 *
 * @example
 * ```ts ignore
 * const response = await platformExchange(platform, request, { accept: "*\/*" });
 * ```
 */
export async function platformExchange(
  platform: PlatformFetch,
  request: Request,
  headers: Record<string, string>,
): Promise<Response> {
  const signal = signalOf(request);
  // Without it the runtime's client would ask for gzip and decode the answer behind our back.
  headers["accept-encoding"] = "identity";
  // The runtime follows our signal with an internal hook that dies with its own request
  // object; an event listener is kept alive by the signal itself and so always fires.
  let body: { cancel(reason?: unknown): Promise<void> } | undefined;
  const onAbort = () => body?.cancel(signal.reason).catch(() => {});
  signal.addEventListener("abort", onAbort, { once: true });
  const done = () => signal.removeEventListener("abort", onAbort);
  let response: Response;
  try {
    response = await platform.fetch(request.url, { method: request.method, headers, signal });
  } catch (err) {
    done();
    if (signal.aborted) throw signal.reason;
    throw connectError(err);
  }
  const source = response.body;
  if (source === null) {
    done();
    return response;
  }
  body = source;
  if (signal.aborted) onAbort();
  const relayed = relayBody(source, {
    // Read failures become the retryable NetworkError (the runtime rejects with TypeError), an
    // abort the signal's reason.
    read: async (next) => {
      try {
        const result = await next();
        // A cancelled read ends as if the body were complete: the abort must not look so.
        if (signal.aborted) throw signal.reason;
        if (result.done) done();
        return result;
      } catch (err) {
        done();
        if (err === signal.reason) throw err;
        throw signal.aborted ? signal.reason : readError(err);
      }
    },
    // Once read, the stream is locked: its reader is what an abort cancels.
    opened: (reader) => {
      body = reader;
    },
    cancel: done,
  });
  return withBody(response, relayed, request.url);
}

/** A runtime HTTP client: a pool of its own and a way to release it. */
export interface PlatformFetch {
  /** Sends `input` with `init` through the client's pool; never follows redirects. */
  fetch(input: string, init: RequestInit): Promise<Response>;
  /** Closes the client's pooled connections; a later request opens a new pool. */
  close(): void;
}

/** Options of {@linkcode platformFetch}. */
export interface PlatformFetchOptions {
  /** Extra PEM roots, in addition to the runtime's. */
  caCerts?: string[];
  /** Idle connections kept per host. */
  maxIdlePerHost?: number;
}

interface DenoHttpApi {
  createHttpClient(options: {
    caCerts?: string[];
    http2?: boolean;
    http1?: boolean;
    poolMaxIdlePerHost?: number;
  }): { close(): void };
}

/**
 * The runtime's `fetch` on a client of its own (HTTP/1.1 only: Deno's HTTP/2 downloads are
 * several times slower here), or `undefined` when the runtime has no such client. The client is
 * created on the first request.
 *
 * @example
 * ```ts
 * import { platformFetch } from "./platform_exchange.ts";
 * const platform = platformFetch({});
 * platform?.close();
 * ```
 */
export function platformFetch(options: PlatformFetchOptions): PlatformFetch | undefined {
  const deno = (globalThis as { Deno?: Partial<DenoHttpApi> }).Deno;
  if (typeof deno?.createHttpClient !== "function") return undefined;
  const api = deno as DenoHttpApi;
  let client: { close(): void } | undefined;
  return {
    fetch(input, init) {
      client ??= api.createHttpClient({
        http2: false,
        http1: true,
        ...(options.caCerts?.length ? { caCerts: options.caCerts } : {}),
        ...(options.maxIdlePerHost === undefined
          ? {}
          : { poolMaxIdlePerHost: options.maxIdlePerHost }),
      });
      return fetch(input, { ...init, redirect: "manual", client } as RequestInit);
    },
    close() {
      const current = client;
      client = undefined;
      try {
        current?.close();
      } catch { /* already closed */ }
    },
  };
}
