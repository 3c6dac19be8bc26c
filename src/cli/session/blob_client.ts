/**
 * The `BlobClient` of a `blob` command, from the command's session: the blob library performs
 * no authentication, so the CLI gives it a registry transport that does (the credential typed,
 * else the docker configuration), on a connection pool with the session's TLS settings and
 * `--debug` observer; the client itself applies `--limit-rate` and `--stall-timeout`, as the
 * parted client does.
 *
 * @module
 */
import { createAuthFetch, dockerConfigCredentials, staticCredentials } from "../../auth/mod.ts";
import { BlobClient, type BlobClientOptions } from "../../blob/mod.ts";
import { sha256Digest } from "../../../mod.ts";
import { registryOrigin } from "../../parted/mod.ts";
import { DigestMismatchError, NotFoundError, UnauthorizedError } from "../../errors/mod.ts";
import { HttpTransport } from "../../transport/mod.ts";
import type { Session } from "./session.ts";

/** A blob client and what it owns; `using` closes both. */
export interface CommandBlobClient extends Disposable {
  /** The client. */
  readonly client: BlobClient;
  /**
   * Its twin that never reads from a mirror, made on first use (closed with this one): a blob
   * whose bytes through the mirrors did not match is fetched again with it. Undefined when the
   * client reads through no mirror.
   */
  readonly registryOnly: (() => BlobClient) | undefined;
  /**
   * The size the registry states for the blob (HEAD, Content-Length), or undefined when its
   * answer states none (a redirect, a missing header); call after `client.exists`.
   */
  statedSize(digest: string, signal: AbortSignal): Promise<number | undefined>;
  /**
   * The manifest `reference` (a tag or a digest) names, as sent (at most 4 MiB); by digest, it
   * must hash to it. A 404 is `NotFoundError`, a 401 or 403 `UnauthorizedError`.
   */
  manifest(reference: string, signal: AbortSignal): Promise<Uint8Array>;
}

/** The most bytes of a manifest read. */
const MANIFEST_LIMIT = 4 << 20;

// The manifest kinds a one-file artifact comes in: OCI, and Docker's schema 2.
const MANIFEST_ACCEPT = [
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
].join(", ");

/**
 * The blob client of `session` for the registry of `repository` (`host[:port]/name`, checked
 * by the command line), with the blob options `extra` (parallel pull, chunked upload); its
 * pulls read through the session's mirrors unless `mirrors` is false.
 *
 * @example
 * ```ts ignore
 * using blobs = blobClientOf(session, "127.0.0.1:5000/team/data", {});
 * console.log(await blobs.client.exists("127.0.0.1:5000/team/data", digest));
 * ```
 */
export function blobClientOf(
  session: Session,
  repository: string,
  extra: Pick<BlobClientOptions, "parallelPull" | "chunkedUpload">,
  mirrors = true,
): CommandBlobClient {
  const options = session.clientOptions;
  const slash = repository.indexOf("/");
  const registry = repository.slice(0, slash);
  const name = repository.slice(slash + 1);
  const own = options.registries?.[registry];
  const caCerts = own?.caCerts ?? options.caCerts;
  const poolOf = (site: "registry" | "mirror") =>
    new HttpTransport({
      ...(caCerts === undefined ? {} : { caCerts: [...caCerts] }),
      ...(options.insecureTls ? { insecureTls: true } : {}),
      ...(extra.parallelPull ? { maxIdleSocketsPerOrigin: extra.parallelPull.workers } : {}),
      ...(options.onExchange ? { onExchange: options.onExchange } : {}),
      site,
    });
  const pool = poolOf("registry");
  // A mirror's requests come through the client's transport too: on a pool of their own (so
  // `--debug` names them), without the registry's credential.
  const mirrorPool = mirrors && options.mirrors !== undefined ? poolOf("mirror") : undefined;
  let twin: CommandBlobClient | undefined;
  const credentials = options.credential !== undefined
    ? staticCredentials({ ...options.credential })
    : options.credentials ?? dockerConfigCredentials();
  const transport = createAuthFetch({
    registry,
    plainHttp: options.plainHttp === true,
    fetch: pool.fetch,
    credentials,
  });
  const origin = registryOrigin(registry, { plainHttp: options.plainHttp === true });
  const client = new BlobClient({
    transport: mirrorPool === undefined
      ? transport
      : (request) =>
        new URL(request.url).origin === origin.origin
          ? transport(request)
          : mirrorPool.fetch(request),
    plainHttp: options.plainHttp === true,
    ...(caCerts === undefined ? {} : { caCerts: [...caCerts] }),
    ...(options.insecureTls ? { insecureTls: true } : {}),
    ...(options.onExchange ? { onExchange: options.onExchange } : {}),
    ...(options.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: options.stallTimeoutMs }),
    ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
    ...(options.hashThreads === undefined ? {} : { hashThreads: options.hashThreads }),
    ...(mirrors && options.mirrors !== undefined ? { mirrors: options.mirrors } : {}),
    ...extra,
  });
  return {
    client,
    async statedSize(digest, signal) {
      const url = new URL(`/v2/${name}/blobs/${digest}`, origin);
      const response = await transport(
        new Request(url, { method: "HEAD", signal, redirect: "manual" }),
      );
      await response.body?.cancel();
      if (response.status !== 200) return undefined;
      const length = Number(response.headers.get("content-length") ?? "");
      return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
    },
    async manifest(reference, signal) {
      const url = new URL(`/v2/${name}/manifests/${reference}`, origin);
      const response = await transport(
        new Request(url, { headers: { accept: MANIFEST_ACCEPT }, signal, redirect: "manual" }),
      );
      if (response.status !== 200) {
        await response.body?.cancel();
        const message = `GET manifest: status ${response.status}`;
        if (response.status === 404) throw new NotFoundError(message);
        if (response.status === 401 || response.status === 403) {
          throw new UnauthorizedError(message);
        }
        throw new Error(message);
      }
      const bytes = await limitedBytes(response, MANIFEST_LIMIT);
      if (reference.startsWith("sha256:") && sha256Digest(bytes) !== reference) {
        throw new DigestMismatchError("GET manifest: the manifest does not hash to its digest");
      }
      return bytes;
    },
    registryOnly: mirrorPool === undefined
      ? undefined
      : () => (twin ??= blobClientOf(session, repository, extra, false)).client,
    [Symbol.dispose]: () => {
      client.close();
      pool.close();
      mirrorPool?.close();
      twin?.[Symbol.dispose]();
    },
  };
}

/** The body of `response`, refused past `limit` bytes. */
async function limitedBytes(response: Response, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? new ReadableStream<Uint8Array>()) {
    size += chunk.length;
    if (size > limit) {
      await response.body?.cancel().catch(() => {});
      throw new Error("GET manifest: the manifest is larger than 4 MiB");
    }
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}
