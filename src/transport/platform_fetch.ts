/**
 * The runtime's own `fetch` as the download path of `HttpTransport`, where the runtime offers a
 * closable HTTP/1.1 client (Deno). Elsewhere there is none and `node:http` carries everything.
 *
 * @module
 */

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
 * import { platformFetch } from "./platform_fetch.ts";
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
