/**
 * Helpers of the auth tests that run against the real registry: a counting transport, a token
 * registry pair, small raw request sequences, and a credential helper placed on PATH.
 *
 * @module
 */
import { causeChain } from "../../src/errors/find_error.ts";
import { resolveLocation, withDigestQuery } from "../../src/registry/location.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { type RegistryFixture, startRegistry } from "../fixtures/registry.ts";
import { withPathEntry } from "../fixtures/path_env.ts";
import { tempDir } from "../fixtures/tmp.ts";
import {
  startTokenServer,
  type TokenServer,
  type TokenServerOptions,
} from "../fixtures/token_server.ts";

/** One request seen by {@linkcode countingTransport}. */
export interface SeenRequest {
  method: string;
  path: string;
  authorization: string | null;
  status: number;
}

/** A real `HttpTransport` that logs every request it sends. */
export function countingTransport(): {
  fetch: Fetch;
  log: SeenRequest[];
  count(method?: string, path?: RegExp): number;
  close(): void;
  [Symbol.dispose](): void;
} {
  const transport = new HttpTransport();
  const log: SeenRequest[] = [];
  const fetch: Fetch = async (request) => {
    const entry: SeenRequest = {
      method: request.method,
      path: new URL(request.url).pathname,
      authorization: request.headers.get("authorization"),
      status: 0,
    };
    log.push(entry);
    const response = await transport.fetch(request);
    entry.status = response.status;
    return response;
  };
  const close = () => transport.close();
  return {
    fetch,
    log,
    count: (method?: string, path?: RegExp) =>
      log.filter((r) =>
        (method === undefined || r.method === method) && (!path || path.test(r.path))
      )
        .length,
    close,
    [Symbol.dispose]: close,
  };
}

/** A token server and a registry that trusts it; disposed together. */
export async function startTokenRegistry(options: TokenServerOptions = {}): Promise<{
  tokens: TokenServer;
  registry: RegistryFixture;
  [Symbol.asyncDispose](): Promise<void>;
}> {
  const tokens = await startTokenServer({ users: { alice: "pw" }, ...options });
  let registry: RegistryFixture;
  try {
    registry = await startRegistry({
      token: {
        realm: tokens.realm,
        service: tokens.service,
        issuer: tokens.issuer,
        rootCertBundle: tokens.rootCertBundle,
      },
    });
  } catch (err) {
    await tokens.stop();
    throw err;
  }
  return {
    tokens,
    registry,
    async [Symbol.asyncDispose]() {
      await registry.stop();
      await tokens.stop();
    },
  };
}

/** Every message in an error's cause chain, joined. */
export function allMessages(err: unknown): string {
  return [...causeChain(err)]
    .map((e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e)))
    .join(" | ") + ` | ${String(err)}`;
}

/** POST + monolithic PUT of `bytes` through `fetch`; returns the digest. Throws on a status. */
export async function uploadBlob(
  fetch: Fetch,
  base: string,
  repository: string,
  bytes: Uint8Array,
): Promise<string> {
  const digest = sha256Digest(bytes);
  const post = await fetch(
    new Request(`${base}/v2/${repository}/blobs/uploads/`, { method: "POST" }),
  );
  await post.body?.cancel();
  if (post.status !== 202) throw new Error(`POST: ${post.status}`);
  const location = resolveLocation(post.headers.get("location"), new URL(base), "POST");
  const put = await fetch(blobPut(withDigestQuery(location, digest), bytes));
  await put.body?.cancel();
  if (put.status !== 201) throw new Error(`PUT: ${put.status}`);
  return digest;
}

/** A monolithic blob PUT with an explicit Content-Length. */
export function blobPut(url: URL | string, bytes: Uint8Array): Request {
  return new Request(url, {
    method: "PUT",
    body: bytes as Uint8Array<ArrayBuffer>,
    headers: {
      "content-type": "application/octet-stream",
      "content-length": String(bytes.byteLength),
    },
  });
}

/**
 * Puts `docker-credential-ocitest` on PATH while `fn` runs. It answers `alice`/`pw` for every
 * server and logs the server URLs it was asked for.
 */
export async function withCredentialHelper(
  fn: (asked: () => Promise<string[]>) => Promise<void>,
): Promise<void> {
  await using dir = await tempDir("ocipart-helper-");
  const logFile = `${dir.path}/asked`;
  await Deno.writeTextFile(
    `${dir.path}/docker-credential-ocitest`,
    `#!/bin/sh
[ "$1" = "get" ] || exit 3
server=$(cat)
printf '%s\\n' "$server" >> '${logFile}'
printf '{"ServerURL":"%s","Username":"alice","Secret":"pw"}' "$server"
`,
    { mode: 0o755 },
  );
  await withPathEntry(dir.path, () =>
    fn(async () => {
      try {
        return (await Deno.readTextFile(logFile)).split("\n").filter((l) => l !== "");
      } catch {
        return [];
      }
    }));
}
