/**
 * Checking that a registry accepts the client's credential, before a login saves it.
 *
 * @module
 */
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { discard } from "../registry/discard.ts";
import { expectStatus } from "../registry/status.ts";
import type { ClientStack } from "../remote/client_stack.ts";
import { RemoteRepository } from "../remote/repository.ts";

const OPERATION = "GET API root";

/**
 * Sends `GET /v2/` to `registry` through the client's authenticating stack, as `docker login`
 * does: a token registry issues a token without repository scope, a basic registry checks the
 * password. A refusal is `UnauthorizedError`; 200 means the credential (or anonymous access,
 * when the registry needs none) is accepted.
 *
 * @throws {TypeError} `registry` is not a registry host (`host[:port]`).
 *
 * @example Checking access (internal)
 * ```ts ignore
 * import { runLoginCheck } from "./login_check.ts";
 * await runLoginCheck(stack, "registry.example", {});
 * ```
 */
export async function runLoginCheck(
  stack: ClientStack,
  registry: string,
  options: { signal?: AbortSignal },
): Promise<void> {
  const origin = stack.origin(registry);
  const route = stack.route(origin, registry);
  const repo = new RemoteRepository({
    origin,
    name: "",
    transport: route.transport,
    storageTransport: route.storageTransport,
    writeRedirects: false,
    readRedirects: 0,
  });
  try {
    const { response } = await repo.send({
      method: "GET",
      url: new URL("/v2/", origin),
      headers: { "accept-encoding": "identity" },
      signal: options.signal,
    }, OPERATION);
    await expectStatus(response, [200], OPERATION);
    await discard(response);
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw attachSentinel(err);
  }
}
