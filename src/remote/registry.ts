/**
 * The operations of a registry that belong to no blob or manifest: the API root (does the
 * registry accept the client's credential?) and a repository's tag list. A session hands them
 * out (`session.ts`); their requests go through a `RemoteRepository` like every other.
 *
 * @module
 */
import { attachSentinel } from "../errors/attach_sentinel.ts";
import { discard } from "../registry/discard.ts";
import { tagsUrl } from "../registry/endpoints.ts";
import { ProtocolError } from "../errors/kinds.ts";
import { expectStatus, readBoundedBody } from "../registry/status.ts";
import type { RemoteRepository } from "./repository.ts";

const ROOT = "GET API root";
const TAGS = "GET tags";
/** The most bytes of a tag list read. */
const MAX_TAG_LIST_BYTES = 4 * 1024 * 1024;

/**
 * One registry's own operations. `root` sends its requests on the registry origin and follows
 * no redirect; `repository` names the repository of a tag list.
 *
 * @example Asking a registry (internal)
 * ```ts ignore
 * const registry = session.registry("registry.example");
 * await registry.checkLogin(signal);
 * ```
 */
export class RemoteRegistry {
  readonly #root: RemoteRepository;
  readonly #repository: (name: string) => RemoteRepository;

  /** A registry whose API root is asked through `root` and tag lists through `repository`. */
  constructor(root: RemoteRepository, repository: (name: string) => RemoteRepository) {
    this.#root = root;
    this.#repository = repository;
  }

  /**
   * Sends `GET /v2/`, as `docker login` does: a token registry issues a token without
   * repository scope, a basic registry checks the password. A refusal is `UnauthorizedError`;
   * 200 means the credential (or anonymous access, when the registry needs none) is accepted.
   */
  async checkLogin(signal?: AbortSignal): Promise<void> {
    const root = this.#root;
    try {
      const { response } = await root.send({
        method: "GET",
        url: new URL("/v2/", root.origin),
        headers: { "accept-encoding": "identity" },
        signal,
      }, ROOT);
      await expectStatus(response, [200], ROOT);
      await discard(response);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw attachSentinel(err);
    }
  }

  /**
   * The first `limit` tags of repository `name` (`GET /v2/<name>/tags/list?n=<limit>`), in the
   * registry's order; a registry that answers more is cut to `limit`.
   */
  async tags(name: string, limit: number, signal?: AbortSignal): Promise<string[]> {
    const repo = this.#repository(name);
    const url = tagsUrl(repo.origin, name);
    url.searchParams.set("n", String(limit));
    try {
      const { response } = await repo.send({
        method: "GET",
        url,
        headers: { "accept-encoding": "identity", accept: "application/json" },
        signal,
      }, TAGS);
      await expectStatus(response, [200], TAGS);
      const tags = parseTags(await readBoundedBody(response, MAX_TAG_LIST_BYTES));
      return tags.slice(0, limit);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw attachSentinel(err);
    }
  }
}

/** The `tags` of a tag list's body; `ProtocolError` when it is not one. */
function parseTags(body: Uint8Array): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new ProtocolError(`${TAGS}: the answer is not a tag list`);
  }
  const tags = (parsed as { tags?: unknown } | null)?.tags ?? [];
  if (!Array.isArray(tags) || tags.some((tag) => typeof tag !== "string")) {
    throw new ProtocolError(`${TAGS}: the answer is not a tag list`);
  }
  return tags;
}
